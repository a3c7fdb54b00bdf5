"""vazao's result JSON (simulate, bench, validate, plan, estimate, fit, cost breakeven) into the
typed records of report.model. Shapes only: every number is read from the result, none recomputed,
except the cost curve's $/Mtok at other traffic (a fixed hourly price over the tokens served)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vazao.errors import VazaoError
from vazao.report.model import (
    Ceilings,
    CostPoint,
    CurvePoint,
    LatencySample,
    MemoryBreakdown,
    MemorySegment,
    RooflinePoint,
    Source,
    TrendPoint,
    ValidationPoint,
)
from vazao.resultfiles import kind_of  # cli.report and the tests read it from here too

QUANTILES = tuple(q / 100 for q in range(1, 100))
_SUMMARY_QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))


def source_of(summary: Mapping[str, Any]) -> Source:
    return "measured" if summary.get("source") == "measured" else "predicted"


def _p95(summary: Mapping[str, Any], metric: str) -> float | None:
    value = (summary.get(metric) or {}).get("p95")
    return float(value) if isinstance(value, (int, float)) else None


def curve_points(data: Mapping[str, Any]) -> tuple[list[CurvePoint], str]:
    """A sweep's levels (or the single run as one point) and whether the levels are rates or
    concurrencies."""
    points = data.get("points") or []
    axis = "concurrency" if any("concurrency" in p for p in points) else "rate"
    if not points:
        points = [{"summary": data["summary"]}]
    out = []
    for i, p in enumerate(points):
        s = p["summary"]
        level = p.get("rate", p.get("concurrency", i + 1))
        out.append(CurvePoint(level=float(level or 0), throughput=float(s.get("output_tokens_per_s") or 0),
                              ttft_p95_s=_p95(s, "ttft_s"), tpot_p95_s=_p95(s, "tpot_s"), source=source_of(s)))
    return out, axis


def summary_latencies(summary: Mapping[str, Any]) -> list[LatencySample]:
    """A summary's TTFT and ITL quantiles (p50 … p99) as distribution points."""
    src = source_of(summary)
    out = []
    for metric, key in (("ttft", "ttft_s"), ("itl", "itl_s")):
        stats = summary.get(key) or {}
        for name, q in _SUMMARY_QUANTILES:
            v = stats.get(name)
            if isinstance(v, (int, float)) and v > 0:
                out.append(LatencySample(metric, float(v), src, q))
    return out


def record_latencies(records: Iterable[Any], source: Source = "measured") -> list[LatencySample]:
    """The empirical TTFT and ITL quantiles (1 % … 99 %) of request records: a bounded series, however
    many requests and chunks there were."""
    import numpy as np

    ttft, itl = [], []
    for r in records:
        if r.error is None and r.first_token_s is not None:
            ttft.append(r.first_token_s - r.arrival_s)
            itl.extend(r.itl_s)
    out = []
    for metric, values in (("ttft", ttft), ("itl", itl)):
        if values:
            qs = np.quantile(np.asarray(values, dtype=float), QUANTILES)
            out.extend(LatencySample(metric, float(v), source, q) for q, v in zip(QUANTILES, qs, strict=True) if v > 0)
    return out


def slo_seconds(data: Mapping[str, Any]) -> dict[str, float]:
    slo = data.get("slo") or (data.get("inputs") or {}).get("slo") or {}
    return {str(k): float(v) for k, v in slo.items() if isinstance(v, (int, float))}


def roofline_points(estimate: Mapping[str, Any]) -> list[RooflinePoint]:
    """Each batch's decode step and its prefill, from `vazao estimate --json` rows."""
    out = []
    for row in estimate.get("rows") or []:
        for phase in ("decode", "prefill"):
            step = row.get(phase) or {}
            flops, moved, t = step.get("flops"), step.get("bytes"), step.get("time_s")
            if flops and moved and t:
                b = int(row["batch"])
                out.append(RooflinePoint(f"{phase} b={b}", phase, b, flops / moved, flops / t))
    return out


def ceilings(accelerator: Any) -> Ceilings:
    """A catalog Accelerator's bandwidth and dense peaks (the dtypes with a figure)."""
    peaks = tuple((k, float(v)) for k, v in accelerator.peak_flops.items() if v and k != "fp32")
    return Ceilings(accelerator.id, float(accelerator.memory_bandwidth_bytes_per_s), peaks)


def memory_breakdown(fit: Mapping[str, Any], deployment: str | None = None) -> MemoryBreakdown:
    """Per GPU, from `vazao fit --json` (or estimate's `fit`): weights, runtime reserve and
    activations, the KV cache pool, and what the engine's memory cap leaves unused."""
    if kind_of(fit) != "fit":
        raise VazaoError("fit result: expected vazao fit's JSON (weights_bytes_per_gpu, kv_capacity_tokens …)")
    count = max(int(fit.get("count") or 1), 1)
    mem, usable = float(fit["memory_bytes_per_gpu"]), float(fit["usable_bytes_per_gpu"])
    weights = float(fit["weights_bytes_per_gpu"])
    reserve = float(fit["overhead_bytes_per_gpu"])
    kv = max(float(fit["free_bytes_for_kv"]) / count, 0.0)
    parts = [("weights", weights), ("runtime reserve & activations", reserve), ("KV cache", kv),
             ("outside the engine's memory cap", max(mem - usable, 0.0))]
    return MemoryBreakdown(deployment or str(fit.get("deployment", "deployment")),
                           tuple(MemorySegment(p, b) for p, b in parts))


def validation_points(rows: Sequence[Mapping[str, Any]]) -> list[ValidationPoint]:
    out = []
    for r in rows:
        m, p = r.get("measured"), r.get("predicted")
        if not (isinstance(m, (int, float)) and isinstance(p, (int, float))):
            continue
        band = r.get("band") or (None, None)
        out.append(ValidationPoint(float(m), float(p), band[0], band[1], str(r.get("metric", "")),
                                   f"{r.get('id', '')} {r.get('model', '')} {r.get('gpu', '')}".strip()))
    return out


def _traffic_grid(lo: float, hi: float, n: int = 40) -> list[float]:
    return [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]


def cost_curve(usd_per_hour: float, tokens_per_request: float, capacity_per_s: float | None,
               api_usd_per_request: float, label: str, api_label: str,
               span: tuple[float, float]) -> list[CostPoint]:
    """$/Mtok against traffic: the deployment's hourly price over the tokens it serves (another
    deployment added each time traffic passes its capacity), and the API's flat price."""
    out = []
    api = api_usd_per_request / tokens_per_request * 1e6
    for r in _traffic_grid(*span):
        copies = math.ceil(r / capacity_per_s) if capacity_per_s else 1
        out.append(CostPoint(r, copies * usd_per_hour / (r * 3600 * tokens_per_request) * 1e6, label))
        out.append(CostPoint(r, api, api_label))
    return out


def breakeven_cost(data: Mapping[str, Any]) -> tuple[list[CostPoint], float | None]:
    """From `vazao cost breakeven --json`: one self-hosted curve per GPU and the API's line; the
    break-even of the winner."""
    tokens = float(data["input_tokens"]) + float(data["output_tokens"])
    api = float(data["api_usd_per_request"])
    rows = [r for r in data.get("rows") or [] if r.get("breakeven_requests_per_day")]
    if not rows:
        return [], None
    lo = min(float(r["breakeven_requests_per_day"]) for r in rows) / 86400 / 10
    hi = max(float(r["capacity_requests_per_day"]) for r in rows) / 86400 * 4
    out: list[CostPoint] = []
    for r in rows:
        sh = r["selfhost"]
        out += [p for p in cost_curve(float(sh["usd_per_hour"]), tokens, float(r["capacity_requests_per_day"]) / 86400,
                                      api, f"self-hosted: {sh['deployment']}", f"API: {data['api_price']}", (lo, hi))]
    best = next((r for r in rows if r["gpu"] == data.get("winner")), rows[0])
    return _dedupe(out), float(best["breakeven_requests_per_day"]) / 86400


def trend_points(data: Mapping[str, Any]) -> list[TrendPoint]:
    """From `vazao cost breakeven --horizon … --trend … --json`: per deployment its break-even and its
    capacity (requests/day) month by month, and each side's $/Mtok. A month with no break-even (the API
    cheaper at any load) has no break-even point."""
    out: list[TrendPoint] = []
    projections = data["trend"]["projections"]
    for k, p in enumerate(projections):
        gpu = str(p["gpu"])
        for m in p["months"]:
            month = int(m["month"])
            if m.get("breakeven_requests_per_day") is not None:
                out.append(TrendPoint(month, float(m["breakeven_requests_per_day"]), f"break-even: {gpu}",
                                      "requests_per_day"))
            out.append(TrendPoint(month, float(m["capacity_requests_per_day"]), f"capacity: {gpu}", "requests_per_day"))
            if m.get("selfhost_usd_per_mtok") is not None:
                out.append(TrendPoint(month, float(m["selfhost_usd_per_mtok"]), f"self-hosted: {gpu}", "usd_per_mtok"))
            if k == 0:  # the API's price is one line whatever the deployment
                out.append(TrendPoint(month, float(m["api_usd_per_mtok"]), f"API: {data['api_price']}", "usd_per_mtok"))
    return out


def _dedupe(points: list[CostPoint]) -> list[CostPoint]:
    seen, out = set(), []
    for p in points:
        if (p.series, p.traffic_per_s) not in seen:
            seen.add((p.series, p.traffic_per_s))
            out.append(p)
    return out
