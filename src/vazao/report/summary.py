"""The one latency summary of a run: each metric (results.LATENCIES) × its mean and percentiles, from a
RunSummary. The console tables of `vazao simulate` and `vazao bench` and the HTML report's summary rows
are views of it, so the three show the same metrics in the same order under the same names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from vazao.results import LATENCIES, RunSummary
from vazao.units import fmt_seconds

STATS = ("mean", "p50", "p90", "p95", "p99")


def latency_grid(s: RunSummary, stats: Sequence[str] = STATS) -> list[tuple[str, tuple[float | None, ...]]]:
    """(metric label, its value at each of `stats`) per latency, in seconds; None where the run has none."""
    return [(label, tuple(getattr(s, key).get(st) for st in stats)) for label, key in LATENCIES]


def summary_table(s: RunSummary, first: str = "metric", title: str | None = None) -> Table:
    """The console view: a row per metric, a column per statistic."""
    t = Table(title=title, title_justify="left")
    t.add_column(first)
    for st in STATS:
        t.add_column(st, justify="right")
    for label, values in latency_grid(s):
        t.add_row(label, *(fmt_seconds(v) for v in values))
    return t


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v * 1e3:,.1f}"


def _num(v: Any, fmt: str) -> str:
    return "–" if not isinstance(v, (int, float)) else format(v, fmt)


def summary_rows(summary: RunSummary | Mapping[str, Any]) -> list[tuple[str, str]]:
    """The HTML report's view: (metric, value) rows, the latencies at p50, p95 and p99 in ms, then the
    counts and rates. A summary's JSON (a file read back) is read as a RunSummary first."""
    s = summary if isinstance(summary, RunSummary) else RunSummary.from_json(summary)
    stats = ("p50", "p95", "p99")
    rows = [(f"{label} {st} (ms)", _ms(v)) for label, values in latency_grid(s, stats)
            for st, v in zip(stats, values, strict=True)]
    rows += [("requests", _num(s.requests, ",d")), ("errors", _num(s.errors, ",d")),
             ("requests/s", _num(s.request_throughput_per_s, ",.2f")),
             ("output tokens/s", _num(s.output_tokens_per_s, ",.1f")),
             ("goodput requests/s", _num(s.goodput_requests_per_s, ",.2f"))]
    return rows
