"""Console views of bench results: one run's latency table, a sweep's row per level, and runs side
by side. Plain functions from data to rich Tables and lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from vazao.results import RunSummary
from vazao.units import fmt_rate, fmt_seconds

__all__ = ["compare_table", "summary_lines", "summary_table", "sweep_table"]

METRICS = (("TTFT", "ttft_s"), ("ITL", "itl_s"), ("TPOT", "tpot_s"), ("E2E", "e2e_s"))
STATS = ("mean", "p50", "p90", "p95", "p99")


def summary_table(s: RunSummary, title: str | None = None) -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column("metric")
    for st in STATS:
        t.add_column(st, justify="right")
    for label, key in METRICS:
        lat = getattr(s, key)
        t.add_row(label, *(fmt_seconds(lat.get(st)) for st in STATS))
    return t


def summary_lines(s: RunSummary) -> list[str]:
    lines = [
        f"requests {s.requests - s.errors} ok, {s.errors} failed in {fmt_seconds(s.duration_s)}; "
        f"{fmt_rate(s.request_throughput_per_s, 'req/s')}, {fmt_rate(s.output_tokens_per_s, 'output tok/s')}, "
        f"{fmt_rate(s.total_tokens_per_s, 'total tok/s')}",
        f"tokens: {s.prompt_tokens:,} prompt, {s.output_tokens:,} output",
    ]
    if s.goodput_requests_per_s is not None:
        lines.append(f"goodput (requests within the SLO): {fmt_rate(s.goodput_requests_per_s, 'req/s')}")
    return lines


def _level_text(level: Mapping[str, Any]) -> str:
    if "concurrency" in level:
        return f"c={level['concurrency']}"
    if "rate" in level:
        return f"{level['rate']:g}/s"
    return "-"


def sweep_table(points: Sequence[tuple[Mapping[str, Any], RunSummary, bool | None]]) -> Table:
    t = Table(title_justify="left")
    for col in ("load", "ok", "err", "TTFT p50", "TTFT p95", "ITL p50", "TPOT p50", "E2E p95", "req/s",
                "out tok/s", "goodput"):
        t.add_column(col, justify="right")
    t.add_column("SLO")
    for level, s, met in points:
        t.add_row(
            _level_text(level), str(s.requests - s.errors), str(s.errors), fmt_seconds(s.ttft_s.p50),
            fmt_seconds(s.ttft_s.p95), fmt_seconds(s.itl_s.p50), fmt_seconds(s.tpot_s.p50),
            fmt_seconds(s.e2e_s.p95), fmt_rate(s.request_throughput_per_s), fmt_rate(s.output_tokens_per_s),
            fmt_rate(s.goodput_requests_per_s), "" if met is None else ("met" if met else "missed"))
    return t


def compare_table(names: Sequence[str], summaries: Sequence[RunSummary]) -> Table:
    t = Table(title_justify="left")
    t.add_column("metric")
    for n in names:
        t.add_column(n, justify="right")
    if len(summaries) == 2:
        t.add_column("ratio", justify="right")

    def ratio(a: float | None, b: float | None) -> str:
        if a is None or b is None or a == 0:
            return "-"
        return f"{b / a:.2f}×"

    for label, key in METRICS:
        for st in ("p50", "p95", "p99"):
            vals = [getattr(s, key).get(st) for s in summaries]
            row = [f"{label} {st}", *(fmt_seconds(v) for v in vals)]
            if len(summaries) == 2:
                row.append(ratio(*vals))
            t.add_row(*row)
    for label, key in (("req/s", "request_throughput_per_s"), ("output tok/s", "output_tokens_per_s"),
                       ("total tok/s", "total_tokens_per_s")):
        vals = [getattr(s, key) for s in summaries]
        row = [label, *(fmt_rate(v) for v in vals)]
        if len(summaries) == 2:
            row.append(ratio(*vals))
        t.add_row(*row)
    for label, key in (("requests", "requests"), ("errors", "errors"), ("prompt tokens", "prompt_tokens"),
                       ("output tokens", "output_tokens")):
        row = [label, *(f"{getattr(s, key):,}" for s in summaries)]
        if len(summaries) == 2:
            row.append("")
        t.add_row(*row)
    return t
