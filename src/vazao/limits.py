"""Every bound vazao puts on what a user gives (a number, a file, a field of a file), in one place, with
the reason for each. No other module defines a MAX_ constant (tests/test_limits.py checks); constants
that bound an algorithm's own work (bisection steps, a search's tries) carry other names where they are used.

Each bound is far above what a real deployment, workload or bill reaches; it exists so that a
typo (1e12 for 1e2) or a hostile input is refused in one line before any work starts, instead of
running for hours or exhausting memory. The simulator's memory grows with what it is asked to
simulate (requests, sequences in flight, replicas), so those bounds are what keep it finite."""

from __future__ import annotations

# -- generic --------------------------------------------------------------------------------------
MAX_COUNT = 10**12  # any count without a tighter bound (identical requests, per-day volume)
# tokens in one bill line, a price tier threshold, a usage count or a budget task's category: a trillion
# tokens is a whole pre-training corpus
MAX_TOKENS = 10**12
MAX_INT = 2**63 - 1  # a JSON/YAML integer: past int64 every consumer (numpy, Decimal context) misbehaves
MAX_LABEL = 256  # an id, name or alias (catalogs, usage logs); no real one comes near this
MAX_NAME = 256  # a model name (catalog, GGUF general.name); longer text is only ever a path
MAX_PATH = 4096  # Linux's PATH_MAX

# -- files and bodies (inputs.py reads every one through these) -----------------------------------
MAX_FILE_BYTES = 64 * 2**20  # configs, workloads, prices, budgets, results: far below this
MAX_LOG_BYTES = 4 * 2**30  # JSONL logs (records, usage, traces, datasets) are read line by line
MAX_LINE_BYTES = 16 * 2**20  # one line of such a log
MAX_DEPTH = 64  # nesting of JSON/YAML containers; real configs nest 3-5 deep
MAX_YAML_NODES = 1_000_000  # nodes after aliases are expanded: an alias bomb is refused, not built
MAX_CONFIG_BYTES = 16 * 2**20  # a config.json is a few kB; a safetensors index a few MB
MAX_WORKLOAD_BYTES = 4 * 2**20  # a workload YAML is a few hundred bytes
MAX_BUDGET_BYTES = 4 * 2**20  # a budget file is a few kB
MAX_PRICES = 100_000  # entries in one prices file (litellm's whole table is ~2,500)
# a `vazao bench --json` run with every record, a guidellm or vLLM result: tens of MB; a quarter GiB
# still parses in seconds and bounded memory
MAX_RESULT_BYTES = 256 * 2**20
MAX_RUN_FILES = 10_000  # result files in one folder handed to validate
MAX_CSV_BYTES = 32 * 2**20  # a measurements CSV (the shared file is 0.6 MB)
MAX_ROWS = 200_000  # rows of one measurements CSV
MAX_CELL = 4096  # characters in one CSV cell (notes run ~400)
MAX_UNIX_TIME_S = 1e11  # a timestamp in seconds (year ~5000); larger is not a timestamp
# -- what a server answers (vazao bench) ----------------------------------------------------------
MAX_RESPONSE_BYTES = 8 * 2**20  # /models, /props, /metrics, tokenize answers: far below this
MAX_SSE_LINE_BYTES = 8 * 2**20  # one server-sent event line; real ones are under a few KiB

# -- a model's architecture (config.json, GGUF metadata, the catalog) -----------------------------
MAX_LAYERS = 10_000
MAX_HIDDEN = 2**20
MAX_HEADS = 2**16
MAX_HEAD_DIM = 2**14
MAX_INTERMEDIATE = 2**22
MAX_VOCAB = 2**24
MAX_MODEL_CONTEXT = 2**30  # a config's declared window (max_position_embeddings, sliding_window)
MAX_EXPERTS = 2**16
MAX_RANK = 2**16  # MLA / LoRA ranks
MAX_CHECKPOINT_BYTES = 2**50  # bytes of a checkpoint's tensors (a PiB)
MAX_GGUF_KEYS = 65_536  # metadata keys of one GGUF header
MAX_GGUF_TENSORS = 1_000_000
MAX_GGUF_KEY_BYTES = 65_535  # the GGUF spec's own limit on key length
MAX_GGUF_STRING_BYTES = 16 * 2**20
MAX_GGUF_ARRAY_DEPTH = 8
MAX_GPUS_PER_NODE = 1024  # a hardware entry's accelerators per node
MAX_SM_COUNT = 4096  # a hardware entry's streaming multiprocessors / compute units (an MI300X has 304)

# -- deployments ----------------------------------------------------------------------------------
MAX_GPUS = 100_000  # accelerators in one deployment: the largest clusters have ~10^5
MAX_PARALLEL = 4096  # tensor- or pipeline-parallel degree
MAX_CONTEXT = 2**27  # tokens per sequence (134M; the longest context windows are ~10M)

# -- workloads and the simulator (memory ~ 1 KB per simulated request, ~ KV blocks per replica) -----
MAX_SIM_REQUESTS = 10**7  # ~10 minutes and a few GB of records; a 100,000-request run takes seconds
MAX_REQUESTS = MAX_SIM_REQUESTS  # requests (or sessions) one workload plans: what one simulation runs
MAX_REQUEST_TOKENS = 2**24  # one prompt or answer of a workload (16.7M tokens: past every model's context)
MAX_RUN_S = 1e7  # a workload's or a budget's duration (~116 days)
MAX_SIGMA = 10.0  # of log(length): e^10 already spans four orders of magnitude either way
MAX_PREFIXES = 1_000  # shared prefixes of one workload
MAX_CONCURRENCY = 10**6  # requests in flight (closed loop): each is a live sequence in memory
# A validated closed-loop row's stated request count is simulated up to this many rounds of its clients: the
# rounds repeat once the clients have settled (the first round's burst weighs 1/64 of the mean or less either
# way), so a row stating a million requests costs seconds, not an hour (validate/predict.py sim_request_count)
MAX_STATED_ROUNDS = 64
# ... and an offered-rate row's stated count up to this many requests: a Poisson run's means settle within a few
# thousand, and 100,000 take seconds where the simulator's own bound (MAX_SIM_REQUESTS) would take minutes a row
MAX_STATED_RATE_REQUESTS = 100_000
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
MAX_VARIANTS = 64  # runs in one compare (the product of its axes), one rate/concurrency sweep or bench levels
SEED_LIMIT = 2**32  # seeds are 0 ≤ seed < 2^32: numpy's legacy generators take no other
MAX_SHAPES = 20_000  # deployment shapes one plan may search (the product of its candidate lists)

# -- cost -----------------------------------------------------------------------------------------
MAX_TURNS = 10**5  # turns in one conversation: the bill is computed turn by turn
MAX_CALLS = 10**7  # LLM calls per agent, agents per task
# calls of one agent billed as a loop (bill agent --history): each call is its own bill line, and a
# history re-sent ten thousand times is already past every context window
MAX_LOOP_CALLS = 10_000
MAX_PARAMS = 1e15  # model parameters (`cost train`, a config's count; the largest models are ~10^12)
MAX_TRAIN_TOKENS = 1e18  # training tokens (the largest runs are ~10^14)
MAX_USD_PER_HOUR = 10**6  # dollars per GPU-hour (rentals cost 0.1-10)
MAX_DURATION_S = 1e9  # ~31 years: any duration, TTL or SLO limit not bounded below
MAX_TASKS = 10_000  # tasks in one budget file
MAX_BUDGET_USD = 10**12  # a task's cost or revenue (Decimal arithmetic past ~10^999999 overflows)
MAX_USD_PER_MTOK = 1_000_000  # an API price per million tokens: no API charges a dollar per token
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
# a bench level's duration: a month; longer is a typo, and asyncio's timers overflow far above it
MAX_BENCH_S = 30 * 86400.0

# -- vazao serve (the local web page) ---------------------------------------------------------------
# one request body: an uploaded bench result or GGUF header is tens of MB at most; the explorer's own
# requests are a few hundred bytes
MAX_SERVE_BODY_BYTES = 64 * 2**20
MAX_SERVE_JOBS = 2  # simulations or plans running at once: each is a process on a shared machine
MAX_SERVE_KEPT_JOBS = 32  # finished jobs whose results the page can still fetch or export

# -- price trends ---------------------------------------------------------------------------------
# a break-even projected month by month: ten years; no cited price trend reaches further, and each
# month compounds the scenario's factors once more
MAX_HORIZON_MONTHS = 120
# a scenario's factor per year (price fall, token growth, token multiplier) and its inverse: Epoch AI's
# fastest measured fall is 900x/year; 10,000 is past any measured rate
MAX_TREND_FACTOR = 10_000
MAX_TREND_SCENARIOS = 256  # scenarios in one trend file

# ---- quality (vazao quality, plan --quality) -------------------------------------------------------------
MAX_QUALITY_ROWS = 100_000  # rows of one quality file (the catalog holds tens)
MAX_QUALITY_PROMPTS = 10_000  # prompts of one `vazao quality` run: each is two requests, one at a time
MAX_QUALITY_COUNTS = 64  # named counts on one quality row (prompts, items, shots …: a handful in practice)
MAX_TOP_LOGPROBS = 20  # alternatives per position: OpenAI's API accepts at most 20

MAX_CLIENT_REACTION_S = 1.0  # SimConfig.client_reaction_s: a second is far beyond any client's reaction time

# ---- engine profile files (--profile) ------------------------------------------------------------------------
MAX_CUSTOM_ALLREDUCE_GPUS = 72  # custom_allreduce_gpus: the largest NVLink domain sold (GB200 NVL72)
# attention_score_bytes: bytes of one materialized score per pair and head; an F32 score written, rewritten and
# read a few times (llama.cpp's graph moves 16) stays far below this
MAX_ATTENTION_SCORE_BYTES = 64
# dequant_pass_tokens: a GEMM's token count above which weights are unpacked first (llama.cpp's was 32); a
# step holds at most a few thousand tokens, so a larger threshold only means "never"
MAX_DEQUANT_PASS_TOKENS = 65_536
# oneshot_allreduce_bytes / _tokens: an engine's one-shot all-reduce thresholds (vLLM's 256 KiB, TensorRT-LLM's
# 128 tokens); a step's message is at most a few hundred MB, so a larger threshold only means "always"
MAX_ONESHOT_ALLREDUCE_BYTES = 1e12
MAX_ONESHOT_ALLREDUCE_TOKENS = 1_000_000

# ---- owning hardware (cost own, plan --buy) ---------------------------------------------------------------
MAX_PURCHASE_USD = 10_000_000  # one card's price: a DGX node is ~$300k, a single accelerator far less
MIN_PUE, MAX_PUE = 1.0, 3.0  # total over IT power: 1 is the ideal, Uptime's worst surveyed sites are near 2.5
MAX_USD_PER_KWH = 10  # electricity: retail prices run 0.05-0.60 $/kWh
MIN_LIFE_YEARS, MAX_LIFE_YEARS = 0.25, 20  # a service life the capex is written off over

# ---- software lifecycle (plan --support-horizon) ------------------------------------------------------
# months ahead a plan looks for an announced end of an engine's support for a card: ten years is past any
# engine's or CUDA major's announced schedule (CUDA 12.x announced the Volta removal one major ahead)
MAX_SUPPORT_HORIZON_MONTHS = 120
