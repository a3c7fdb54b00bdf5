"""Chart builders: typed report records (report.model) in, altair charts out. They draw; the numbers
come from the cost model and the results. altair is imported on first use: the core runs without
the `report` extra."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from vazao.errors import VazaoError
from vazao.report.model import (
    Ceilings,
    CostPoint,
    CurvePoint,
    LatencySample,
    MemoryBreakdown,
    ParetoPoint,
    Report,
    RooflinePoint,
    TrendPoint,
    ValidationPoint,
)

EXTRA = "plots and HTML reports need the report extra: pip install 'vazao[report]'"
WIDTH, HEIGHT = 420, 280
_SLO_LABELS = {"ttft_p95": "TTFT p95", "tpot_p95": "TPOT p95", "itl_p95": "ITL p95"}


def altair():
    try:
        import altair as alt
    except ImportError:
        raise VazaoError(EXTRA) from None
    return alt


def _data(rows: Sequence[dict[str, Any]]):
    return altair().Data(values=list(rows))


def roofline_chart(points: Sequence[RooflinePoint], ceilings: Ceilings):
    """Achieved FLOP/s against arithmetic intensity, under min(peak, bandwidth × intensity) for each
    dtype's peak. Points and ceilings are per GPU (a step's FLOPs and bytes are per tensor-parallel rank)."""
    alt = altair()
    xs = [p.intensity for p in points if p.intensity > 0] or [1.0]
    lo, hi = min(xs) / 4, max(xs) * 4
    for _, peak in ceilings.peak_flops:  # the ridge points belong on the axis too
        ridge = peak / ceilings.bandwidth_bytes_per_s
        lo, hi = min(lo, ridge / 4), max(hi, ridge * 4)
    grid = [lo * (hi / lo) ** (i / 60) for i in range(61)]
    same: dict[float, list[str]] = {}  # dtypes with one peak (fp16 and bf16) share a line and a label
    for dtype, peak in ceilings.peak_flops:
        same.setdefault(peak, []).append(dtype)
    names = {peak: "/".join(dtypes) for peak, dtypes in same.items()}
    roof = [{"intensity": x, "flops_per_s": min(peak, ceilings.bandwidth_bytes_per_s * x), "ceiling": name}
            for peak, name in names.items() for x in grid]
    tags = [{"intensity": hi, "flops_per_s": peak, "ceiling": f"{name} peak"} for peak, name in names.items()]
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP/byte)")
    y = alt.Y("flops_per_s:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format="~s"), title="FLOP/s per GPU")
    lines = alt.Chart(_data(roof)).mark_line(strokeDash=[4, 3], color="gray").encode(
        x=x, y=y, detail="ceiling:N", tooltip=["ceiling:N"])
    labels = alt.Chart(_data(tags)).mark_text(align="right", dy=-6, fontSize=10, color="gray").encode(
        x=x, y=y, text="ceiling:N")
    dots = alt.Chart(_data([asdict(p) for p in points])).mark_point(filled=True, size=70).encode(
        x=x, y=y, color=alt.Color("phase:N"), shape="phase:N",
        tooltip=["label:N", "batch:Q", alt.Tooltip("intensity:Q", format=".3~s"),
                 alt.Tooltip("flops_per_s:Q", format=".3~s")])
    bw = ceilings.bandwidth_bytes_per_s
    return (lines + labels + dots).properties(width=WIDTH, height=HEIGHT,
                                              title=f"Roofline: {ceilings.gpu} ({bw / 1e12:.3g} TB/s)")


def memory_chart(breakdowns: Sequence[MemoryBreakdown]):
    alt = altair()
    rows = [{"deployment": b.deployment, "part": s.part, "GB": s.bytes / 1e9, "order": i}
            for b in breakdowns for i, s in enumerate(b.segments)]
    return alt.Chart(_data(rows)).mark_bar().encode(
        x=alt.X("GB:Q", stack="zero", title="memory per GPU (GB)"),
        y=alt.Y("deployment:N", title=None, axis=alt.Axis(labelLimit=400)),
        color=alt.Color("part:N", sort=[s.part for s in breakdowns[0].segments] if breakdowns else None),
        order="order:Q", tooltip=["deployment:N", "part:N", alt.Tooltip("GB:Q", format=".2f")],
    ).properties(width=WIDTH, title="Memory breakdown")


def _latency_panel(rows: list[dict], metric: str, limit: float | None):
    alt = altair()
    sel = [r for r in rows if r["metric"] == metric]
    # one line per deployment where the points name several (a plan's top three), else per source
    color = (alt.Color("series:N", legend=alt.Legend(orient="bottom", columns=1, labelLimit=600))
             if any(r["series"] for r in sel) else
             alt.Color("source:N", scale=alt.Scale(domain=["predicted", "measured"])))
    base = alt.Chart(_data(sel)).mark_line(point=True).encode(
        x=alt.X("throughput:Q", title="output tokens/s"),
        y=alt.Y("seconds:Q", scale=alt.Scale(type="log"), title=f"{_SLO_LABELS.get(metric, metric)} (s)"),
        color=color, detail="series:N",
        order="level:Q", tooltip=["series:N", "source:N", "level:Q", alt.Tooltip("throughput:Q", format=",.0f"),
                                  alt.Tooltip("seconds:Q", format=".4f")])
    if limit is None:
        return base.properties(width=WIDTH // 1.3, height=HEIGHT)
    rule = alt.Chart(_data([{"slo": limit, "name": f"SLO {limit:g} s"}])).mark_rule(
        color="crimson", strokeDash=[6, 3]).encode(y="slo:Q", tooltip=["name:N"])
    return (base + rule).properties(width=WIDTH // 1.3, height=HEIGHT)


def curve_chart(points: Sequence[CurvePoint], slo_s: dict[str, float], axis: str = "rate"):
    """p95 TTFT and TPOT against throughput over a sweep, predicted and measured on the same axes."""
    alt = altair()
    rows = []
    for p in points:
        for metric, value in (("ttft_p95", p.ttft_p95_s), ("tpot_p95", p.tpot_p95_s)):
            if value is not None and value > 0:
                rows.append({"level": p.level, "throughput": p.throughput, "metric": metric,
                             "seconds": value, "source": p.source, "series": p.series})
    panels = [_latency_panel(rows, m, slo_s.get(m)) for m in ("ttft_p95", "tpot_p95")]
    return alt.hconcat(*panels).properties(title=f"Latency against throughput ({axis} sweep)")


def latency_chart(samples: Sequence[LatencySample]):
    """TTFT and ITL distributions as quantile curves (seconds on a log axis)."""
    alt = altair()
    rows = [asdict(s) for s in samples if s.seconds > 0]
    panels = []
    for metric in sorted({r["metric"] for r in rows}):
        sel = [r for r in rows if r["metric"] == metric]
        panels.append(alt.Chart(_data(sel)).mark_line(point=True).encode(
            x=alt.X("seconds:Q", scale=alt.Scale(type="log"), title=f"{metric.upper()} (s)"),
            y=alt.Y("quantile:Q", title="share of observations at or below"),
            color=alt.Color("source:N", scale=alt.Scale(domain=["predicted", "measured"])),
            order="quantile:Q", tooltip=["source:N", "quantile:Q", alt.Tooltip("seconds:Q", format=".4f")],
        ).properties(width=WIDTH // 1.3, height=HEIGHT // 1.2))
    return alt.hconcat(*panels).properties(title="Latency distributions")


def cost_chart(points: Sequence[CostPoint], breakeven_per_s: float | None):
    alt = altair()
    line = alt.Chart(_data([asdict(p) for p in points])).mark_line().encode(
        x=alt.X("traffic_per_s:Q", scale=alt.Scale(type="log"), title="traffic (requests/s)"),
        y=alt.Y("usd_per_mtok:Q", scale=alt.Scale(type="log"), title="$ per million tokens"),
        color=alt.Color("series:N", legend=alt.Legend(orient="bottom", columns=1, labelLimit=600)),
        tooltip=["series:N", alt.Tooltip("traffic_per_s:Q", format=".3~g"),
                 alt.Tooltip("usd_per_mtok:Q", format=".4~g")])
    chart = line
    if breakeven_per_s is not None and math.isfinite(breakeven_per_s) and breakeven_per_s > 0:
        chart = line + alt.Chart(_data([{"x": breakeven_per_s, "name": f"break-even {breakeven_per_s:.3g}/s"}])
                                 ).mark_rule(color="crimson", strokeDash=[6, 3]).encode(x="x:Q", tooltip=["name:N"])
    return chart.properties(width=WIDTH, height=HEIGHT, title="Cost per Mtok against traffic")


def trend_chart(points: Sequence[TrendPoint], label: str = ""):
    """The break-even over time: requests/day against month (each deployment's break-even, solid, and its
    capacity, dashed: where they meet the API is cheaper at any load), and each side's $/Mtok."""
    alt = altair()
    panels = []
    for metric, title in (("requests_per_day", "requests per day"), ("usd_per_mtok", "$ per million tokens")):
        rows = [{**asdict(p), "capacity": p.series.startswith("capacity")} for p in points
                if p.metric == metric and p.value > 0]
        if not rows:
            continue
        panels.append(alt.Chart(_data(rows)).mark_line(point=True).encode(
            x=alt.X("month:Q", title="month (0: today's prices)"),
            y=alt.Y("value:Q", scale=alt.Scale(type="log"), title=title),
            color=alt.Color("series:N", legend=alt.Legend(orient="bottom", columns=1, labelLimit=600)),
            strokeDash=alt.StrokeDash("capacity:N", legend=None),
            tooltip=["series:N", "month:Q", alt.Tooltip("value:Q", format=",.4~g")],
        ).properties(width=WIDTH, height=HEIGHT))
    words, lines = label.split(), [""]
    for w in words:  # the scenario and its citation, wrapped under the title
        lines[-1:] = [lines[-1] + " " + w] if len(lines[-1]) + len(w) < 150 else [lines[-1], w]
    return alt.hconcat(*panels).properties(title=alt.TitleParams(
        "Break-even over time (a scenario, not a forecast)", subtitle=[ln.strip() for ln in lines if ln.strip()],
        anchor="start"))


def pareto_chart(points: Sequence[ParetoPoint]):
    alt = altair()
    rows = [{**asdict(p), "status": "Pareto front" if p.on_front else ("meets SLO" if p.meets_slo else "misses")}
            for p in points]
    x = alt.X("usd_per_mtok:Q", scale=alt.Scale(type="log"), title="$ per million tokens")
    y = alt.Y("latency_s:Q", scale=alt.Scale(type="log"), title="binding p95 latency (s)")
    dots = alt.Chart(_data(rows)).mark_point(filled=True).encode(
        x=x, y=y, color=alt.Color("status:N", scale=alt.Scale(domain=["Pareto front", "meets SLO", "misses"])),
        tooltip=["rank:Q", "label:N", alt.Tooltip("usd_per_mtok:Q", format=".4~g"),
                 alt.Tooltip("latency_s:Q", format=".4f")])
    return dots.properties(width=WIDTH, height=HEIGHT, title="Cost against latency: Pareto front")


def validation_chart(points: Sequence[ValidationPoint]):
    """Predicted against measured on log axes, each prediction's band as a whisker, y = x drawn."""
    alt = altair()
    rows = [asdict(p) for p in points if p.measured > 0 and p.predicted > 0]
    values = [v for r in rows for v in (r["measured"], r["predicted"])] or [1.0]
    diag = [{"v": min(values) / 1.5}, {"v": max(values) * 1.5}]
    x = alt.X("measured:Q", scale=alt.Scale(type="log"), title="measured")
    y = alt.Y("predicted:Q", scale=alt.Scale(type="log"), title="predicted")
    ident = alt.Chart(_data(diag)).mark_line(color="gray", strokeDash=[4, 3]).encode(
        x=alt.X("v:Q", scale=alt.Scale(type="log")), y=alt.Y("v:Q", scale=alt.Scale(type="log")))
    banded = [r for r in rows if r["band_lo"] and r["band_hi"] and r["band_lo"] > 0]
    whiskers = alt.Chart(_data(banded)).mark_rule(opacity=0.4).encode(
        x=x, y=alt.Y("band_lo:Q", scale=alt.Scale(type="log")), y2="band_hi:Q", color="metric:N")
    dots = alt.Chart(_data(rows)).mark_point(filled=True, size=25).encode(
        x=x, y=y, color="metric:N", tooltip=["label:N", "metric:N", alt.Tooltip("measured:Q", format=".4~g"),
                                             alt.Tooltip("predicted:Q", format=".4~g")])
    return (ident + whiskers + dots).properties(width=WIDTH, height=WIDTH, title="Predicted against measured")


def charts_for(report: Report) -> list[tuple[str, Any]]:
    """Every chart the report has data for, as (title, chart), in reading order."""
    out: list[tuple[str, Any]] = []
    if report.trend:
        out.append(("Break-even over time", trend_chart(report.trend, report.trend_label)))
    if report.pareto:
        out.append(("Pareto front", pareto_chart(report.pareto)))
    if report.cost:
        out.append(("Cost against traffic", cost_chart(report.cost, report.breakeven_per_s)))
    if report.curve:
        out.append(("Latency against throughput", curve_chart(report.curve, report.slo_s, report.curve_axis)))
    if report.latencies:
        out.append(("Latency distributions", latency_chart(report.latencies)))
    if report.validation:
        out.append(("Predicted against measured", validation_chart(report.validation)))
    if report.roofline and report.ceilings is not None:
        out.append(("Roofline", roofline_chart(report.roofline, report.ceilings)))
    if report.memory:
        out.append(("Memory", memory_chart(report.memory)))
    return out
