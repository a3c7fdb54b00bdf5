"""`vazao serve`'s explorer answer time (issue 24: within 100 ms of every change).

Two measurements on one server:
- api: POST /api/explore over HTTP for a walk of changes (batch 1 → 1024, GPU, format, count, lengths),
  each timed from the request to the parsed JSON: the server's share;
- page: headless Chromium (tests/_serve_browser.py, real key presses on the batch slider and the GPU
  picker), each timed by the page from the input event to the drawn answer (window.__vazao.times): what
  a person waits. Skipped, with the reason, when Chromium is not installed.

    python bench/run.py serve      # or: python bench/bench_serve.py
"""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHANGES = ([{"batch": b} for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 512, 1024)]
           + [{"gpu": g} for g in ("a100-sxm-80gb", "l40s", "rtx-4090", "rtx-3060", "mi300x", "h100-sxm")]
           + [{"format": f} for f in ("fp8", "int4-awq", "bf16")]
           + [{"count": c} for c in (1, 2, 4, 8)] + [{"input": i} for i in (128, 4096, 32768, 1024)])


def _stats(ms: list[float]) -> dict:
    s = sorted(ms)
    return {"changes": len(s), "median_ms": round(statistics.median(s), 2),
            "p95_ms": round(s[min(len(s) - 1, int(0.95 * len(s)))], 2), "max_ms": round(s[-1], 2)}


def _api(port: int, rounds: int = 5) -> dict:
    state = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "count": 8, "batch": 32, "input": 1024, "output": 256,
             "api_price": "gpt-5-mini"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    ms = []
    for _ in range(rounds):
        for change in CHANGES:
            state.update(change)
            body = json.dumps(state).encode()
            t0 = time.perf_counter()
            conn.request("POST", "/api/explore", body=body, headers={"Host": f"127.0.0.1:{port}",
                                                                      "Content-Type": "application/json"})
            r = conn.getresponse()
            json.loads(r.read())
            ms.append((time.perf_counter() - t0) * 1e3)
            if r.getheader("Connection") == "close" or r.status != 200:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    return _stats(ms)


def _page(url: str) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from _cdp import find_chromium
    from _serve_browser import Browser

    chromium = find_chromium()
    if chromium is None:
        return {"skipped": "no chromium on PATH (apt-get install -y chromium)"}
    b = Browser(chromium, Path(tempfile.mkdtemp(prefix="vazao-bench-serve-")))
    try:
        b.goto(url)
        b.js("window.__vazao.times.length = 0")
        b.js("document.querySelector('#batch-range').focus()")
        for _ in range(40):  # the slider, one key press at a time, each answer awaited
            n = b.answered()
            b.key("ArrowRight")
            b.after_answer(n)
        for gpu in ("a100-sxm-80gb", "h100-sxm"):
            n = b.answered()
            b.choose("#gpu", gpu)  # every arrow press on the way is a change with its own answer
            b.after_answer(n)
        times = b.js("window.__vazao.times.slice()")
        errors = b.console_errors()
    finally:
        b.close()
    return {**_stats(times), "console_errors": len(errors)}


def run() -> dict:
    from vazao.serve.server import make_server, url_of

    srv = make_server(0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    try:
        t0 = time.perf_counter()
        _api(srv.app.port, rounds=1)  # warm: catalogs read, prices parsed
        warm_s = time.perf_counter() - t0
        return {"target_ms": 100, "warm_up_s": round(warm_s, 2), "api": _api(srv.app.port),
                "page": _page(url_of(srv))}
    finally:
        srv.shutdown()
        srv.server_close()


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
