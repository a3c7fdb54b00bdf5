"""vazao plan: the search's wall time at the issue's size, and the aiconfigurator-shaped answer.

1. 4 models × 6 GPUs × 4 formats × up to 8 GPUs on the built-in chat workload at 20 req/s (issue 12:
   under 30 s on this machine).
2. Llama-3.1-70B on up to 8 H100 SXM, every request 1,024 in / 256 out — aiconfigurator's published
   search example's shape (replicas × tp and batch), here with the cost and at a stated traffic."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path


def _winner(r) -> dict | None:
    w = r.winner
    if w is None:
        return None
    return {"deployment": w.shape.label(), "replicas": w.replicas, "tp": w.shape.tp, "gpus": w.count,
            "max_batch": w.max_batch, "usd_per_mtok": w.usd_per_mtok, "usd_per_month": w.usd_per_month,
            "binding": r.binding_constraint,
            "p95_s": {k.key: k.value for k in w.checks}}


def run() -> dict:
    from vazao.plan import PlanInputs, Traffic, run_plan
    from vazao.results import SLO

    out = {}
    inp = PlanInputs(workload="chat", traffic=Traffic(rate=20), slo=SLO.parse("ttft_p95=500ms,tpot_p95=40ms"),
                     models=("llama-3.1-8b", "qwen3-32b", "llama-3.1-70b", "mixtral-8x7b"),
                     gpus=("l4", "a100-sxm-80gb", "h100-sxm", "rtx-4090", "l40s", "h200"),
                     formats=("bf16", "fp8", "int4-awq", "int8"), max_gpus=8)
    t0 = time.perf_counter()
    r = run_plan(inp)
    wall = time.perf_counter() - t0
    out["search_4x6x4"] = {"wall_s": round(wall, 2), "target_s": 30,
                           "deployments": len(r.candidates) + len(r.pruned),
                           "simulated": sum(c.source == "simulated" for c in r.candidates),
                           "pruned": r.pruned_by_reason(), "winner": _winner(r)}
    with tempfile.TemporaryDirectory() as d:
        wl = Path(d) / "fixed-1024-256.yaml"
        wl.write_text("name: fixed-1024-256\narrival: {kind: poisson, rate: 1}\nprompt: 1024\noutput: 256\n"
                      "requests: 400\nseed: 1\n")
        inp = PlanInputs(workload=str(wl), traffic=Traffic(rate=24), slo=SLO.parse("ttft_p95=1s,tpot_p95=40ms"),
                         models=("llama-3.1-70b",), gpus=("h100-sxm",), formats=("bf16", "fp8"),
                         engines=("vllm", "trtllm"), max_gpus=8)
        t0 = time.perf_counter()
        r = run_plan(inp)
        out["llama70b_8xh100_1024_256"] = {
            "wall_s": round(time.perf_counter() - t0, 2), "traffic_req_s": 24, "winner": _winner(r),
            "top": [{"deployment": c.shape.label(), "replicas": c.replicas, "max_batch": c.max_batch,
                     "usd_per_mtok": c.usd_per_mtok, "meets_slo": c.meets_slo} for c in r.candidates[:5]]}
    return out
