"""Drive every vazao subcommand with hostile input and classify what comes back.

Each case runs `vazao ARGS...` as a subprocess with a wall-clock timeout and an address-space limit,
and is classified as one of:
- traceback: stderr holds a Python traceback;
- net: one line, exit 2, but only because the CLI's last-resort handler caught an OSError,
  UnicodeError, RecursionError, MemoryError or OverflowError that a reader should have refused itself;
- hang: it ran past the timeout (or was killed for memory);
- wrong-exit: the exit code is not one the case allows (bad input: 2);
- multi-line: it failed with 2 but wrote more than one line on stderr (or, with --json, stdout is not
  one JSON object with "error");
- ok.
No traffic leaves the machine: `bench` is pointed at a closed loopback port, so only its flag parsing
and its connection error are exercised.

    python bench/hostile_sweep.py [--workers 2] [--timeout 20] [--only simulate] [--out bench/results/hostile.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = 2 * 2**30
BAD_NUMBERS = ("nan", "inf", "-inf", "-1", "0", "1e400", "1.5", "99999999999999999999999", "1e12", "", "abc",
               "0x10", "1_0", " ")
BAD_LISTS = ("", ",", "1,,2", "1,", "nan,1", "inf", "-1,2", "1e400", "a,b", "1.5,2", ",".join(["1"] * 1000))
PRICE = "claude-haiku-5.5"
M, G = "llama-3.1-8b", "h100-sxm"


@dataclass
class Case:
    family: str
    args: list[str]
    allowed: tuple[int, ...] = (2,)
    json: bool = False

    def name(self) -> str:
        return " ".join(a if len(a) < 60 else a[:40] + "…" for a in self.args)


@dataclass
class Outcome:
    case: Case
    kind: str
    rc: int | None
    seconds: float
    stderr_tail: str = ""
    extra: dict = field(default_factory=dict)


# ---- fixtures ---------------------------------------------------------------------------------------
def make_fixtures(d: Path) -> dict[str, str]:
    f = {}

    def put(name: str, data: bytes | str) -> str:
        p = d / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        f[name] = str(p)
        return str(p)

    put("latin1.txt", "prompt: caf\xe9\n".encode("latin-1"))
    put("latin1.jsonl", b'{"prompt": "caf\xe9"}\n' * 3)
    put("empty.txt", b"")
    put("deep.json", "[" * 100_000 + "]" * 100_000)
    put("deep.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n")
    put("deep_nest.json", '{"a":' * 200 + "1" + "}" * 200)
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]"
             for i in range(1, 10)]
    put("bomb.yaml", "\n".join(bomb) + "\n")
    put("recursive.yaml", "a: &a [*a]\n")
    put("list.yaml", "- 1\n- 2\n")
    put("scalar.yaml", "42\n")
    put("multi.yaml", "a: 1\n---\nb: 2\n")
    put("nan.yaml", "arrival: {kind: poisson, rate: .nan}\nprompt: 100\noutput: 10\nrequests: 10\n")
    put("inf.yaml", "arrival: {kind: concurrency, concurrency: .inf}\nprompt: 100\noutput: 10\nrequests: 10\n")
    put("huge_req.yaml", "arrival: {kind: concurrency, concurrency: 4}\nprompt: 100\noutput: 10\n"
        "requests: 1000000000000\n")
    put("huge_tok.yaml", "arrival: {kind: concurrency, concurrency: 4}\nprompt: 100000000000000\noutput: 10\n"
        "requests: 10\n")
    put("neg.yaml", "arrival: {kind: poisson, rate: -3}\nprompt: -100\noutput: 10\nrequests: 10\n")
    put("bad.json", "{not json")
    put("nan.json", '{"summary": NaN}')
    put("bigint.json", '{"x": ' + "9" * 5000 + "}")
    put("garbage.jsonl", "\n".join(["{", "null", "[]", "42", '"s"', '{"prompt": 5}', "\xff"]) + "\n")
    put("nul.bin", b"\x00" * 4096)
    put("config_bad.json", json.dumps({"hidden_size": 0, "num_attention_heads": 0, "num_hidden_layers": -1}))
    put("config_nan.json", '{"hidden_size": 1e400, "num_hidden_layers": 32}')
    put("config_list.json", "[1, 2, 3]")
    put("gguf_bad.gguf", b"GGUF\x03\x00\x00\x00" + b"\xff" * 64)
    put("gguf_short.gguf", b"GG")
    put("budget_bad.yaml", "tasks: 5\n")
    put("budget_nan.yaml", "price: claude-haiku-5.5\ntasks:\n  t: {calls: .nan, input: 100, output: 10}\n")
    put("prices_bad.yaml", "prices: [1, 2]\n")
    put("prices_nan.yaml", "- id: x\n  provider: y\n  input: .nan\n  output: 1\n")
    put("tokenizer_bad.json", '{"model": 5}')
    put("run_bad.json", '{"summary": {"ttft_s": 5}}')
    put("usage_huge.jsonl", '{"usage": {"prompt_tokens": 1e400, "completion_tokens": 1}}\n'
        '{"usage": {"prompt_tokens": 99999999999999999999999999, "completion_tokens": 1}}\n')
    put("records_bad.jsonl", '{"request_id": "a", "source": "simulated", "arrival_s": "x", "prompt_tokens": 1,'
        ' "output_tokens": 1}\n{"request_id": 1}\n')
    put("litellm_bad.json", '{"m": {"input_cost_per_token": "x", "litellm_provider": 5}}')
    f["folder"] = str(d)
    f["missing"] = str(d / "no-such-file.json")
    f["missing_dir_out"] = str(d / "no-such-dir" / "out.json")
    f["long"] = str(d / ("x" * 5000))
    return f


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


# ---- cases ------------------------------------------------------------------------------------------
def cases(f: dict[str, str], port: int) -> list[Case]:
    out: list[Case] = []
    url = f"http://127.0.0.1:{port}/v1"
    files_bad = [f["latin1.txt"], f["empty.txt"], f["deep.json"], f["deep.yaml"], f["bomb.yaml"],
                 f["recursive.yaml"], f["list.yaml"], f["scalar.yaml"], f["multi.yaml"], f["nul.bin"],
                 f["folder"], f["missing"], f["long"], "/dev/zero", "/dev/null", f["bad.json"]]
    outs_bad = [f["folder"], f["missing_dir_out"], "/dev/full", f["long"], "/proc/version"]

    def add(family: str, args: list[str], allowed=(2,)):
        out.append(Case(family, args, tuple(allowed)))

    def numbers(family: str, base: list[str], opt: str, values=BAD_NUMBERS, ok=()):
        """`opt` given each value; those in `ok` (and '1_0', Python's own spelling of 10) may succeed."""
        for v in values:
            add(family, [*base, opt, v], (0, 2) if v in ok or v == "1_0" else (2,))

    # top level, parse errors
    add("parse", ["no-such-command"])
    add("parse", ["simulate"])
    add("parse", ["fit", M])
    add("parse", ["fit", M, "--gpu", G, "--no-such-flag"])
    add("parse", ["fit", M, "--gpu"])
    add("parse", ["bill", "no-such"])
    add("parse", ["cost", "train"])
    add("parse", ["--no-such-flag"])
    add("parse", ["fit", M, "--gpu", G, "--count", "1e12"])
    add("parse", ["fit", M, "--gpu", G, "--count", "nan"])
    add("parse", ["fit", M, "--gpu", G, "--json", "--count", "x"])
    add("parse", ["simulate", M, "--gpu", G, "--json", "--bogus"])
    add("help", ["--help"], (0,))
    add("help", [], (0, 2))
    add("help", ["bill"], (0, 2))
    # names
    for name in ("no-such-model", "x" * 5000, "", "llama-3.1-8", "../../etc/passwd", "\x01", "ll\u00e9ma"):
        add("names", ["fit", name, "--gpu", G])
    for gpu in ("no-such-gpu", "x" * 5000, ""):
        add("names", ["fit", M, "--gpu", gpu])
    for fmt in ("no-such-format", "", "x" * 3000):
        add("names", ["fit", M, "--gpu", G, "--format", fmt])
    for kv in ("no-such", ""):
        add("names", ["fit", M, "--gpu", G, "--kv", kv])
    for eng in ("no-such", ""):
        add("names", ["fit", M, "--gpu", G, "--engine", eng])
    for p in files_bad + [f["config_bad.json"], f["config_nan.json"], f["config_list.json"], f["gguf_bad.gguf"],
                          f["gguf_short.gguf"], f["deep_nest.json"], f["bigint.json"]]:
        add("model-file", ["fit", p, "--gpu", G])
    # fit / estimate
    fit = ["fit", M, "--gpu", G]
    for opt in ("--count", "--context", "--tp", "--pp"):
        numbers("fit", fit, opt)
    est = ["estimate", M, "--gpu", G]
    for opt in ("--count", "--input", "--output", "--tp", "--pp"):
        numbers("estimate", est, opt)
    for v in BAD_LISTS:
        add("estimate", [*est, "--batch", v])
    for opt in ("--input", "--output"):
        numbers("demo", ["demo"], opt, ("nan", "-1", "0", "1e400", "1e12", "99999999999999999999999"))
    # catalogs
    add("catalog", ["formats", "--gpu", "no-such"])
    add("catalog", ["formats", "--engine", "no-such"])
    add("catalog", ["formats", "--gpu", "x" * 5000])
    # simulate
    sim = ["simulate", M, "--gpu", G, "--requests", "20"]
    for opt in ("--count", "--tp", "--pp", "--max-context", "--max-seqs", "--max-batched-tokens", "--block-size",
                "--max-queue", "--spec-k", "--seed"):
        numbers("simulate", sim, opt, ok=("0",) if opt == "--seed" else ())
    numbers("simulate", ["simulate", M, "--gpu", G], "--requests")
    for opt in ("--rate", "--concurrency"):
        for v in BAD_LISTS + ("1e9", "1e12"):
            add("simulate", [*sim, opt, v], (0, 2) if (opt, v) == ("--rate", "1.5,2") else (2,))
    for opt in ("--spec-alpha", "--spec-draft-ratio"):
        numbers("simulate", [*sim, "--spec-k", "2", "--spec-alpha", "0.5"] if opt != "--spec-alpha"
                else [*sim, "--spec-k", "2"], opt, ("nan", "inf", "-1", "0", "2", "1e400", ""),
                ok=("0",) if opt == "--spec-alpha" else ("0", "2"))
    for v in ("", "0", "-1s", "nan", "1e400s", "10y", "forever", "1e30h"):
        add("simulate", [*sim, "--duration", v])
    for v in ("", "ttft_p95", "ttft_p95=nan", "ttft_p95=-1s", "bogus_p95=1s", "ttft_p999999999999=1s",
              "ttft_p95=1e400s", ",", "ttft_p95=1s,,"):
        add("simulate", [*sim, "--slo", v])
    for v in ("", "bogus", "batching", "batching=", "batching=static,,continuous", "kv=nope",
              "max_seqs=nan", "max_seqs=0", "max_seqs=1e12", "block=0", "block=-1", "engine=nope", "spec=x",
              "disagg=0:0", "max_context=1e400", "=", "batching=" + ",".join(["static"] * 300)):
        add("simulate", [*sim, "--compare", v])
    add("simulate", [*sim, "--compare", "max_seqs=1,2,3,4,5,6,7,8", "--compare", "block=16,32,64,128,256,512",
                     "--compare", "kv=fp16,fp8,int8,q4"])
    for v in ("", "0:0", "1:x", "nan:1", "-1:2", "1:1:1", "99999999999999999999:1", ":", "1e400:1"):
        add("simulate", [*sim, "--count", "2", "--tp", "1", "--disagg", v])
    for v in ("", "0", "-1GB/s", "nan", "1e400GB/s", "fast", "10XB/s"):
        add("simulate", [*sim, "--count", "2", "--tp", "1", "--disagg", "1:1", "--kv-link", v])
    for v in ("nope", "", "x" * 5000):
        add("simulate", [*sim, "--batching", v])
        add("simulate", [*sim, "--kv-layout", v])
    for p in files_bad + [f["nan.yaml"], f["inf.yaml"], f["huge_req.yaml"], f["huge_tok.yaml"], f["neg.yaml"]]:
        add("workload-file", ["simulate", M, "--gpu", G, "--workload", p])
    add("workload-file", ["simulate", M, "--gpu", G, "--workload", "no-such-workload"])
    for p in outs_bad:
        add("simulate-out", [*sim, "--records", p])
    add("simulate-out", [*sim, "--records", "/dev/null"], (0,))
    add("simulate", [*sim, "--spec-draft", "no-such-model", "--spec-k", "2", "--spec-alpha", "0.5"])
    add("simulate", [*sim, "--spec-k", "2"])
    # bills
    for opt in ("--input", "--cached", "--cache-write", "--output", "--reasoning", "--count"):
        numbers("bill-request", ["bill", "request", "-p", PRICE, "-i", "100"], opt,
                ok=() if opt == "--count" else ("0",))
    for v in ("7y", "", "nan", "-5m", "x" * 5000, "1e400m"):
        add("bill-request", ["bill", "request", "-p", PRICE, "-i", "100", "--cache", v])
    for price in ("no-such", "", "x" * 5000):
        add("bill-request", ["bill", "request", "-p", price, "-i", "100"])
    for p in files_bad + [f["prices_bad.yaml"], f["prices_nan.yaml"]]:
        add("prices-file", ["bill", "request", "-p", PRICE, "-i", "100", "--prices", p])
    conv = ["bill", "conversation", "-p", PRICE, "--system", "100", "--turns", "3", "--user", "10", "--reply", "10"]
    for opt in ("--system", "--turns", "--user", "--reply", "--reasoning", "--per-day"):
        numbers("bill-conversation", conv, opt, ok=() if opt == "--turns" else ("0",))
    add("bill-conversation", [*conv, "--cache", "7y"])
    agent = ["bill", "agent", "-p", PRICE, "--calls", "3", "--context", "100", "--reply", "10"]
    for opt in ("--calls", "--context", "--reply", "--agents", "--cached-context", "--reasoning", "--per-day"):
        numbers("bill-agent", agent, opt, ok=() if opt in ("--calls", "--agents") else ("0",))
    for p in files_bad + [f["garbage.jsonl"], f["usage_huge.jsonl"], f["latin1.jsonl"]]:
        add("bill-usage", ["bill", "usage", p, "-p", PRICE], (0, 2))
    # prices
    add("prices", ["prices", "--provider", "no-such"])
    for p in files_bad + [f["prices_bad.yaml"], f["prices_nan.yaml"]]:
        add("prices", ["prices", "--prices", p])
    add("prices", ["prices", "import"])
    for p in files_bad + [f["litellm_bad.json"], f["nan.json"], f["bigint.json"]]:
        add("prices-import", ["prices", "import", p, "--from-litellm"],
            (0, 2) if p == f["litellm_bad.json"] else (2,))  # entries without prices are skipped, and counted
    for p in outs_bad:
        add("prices-import-out", ["prices", "import", f["litellm_bad.json"], "--from-litellm", "--out", p])
    for v in ("", "not-a-date", "x" * 5000):
        add("prices-import", ["prices", "import", f["litellm_bad.json"], "--from-litellm", "--as-of", v], (0, 2))
    # cost
    sh = ["cost", "selfhost", M, "--gpu", G, "--input", "100", "--output", "10", "--analytic"]
    for opt in ("--count", "--input", "--output"):
        numbers("cost-selfhost", sh, opt)
    for v in ("", "nan", "0", "-1", "2", "1e400", "abc", "50%"):
        add("cost-selfhost", [*sh, "--utilisation", v], (0, 2) if v == "50%" else (2,))
    for v in ("", "nan", "-1", "1e400", "abc", "inf"):
        add("cost-selfhost", [*sh, "--usd-per-hour", v])
    for p in files_bad + [f["run_bad.json"], f["nan.json"]]:
        add("cost-selfhost", ["cost", "selfhost", M, "--gpu", G, "--count", "1", "--measured", p])
    for p in files_bad + [f["huge_req.yaml"], f["huge_tok.yaml"]]:
        add("cost-selfhost", ["cost", "selfhost", M, "--gpu", G, "--workload", p, "--analytic"])
    be = ["cost", "breakeven", M, "-p", PRICE, "--input", "100", "--output", "10", "--analytic"]
    for v in BAD_LISTS + ("no-such-gpu", "h100-sxm,no-such"):
        add("cost-breakeven", [*be, "--gpus", v])
    numbers("cost-breakeven", be, "--count")
    # break-even over time
    for v in ("", "0", "-1mo", "500mo", "abc", "1e400", "nan"):
        add("cost-breakeven", [*be, "--horizon", v, "--trend", "flat-top-tier"])
    for p in files_bad + ["no-such-scenario"]:
        add("cost-breakeven", [*be, "--horizon", "24mo", "--trend", p])
    # owning against renting
    own = ["cost", "own", M, "--gpu", "rtx-3090", "--traffic", "1/s", "--input", "100", "--output", "10",
           "--analytic"]
    for v in BAD_LISTS + ("no-such-gpu",):
        add("cost-own", ["cost", "own", M, "--gpu", v, "--traffic", "1/s", "--input", "100", "--output", "10",
                         "--analytic"], (0, 2) if v == "no-such-gpu" else (2,))
    for v in ("", "0/s", "-1/s", "nan/s", "abc", "1e400/s", "5"):
        add("cost-own", ["cost", "own", M, "--gpu", "rtx-3090", "--traffic", v, "--input", "100", "--output",
                         "10", "--analytic"], (0, 2) if v == "5" else (2,))
    for opt in ("--resale", "--hosting", "--price", "--usd-per-kwh", "--pue", "--life"):
        numbers("cost-own", own, opt, ok=("0", "1.5") if opt in ("--hosting", "--usd-per-kwh", "--life",
                                                                 "--price") else ("0",) if opt == "--resale"
                else ("1.5",))
    for v in ("", "0", "500mo", "abc", "nan"):
        add("cost-own", [*own, "--horizon", v])
    add("cost-own", [*own, "--condition", "mint"])
    # quality: a closed port, bad prompt files
    for p in files_bad:
        add("quality", ["quality", url, url, "--prompts", p])
    add("quality", ["quality", url, url, "--prompts", str(ROOT / "README.md")])
    # serve: the port only (a real start would hold the sweep)
    for v in ("-1", "70000", "abc", "nan", "1e400"):
        add("serve", ["serve", "--port", v])
    train = ["cost", "train", "--params", "7B", "--tokens", "1T", "--gpu", G]
    for opt in ("--params", "--tokens"):
        numbers("cost-train", train, opt, BAD_NUMBERS + ("7X", "1e400B", "1e300T", "B", "7BB"), ok=("1.5", "1e12"))
    for opt in ("--mfu", "--gpus", "--usd-per-hour"):
        numbers("cost-train", train, opt, ok=("0", "1.5") if opt == "--usd-per-hour" else ())
    add("cost-train", [*train, "--mfu", "2"])
    add("cost-train", [*train, "--dtype", "no-such"])
    # prefix
    req = str(ROOT / "examples" / "requests.jsonl")
    pre = ["prefix", req, "-p", PRICE]
    for opt in ("--block", "--min-cacheable"):
        numbers("prefix", pre, opt, ok=("0",) if opt == "--min-cacheable" else ())
    numbers("prefix", [*pre, "--unit", "char"], "--chars-per-token", ok=("1.5",))
    for v in ("7y", "", "nan", "-5m", "0s"):
        add("prefix", [*pre, "--cache", v])
    for v in ("bogus", ""):
        add("prefix", [*pre, "--unit", v])
    for p in files_bad + [f["tokenizer_bad.json"]]:
        add("prefix", [*pre, "--tokenizer", p])
    for p in files_bad + [f["garbage.jsonl"], f["latin1.jsonl"]]:
        add("prefix-file", ["prefix", p, "-p", PRICE], (0, 2))
    # budget
    bud = str(ROOT / "examples" / "budget.yaml")
    for p in files_bad + [f["budget_bad.yaml"], f["budget_nan.yaml"]]:
        add("budget", ["budget", "check", p])
    bsim = ["budget", "check", bud, "--simulate", "--model", M, "--gpu", G]
    for opt in ("--concurrency", "--count"):
        numbers("budget", bsim, opt, ("nan", "-1", "0", "1e6", "1e9", "1e400", "1.5", "99999999999999999999999"))
    for p in files_bad + [f["run_bad.json"]]:
        add("budget", ["budget", "check", bud, "--measured", p])
    for judge in ("", "nan", "Band", "x" * 5000, "prediction,band"):
        add("budget", [*bsim, "--judge", judge])
    # summarize / compare
    for p in files_bad + [f["records_bad.jsonl"], f["garbage.jsonl"], f["latin1.jsonl"]]:
        add("summarize", ["summarize", p], (0, 2) if p.endswith("jsonl") else (2,))
    for p in files_bad + [f["run_bad.json"], f["nan.json"], f["records_bad.jsonl"]]:
        add("compare", ["compare", p])
    add("compare", ["compare", f["run_bad.json"], "--simulate", "--gpu", "no-such", "--model", M])
    # bench (closed loopback port: flag parsing and the connection error only)
    bench = ["bench", url, "--no-probe", "--no-progress", "--requests", "1", "--max-time", "3s"]
    for opt in ("--requests", "--warmup", "--seed", "--max-connections"):
        numbers("bench", bench, opt, ("nan", "-1", "0", "1e400", "1.5", "99999999999999999999999", ""))
    for opt in ("--rate", "--concurrency"):
        for v in BAD_LISTS[:8]:
            add("bench", [*bench, opt, v])
    for opt in ("--timeout", "--stall-timeout", "--max-time", "--duration"):
        for v in ("", "0", "-1s", "nan", "10y", "1e400s"):
            add("bench", [*bench, opt, v])
    for v in ("{", "[]", '{"a": NaN}', "[" * 10000, "x" * 5000):
        add("bench", [*bench, "--extra-body", v])
    for v in ("no-colon", ":", "\x01: y"):
        add("bench", [*bench, "-H", v])
    for url_bad in ("not-a-url", "ftp://x", "", "http://[::1"):
        add("bench", ["bench", url_bad, "--no-probe", "--no-progress", "--requests", "1"])
    for p in files_bad + [f["garbage.jsonl"]]:
        add("bench", [*bench, "--dataset", p])
        add("bench", [*bench, "--tokenizer", p])
    for p in outs_bad:
        add("bench-out", [*bench, "--output", p])
        add("bench-out", [*bench, "--records", p])
    add("bench", [*bench, "--api", "nope"])
    add("bench", [*bench], (2,))  # the closed port itself: a connection error, one line
    # --json errors: one JSON object on stdout
    for args in (["fit", M, "--gpu", "no-such"], ["simulate", M, "--gpu", G, "--requests", "1e12"],
                 ["bill", "request", "-p", "no-such"], ["fit", M, "--gpu", G, "--count", "x"],
                 ["cost", "train", "--params", "1e400", "--tokens", "1T", "--gpu", G],
                 ["prefix", req, "-p", PRICE, "--block", "0"]):
        out.append(Case("json", [*args, "--json"], (2,), json=True))
    return out


# ---- running ----------------------------------------------------------------------------------------
def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.setsid()


def run_case(case: Case, exe: list[str], timeout: float, cwd: str) -> Outcome:
    env = {**os.environ, "COLUMNS": "120", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    t0 = time.monotonic()
    try:
        p = subprocess.run([*exe, *case.args], capture_output=True, timeout=timeout, preexec_fn=_limits,
                           cwd=cwd, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome(case, "hang", None, time.monotonic() - t0)
    dt = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace")
    tail = err[-600:]
    if "Traceback" in err:
        return Outcome(case, "traceback", p.returncode, dt, tail)
    if p.returncode in (-9, 137) or "MemoryError" in err:
        return Outcome(case, "hang", p.returncode, dt, tail, {"why": "killed or out of memory"})
    if p.returncode not in case.allowed:
        return Outcome(case, "wrong-exit", p.returncode, dt, tail)
    if p.returncode == 2 and case.family != "help":  # bare `vazao` / `vazao bill` print help with exit 2
        lines = [x for x in err.splitlines() if x.strip()]
        if case.json:
            try:
                obj = json.loads(p.stdout.decode("utf-8"))
                good = isinstance(obj, dict) and "error" in obj
            except ValueError:
                good = False
            if not good:
                return Outcome(case, "multi-line", p.returncode, dt, tail, {"why": "--json error is not JSON"})
        elif len(lines) != 1:
            return Outcome(case, "multi-line", p.returncode, dt, tail)
        elif lines[0].startswith("error: unexpected "):  # the CLI's safety net caught what a reader missed
            return Outcome(case, "net", p.returncode, dt, tail)
    return Outcome(case, "ok", p.returncode, dt, tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--only", default=None, help="Only cases whose family starts with this.")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "hostile.json"))
    ap.add_argument("--show", type=int, default=60, help="Print this many failing cases.")
    a = ap.parse_args(argv)
    vazao = shutil.which("vazao", path=str(Path(sys.executable).parent)) or shutil.which("vazao")
    exe = [vazao] if vazao else [sys.executable, "-m", "vazao"]
    tmp = Path(tempfile.mkdtemp(prefix="vazao-hostile-"))
    try:
        fx = make_fixtures(tmp)
        todo = [c for c in cases(fx, closed_port()) if not a.only or c.family.startswith(a.only)]
        workers = max(1, min(a.workers, 2))
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(lambda c: run_case(c, exe, a.timeout, str(tmp)), todo))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = Counter(r.kind for r in results)
    by_family: dict[str, Counter] = {}
    for r in results:
        by_family.setdefault(r.case.family, Counter())[r.kind] += 1
    kinds = ("ok", "traceback", "net", "hang", "wrong-exit", "multi-line")
    print(f"{'family':<20}" + "".join(f"{k:>12}" for k in kinds))
    for fam, c in sorted(by_family.items()):
        print(f"{fam:<20}" + "".join(f"{c.get(k, 0):>12}" for k in kinds))
    print(f"{'total':<20}" + "".join(f"{counts.get(k, 0):>12}" for k in kinds) + f"   ({len(results)} cases)")
    bad = [r for r in results if r.kind != "ok"]
    for r in bad[: a.show]:
        last = r.stderr_tail.strip().splitlines()[-1:] if r.stderr_tail.strip() else [""]
        print(f"  {r.kind:<10} rc={r.rc} {r.case.name()[:110]}\n             {last[0][:150]}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({
        "cases": len(results), "counts": {k: counts.get(k, 0) for k in kinds},
        "by_family": {f: dict(c) for f, c in sorted(by_family.items())},
        "failures": [{"kind": r.kind, "family": r.case.family, "args": [x[:200] for x in r.case.args], "rc": r.rc,
                      "seconds": round(r.seconds, 2), "stderr_tail": r.stderr_tail[-400:], **r.extra}
                     for r in bad],
    }, indent=1) + "\n", encoding="utf-8")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
