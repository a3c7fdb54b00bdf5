"""What a result document is, from its shape alone: one of vazao's own results (simulate, bench, validate,
plan, estimate, fit, cost breakeven …) or another tool's benchmark (guidellm, vllm bench serve).

Here, below both bench and report, because both must recognise a file: bench to read runs and to name a
wrong file in its error, report to pick an adapter. Neither may import the other for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def kind_of(data: Any) -> str:
    """What a vazao result file is, from its shape: simulation | bench run | validation | plan |
    estimate | fit | breakeven | comparison | error | unknown."""
    if not isinstance(data, Mapping):
        return "unknown"
    if "error" in data and len(data) == 1:
        return "error"
    if "candidates" in data and "pareto" in data:
        return "plan"
    summary = data.get("summary")
    if isinstance(summary, Mapping) and "run" in data:
        return "bench run"
    if isinstance(summary, Mapping) and ("sim" in data or summary.get("source") == "simulated"):
        return "simulation"
    if "runs" in data:
        return "comparison"
    rows = data.get("rows")
    if isinstance(rows, list) and isinstance(data.get("summary"), Mapping) and "by_metric" in data["summary"]:
        return "validation"
    if isinstance(rows, list) and "latency_floor_s" in data:
        return "estimate"
    if isinstance(rows, list) and "api_price" in data:
        return "breakeven"
    if "kv_capacity_tokens" in data and "weights_bytes_per_gpu" in data:
        return "fit"
    return "unknown"


def foreign_tool(data: Any) -> str | None:
    """'guidellm' | 'vllm' from the keys each tool writes; None for anything else."""
    if not isinstance(data, Mapping):
        return None
    benchmarks = data.get("benchmarks")
    if isinstance(benchmarks, list) and benchmarks and all(
            isinstance(b, Mapping) and isinstance(b.get("metrics"), Mapping)
            and "time_to_first_token_ms" in b["metrics"] for b in benchmarks):
        return "guidellm"
    if all(k in data for k in ("completed", "duration", "request_throughput")):
        return "vllm"
    return None
