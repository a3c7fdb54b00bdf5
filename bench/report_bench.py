"""Plot and HTML generation for a plan of 500 candidates (issue 13: under 5 s): a real `vazao plan
--json` result, its candidates repeated with spread costs and latencies up to 500, then
plan_report → render_report → file. Timed cold (a fresh process, no cached Vega bundle: vl-convert
bundles the libraries, ~2.5 s) and warm (the bundle cached, as on every run after the first)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = 500
PLAN_ARGS = ["plan", "-m", "llama-3.1-8b,qwen3-32b", "-g", "l4,h100-sxm,rtx-4090", "-f", "bf16,fp8",
             "--traffic", "10/s", "--requests", "100", "--simulate-top", "16", "--against-api", "sonnet-5.5", "--json"]

RENDER = """
import json, sys, time
t0 = time.perf_counter()
from vazao.report.html import render_report
from vazao.report.plan_report import plan_report
data = json.load(open(sys.argv[1]))
html = render_report(plan_report(data))
open(sys.argv[2], "w", encoding="utf-8").write(html)
print(json.dumps({"wall_s": time.perf_counter() - t0, "bytes": len(html)}))
"""


def inflate(plan: dict, n: int = N) -> dict:
    """n candidates from the real ones: each copy's $/Mtok and p95s spread by a fixed factor."""
    real = plan["candidates"]
    out = []
    for i in range(n):
        c = copy.deepcopy(real[i % len(real)])
        k = 1 + 0.37 * (i // len(real)) + 0.01 * i
        c["usd_per_mtok"] *= k
        c["max_batch"] = (c.get("max_batch") or 1) + i  # a distinct identity per copy
        for check in c.get("checks") or []:
            check["value_s"] = check["value_s"] / (1 + 0.05 * (i % 7))
        out.append(c)
    return {**plan, "candidates": out, "pareto": out[: max(n // 20, 1)], "winner": 0}


def _render(src: Path, dst: Path, cache: str) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    r = subprocess.run([sys.executable, "-c", RENDER, str(src), str(dst)], capture_output=True, text=True,
                       env=env, check=True)
    return json.loads(r.stdout)


def run() -> dict:
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        r = subprocess.run([sys.executable, "-m", "vazao", *PLAN_ARGS], capture_output=True, text=True, check=True)
        plan = inflate(json.loads(r.stdout))
        src = d / "plan500.json"
        src.write_text(json.dumps(plan))
        cold = _render(src, d / "cold.html", str(d / "cache"))
        warm = _render(src, d / "warm.html", str(d / "cache"))
        from vazao.report.html import render_report
        from vazao.report.plan_report import plan_report

        before = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = str(d / "cache")  # the bundle cached above: the rendering alone
        try:
            t0 = time.perf_counter()
            render_report(plan_report(plan))
            in_process = time.perf_counter() - t0
        finally:
            if before is None:
                os.environ.pop("XDG_CACHE_HOME")
            else:
                os.environ["XDG_CACHE_HOME"] = before
        return {"candidates": len(plan["candidates"]), "target_s": 5,
                "cold_process_s": round(cold["wall_s"], 2), "warm_process_s": round(warm["wall_s"], 2),
                "render_only_s": round(in_process, 2), "html_bytes": warm["bytes"]}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
