"""Console views of bench results: one run's latency table and totals, a sweep's row per level,
and runs side by side (loadgen.runs.Comparison). From typed results to rich Tables and lines; the
figures are computed where the results are made."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from vazao.loadgen.runs import Comparison, ComparisonRow
from vazao.loadgen.session import level_label
from vazao.report.summary import summary_table as latency_table
from vazao.results import SLO, RunSummary
from vazao.units import fmt_rate, fmt_seconds

if TYPE_CHECKING:
    from vazao.loadgen.session import BenchResult

__all__ = ["compare_table", "log_view", "result_view", "summary_lines", "summary_table", "sweep_table"]


def summary_table(s: RunSummary, title: str | None = None) -> Table:
    """One run's latency summary (report.summary's table)."""
    return latency_table(s, "metric", title)


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


def sweep_table(points: Sequence[tuple[Mapping[str, Any], RunSummary, bool | None]]) -> Table:
    t = Table(title_justify="left")
    for col in ("load", "ok", "err", "TTFT p50", "TTFT p95", "ITL p50", "TPOT p50", "E2E p95", "req/s",
                "out tok/s", "goodput"):
        t.add_column(col, justify="right")
    t.add_column("SLO")
    for level, s, met in points:
        t.add_row(
            level_label(level, short=True), str(s.requests - s.errors), str(s.errors), fmt_seconds(s.ttft_s.p50),
            fmt_seconds(s.ttft_s.p95), fmt_seconds(s.itl_s.p50), fmt_seconds(s.tpot_s.p50),
            fmt_seconds(s.e2e_s.p95), fmt_rate(s.request_throughput_per_s), fmt_rate(s.output_tokens_per_s),
            fmt_rate(s.goodput_requests_per_s), "" if met is None else ("met" if met else "missed"))
    return t


def _cell(row: ComparisonRow, v: float | int | None) -> str:
    if row.unit == "s":
        return fmt_seconds(v)
    if row.unit == "rate":
        return fmt_rate(v)
    return f"{v:,}"


def compare_table(c: Comparison) -> Table:
    t = Table(title_justify="left")
    t.add_column("metric")
    for n in c.names:
        t.add_column(n, justify="right")
    if c.paired:
        t.add_column("ratio", justify="right")
    for row in c.rows:
        cells = [row.label, *(_banded_cell(row, i, v) for i, v in enumerate(row.values))]
        if c.paired:
            ratio = "" if row.unit == "count" else "-" if row.ratio is None else f"{row.ratio:.2f}×"
            if row.inside is not None:  # the measurement against the prediction's 80% band
                ratio += " in band" if row.inside else " [yellow]outside band[/]"
            cells.append(ratio)
        t.add_row(*cells)
    if any(b for row in c.rows for b in row.bands):
        t.caption = "(low–high): a prediction's 80% band (the engine profile's residuals)"
        t.caption_justify = "left"
    return t


def _banded_cell(row: ComparisonRow, i: int, v: float | int | None) -> str:
    band = row.bands[i] if i < len(row.bands) else None
    text = _cell(row, v)
    return text if band is None or v is None else f"{text} ({_cell(row, band[0])}–{_cell(row, band[1])})"


# ---- whole views: a list of tables and lines, in order, for the CLI to print ------------------------
# A line is (markup prefix, text): the text holds server words and is never read as markup.
Line = tuple[str, str]


def result_view(result: BenchResult, out_path: Path | None) -> list[Table | Line]:
    """What `vazao bench` prints after a run."""
    cfg = result.config
    pre = result.preflight
    model = pre.model if pre else cfg.target.model
    head = cfg.target.safe_url + (f"  model {model}" if model else "")
    if result.workload is not None:
        head += f"  workload {result.workload.name}: {result.workload.describe()}"
    out: list[Table | Line] = [("", head)]
    if result.sweep:
        slo = cfg.slo
        out.append(sweep_table([(lv.level, lv.summary, slo.met_by(lv.summary) if slo else None)
                                for lv in result.levels]))
        if result.search:
            best = result.best
            out.append(("", f"highest {result.search} meeting the SLO: "
                            f"{best.level[result.search] if best else 'none of the levels tried'}"))
    if result.summary is not None:
        title = "measured" if not result.sweep else (
            f"best level ({result.best.level})" if result.best else f"last level ({result.levels[-1].level})")
        out.append(summary_table(result.summary, title))
        out.extend(("", line) for line in summary_lines(result.summary))
    data = result.to_json()
    client = data["client"]
    if client:
        per = f", {client['us_per_chunk']:.0f} µs per chunk" if client.get("us_per_chunk") else ""
        out.append(("", f"client CPU: {client['share_of_core']:.0%} of a core "
                        f"(peak {client['peak_share_of_core']:.0%}){per}"))
    srcs = data["tokens"]
    out.append(("", f"token counts from: output {_fmt_counts(srcs['output'])}; prompt {_fmt_counts(srcs['prompt'])}"))
    srv = data["server"]
    if srv.get("engine") or srv.get("server_vs_client"):
        line = f"server: {srv.get('engine') or 'unknown engine'}"
        for name, v in (srv.get("server_vs_client") or {}).items():
            line += f"; {name}: server {v['server']:,.0f} vs client {v['client']:,}"
        out.append(("", line))
    out.extend(("[yellow]warning:[/] ", w) for w in result.warnings)
    kept = f"records: {cfg.records_path}" if result.records_kept else "records: none (no request reached the server)"
    out.append(("", kept + (f"; result: {out_path}" if out_path else "")))
    return out


def _fmt_counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in c.items()) or "-"


def log_view(data: dict[str, Any], path: Path, slo: SLO | None) -> list[Table | Line]:
    """What `vazao summarize` prints: loadgen.runs.log_summary's result."""
    out: list[Table | Line] = []
    if data.get("points"):
        out.append(sweep_table([(p, p["summary"], slo.met_by(p["summary"]) if slo else None)
                                for p in data["points"]]))
    s: RunSummary = data["summary"]
    out.append(summary_table(s, f"{path}"))
    out.extend(("", line) for line in summary_lines(s))
    if data["errors"]:
        out.append(("", "errors: " + ", ".join(f"{k} ×{v}" for k, v in data["errors"].items())))
    if data["warmup_excluded"]:
        out.append(("", f"{data['warmup_excluded']} warm-up requests excluded"))
    if data["malformed_lines"]:
        out.append(("", f"{data['malformed_lines']} unreadable lines skipped (a run cut short mid-line)"))
    if not data["complete"]:
        out.append(("", "the run did not finish (no end line): this summary covers what was recorded"))
    return out
