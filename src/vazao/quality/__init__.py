"""`vazao quality`: what a format costs on the user's own task. The same prompts go to a reference and a
candidate OpenAI-compatible endpoint with greedy decoding; the answers are compared (exact match, token
agreement) and, where the servers return log-probabilities, so are their next-token distributions. The
result is a quality row (plan/quality.py's shape) that `vazao plan --quality FILE` uses (docs/quality.md).

prompts.py: the prompts file; compare.py: the metrics of one answer pair and their totals; measure.py: the
requests, over loadgen's HTTP/1.1 client; result.py: the measurement, its JSON and its row."""
