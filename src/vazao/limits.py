"""Every bound vazao puts on a number a user gives, in one place, with the reason for each.

Each bound is far above what a real deployment, workload or bill reaches; it exists so that a
typo (1e12 for 1e2) or a hostile input is refused in one line before any work starts, instead of
running for hours or exhausting memory. The simulator's memory grows with what it is asked to
simulate (requests, sequences in flight, replicas), so those bounds are what keep it finite."""

from __future__ import annotations

# -- generic --------------------------------------------------------------------------------------
MAX_COUNT = 10**12  # any count without a tighter bound (identical requests, per-day volume)
MAX_TOKENS = 10**12  # tokens in one bill line: a trillion tokens is a whole pre-training corpus

# -- deployments ----------------------------------------------------------------------------------
MAX_GPUS = 100_000  # accelerators in one deployment: the largest clusters have ~10^5
MAX_PARALLEL = 4096  # tensor- or pipeline-parallel degree
MAX_CONTEXT = 2**27  # tokens per sequence (134M; the longest context windows are ~10M)

# -- the simulator (memory ~ 1 KB per simulated request, ~ KV blocks per replica) ------------------
MAX_SIM_REQUESTS = 10**7  # ~10 minutes and a few GB of records; a 100,000-request run takes seconds
MAX_CONCURRENCY = 10**6  # requests in flight (closed loop): each is a live sequence in memory
# `budget check --simulate` warms up with `concurrency` requests and then measures 100: above 10^4 in
# flight no single deployment admits them, and 10^6 would take half a minute to say so
MAX_BUDGET_CONCURRENCY = 10**4
MAX_RATE = 10**6  # Poisson requests/s; any rate above capacity only grows a queue
MAX_SIM_REPLICAS = 4096  # engines simulated at once, each with its own KV block pool
MAX_SEQS = 10**6  # sequences per engine step (max_num_seqs)
MAX_BATCHED_TOKENS = 2**30  # token budget per engine step
MAX_BLOCK = 2**16  # KV block size in tokens (engines use 16-256)
MAX_QUEUE = 10**7  # waiting requests before an overloaded run stops
MAX_SPEC_K = 64  # speculative draft tokens per step (engines use 1-8)
MAX_VARIANTS = 64  # runs in one --compare (the product of its axes) or one --rate/--concurrency sweep
SEED_LIMIT = 2**32  # seeds are 0 ≤ seed < 2^32: numpy's generators take no other

# -- cost -----------------------------------------------------------------------------------------
MAX_TURNS = 10**5  # turns in one conversation: the bill is computed turn by turn
MAX_CALLS = 10**7  # LLM calls per agent, agents per task
MAX_PARAMS = 1e15  # model parameters for `cost train` (the largest models are ~10^12)
MAX_TRAIN_TOKENS = 1e18  # training tokens (the largest runs are ~10^14)
MAX_USD_PER_HOUR = 10**6  # dollars per GPU-hour (rentals cost 0.1-10)
MAX_DURATION_S = 1e9  # ~31 years: any duration, TTL or SLO limit
MAX_CHARS_PER_TOKEN = 100.0  # prompts run 1-10 characters per token

# The bound check_positive() applies to an option of this name (others: MAX_COUNT).
OPTION_MAX = {
    "count": MAX_GPUS, "gpus": MAX_GPUS, "tp": MAX_PARALLEL, "pp": MAX_PARALLEL,
    "context": MAX_CONTEXT, "max_context": MAX_CONTEXT, "input": MAX_CONTEXT, "output": MAX_CONTEXT,
    "requests": MAX_SIM_REQUESTS, "max_seqs": MAX_SEQS, "max_batched_tokens": MAX_BATCHED_TOKENS,
    "block_size": MAX_BLOCK, "block": MAX_BLOCK, "max_queue": MAX_QUEUE, "spec_k": MAX_SPEC_K,
    "concurrency": MAX_CONCURRENCY, "turns": MAX_TURNS, "calls": MAX_CALLS, "agents": MAX_CALLS,
}
MAX_BENCH_REQUESTS = 10**7  # per bench level; the plan is generated lazily, but a run this long is a typo
