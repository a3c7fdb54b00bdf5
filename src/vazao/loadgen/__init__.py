"""The load generator behind `vazao bench`: it drives a real OpenAI-compatible server (vLLM, SGLang, TGI,
llama.cpp, Ollama) with a workload and measures the same records and summaries the simulator predicts.

session: one run (`run_bench`, `BenchConfig`, `BenchResult.verdict()`); client, h1, control: the HTTP/1.1
streaming client; load, pacing, loop, cpu: dispatch on the workload's clock; prompts, preflight,
server_facts: what is sent and what the server says about itself; records: the crash-safe JSONL log;
runs, foreign, outputs: runs read back (vazao's, guidellm's, vLLM's) and written; redact: secrets kept
out of every output.

(The repository's top-level bench/ folder holds vazao's own benchmarks; this package is the tool users run.)"""
