"""What a result document is, from its shape alone: one of vazao's own results (simulate, bench, validate,
plan, estimate, fit, cost breakeven …) or another tool's benchmark (guidellm, vllm bench serve).

json_document is the one JSON form of any typed result (what --json prints, what report builders read).

Here, below both loadgen and report, because both must recognise a file: bench to read runs and to name a
wrong file in its error, report to pick an adapter. Neither may import the other for it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def json_document(obj: Any) -> Any:
    """The one JSON form of a result, as files hold it and reports read it: each typed result by its
    to_json(), tuples as lists, keys as strings, inf and nan as null (JSON has neither)."""
    if isinstance(obj, float):
        return None if (math.isinf(obj) or math.isnan(obj)) else obj
    if isinstance(obj, Mapping):
        return {str(k): json_document(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_document(v) for v in obj]
    if hasattr(obj, "to_json"):
        return json_document(obj.to_json())
    return obj


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
