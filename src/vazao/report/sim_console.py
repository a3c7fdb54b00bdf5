"""Rich tables for simulated runs: one summary, --compare variants, --rate/--concurrency points, the KV
timeline. Renderers format; every number comes computed from the library."""

from __future__ import annotations

from rich.table import Table

from vazao.report.fitted import FittedTable
from vazao.report.summary import summary_table as latency_table
from vazao.results import RunSummary
from vazao.units import fmt_rate, fmt_seconds


def header_lines(head: dict) -> list[str]:
    """What was simulated, printed above the tables (a table title would wrap to the table's width)."""
    return [f"[bold]{head['deployment']}[/] · workload {head['workload']} ({head['workload_description']})",
            head["config"]]


def summary_table(head: dict, s: RunSummary) -> Table:
    """The run's latency summary (report.summary's table; `head` is what was simulated, shown above it)."""
    return latency_table(s, first="latency")


def result_lines(r, slo) -> list[str]:
    s = r.summary
    lines = [
        f"throughput         {fmt_rate(s.request_throughput_per_s)} req/s · {fmt_rate(s.output_tokens_per_s)} "
        f"output tok/s · {fmt_rate(s.total_tokens_per_s)} total tok/s over {fmt_seconds(s.duration_s)}",
    ]
    if s.goodput_requests_per_s is not None:
        verdict = "[green]met[/]" if slo is not None and slo.met_by(s) else "[red]missed[/]"
        terms = ", ".join(f"{k}={fmt_seconds(v)}" for k, v in slo.limits.items())
        lines.append(f"goodput            {fmt_rate(s.goodput_requests_per_s)} req/s within {terms} "
                     f"(run percentiles: {verdict})")
    lines += [
        f"requests           {r.completed:,} completed, {r.errors:,} errors"
        + (f", {r.unfinished:,} unfinished" if r.unfinished else ""),
        f"batch              {r.mean_batch:,.1f} sequences per step on average, {r.peak_running:,} running at "
        f"most; {r.steps:,} steps",
        f"KV cache           {r.kv_capacity_tokens:,} tokens per replica ({r.kv_blocks_per_replica:,} blocks of "
        f"{r.block_size}); {r.preemptions:,} preemptions",
        f"prefill            {r.prefill_tokens:,} of {r.prompt_tokens:,} prompt tokens computed; prefix cache "
        f"served {r.cache_hit_share:.1%}",
        f"simulated in       {fmt_seconds(r.wall_s)} ({fmt_rate(r.simulated_requests_per_s)} requests/s)",
    ]
    t = r.tasks
    if t is not None:
        lines.append(f"tasks              {t.tasks:,} done" + (f", {t.incomplete:,} incomplete" if t.incomplete else "")
                     + f"; per task p50 {fmt_seconds(t.e2e_s.p50 or 0)}, p95 {fmt_seconds(t.e2e_s.p95 or 0)}, "
                     f"{t.requests_per_task:,.0f} calls, {t.prompt_tokens_per_task + t.output_tokens_per_task:,.0f} "
                     f"tokens ({t.cached_prompt_tokens_per_task:,.0f} prompt tokens from the cache)")
    e = r.energy
    if e is not None:
        j = "" if e.j_per_output_token is None else f", {e.j_per_output_token:.3g} J per output token"
        if e.electricity_usd_per_mtok is not None:
            j += f" (${e.electricity_usd_per_mtok:.3g} of electricity per M at a datacenter's PUE and $/kWh)"
        lines.append(f"energy             {e.mean_w_per_gpu:.0f} W per GPU on average ({e.serving_w_per_gpu:.0f} busy, "
                     f"{e.idle_w_per_gpu:.0f} idle; busy {e.busy_share:.0%} of the time){j}")
    if r.bands:
        shown = {"output_tokens_per_s": ("output tok/s", fmt_rate), "ttft_p95_s": ("TTFT p95", fmt_seconds),
                 "itl_p95_s": ("ITL p95", fmt_seconds), "tpot_p50_s": ("TPOT p50", fmt_seconds),
                 "e2e_p95_s": ("E2E p95", fmt_seconds)}
        parts = [f"{shown[k][0]} {shown[k][1](b[0])}–{shown[k][1](b[1])}" for k, b in r.bands.items()]
        notes = sorted({b[2] for b in r.bands.values() if b[2]})
        lines.append("80% band           " + " · ".join(parts) + (f" ([yellow]{'; '.join(notes)}[/])" if notes else ""))
    lines += [f"[yellow]warning:[/] {w}" for w in r.warnings]
    return lines


# (header, short header, keep rank): at a narrow terminal the lowest ranks are left out first
_VARIANT_COLS = (("req/s", None, 9), ("out tok/s", "tok/s", 9), ("× first", "×", 7), ("TTFT p50", "TTFT50", 4),
                 ("TTFT p95", "TTFT95", 8), ("TPOT p50", "TPOT50", 4), ("TPOT p95", "TPOT95", 8),
                 ("E2E p95", "E2E95", 6), ("mean batch", "batch", 3), ("preempt", "preem", 2))
_POINT_COLS = (("req/s", None, 9), ("out tok/s", "tok/s", 9), ("TTFT p50", "TTFT50", 4), ("TTFT p95", "TTFT95", 8),
               ("TPOT p50", "TPOT50", 4), ("TPOT p95", "TPOT95", 8), ("E2E p50", "E2E50", 3),
               ("E2E p95", "E2E95", 6), ("mean batch", "batch", 2))


def _banded(r, key: str, value: float | None, fmt) -> str:
    """A run's figure with its 80% band (SimResult.bands) when the run has one."""
    band = (r.bands or {}).get(key)
    text = fmt(value)
    return text if band is None or value is None else f"{text} ({fmt(band[0])}–{fmt(band[1])})"


def _columns(t: FittedTable, cols, goodput: bool) -> None:
    for header, short, keep in cols:
        t.add_column(header, short=short, keep=keep, justify="right")
    if goodput:
        t.add_column("goodput", short="good", keep=8, justify="right")


def variants_table(head: dict, variants, goodput: bool) -> Table:
    t = FittedTable()
    t.add_column("variant")  # the names are what the rows mean: never cut
    _columns(t, _VARIANT_COLS, goodput)
    for v in variants:
        s, r = v.result.summary, v.result
        row = [v.name, fmt_rate(s.request_throughput_per_s),
               _banded(r, "output_tokens_per_s", s.output_tokens_per_s, fmt_rate),
               f"{v.throughput_ratio:.2f}×", fmt_seconds(s.ttft_s.p50),
               _banded(r, "ttft_p95_s", s.ttft_s.p95, fmt_seconds),
               _banded(r, "tpot_p50_s", s.tpot_s.p50, fmt_seconds), fmt_seconds(s.tpot_s.p95),
               _banded(r, "e2e_p95_s", s.e2e_s.p95, fmt_seconds),
               f"{r.mean_batch:,.1f}", f"{r.preemptions:,}"]
        if goodput:
            row.append(fmt_rate(s.goodput_requests_per_s))
        t.add_row(*row)
    return t


def points_table(head: dict, points, goodput: bool) -> Table:
    t = FittedTable()
    kind = points[0].kind if points else "rate"
    t.add_column(kind, justify="right")
    _columns(t, _POINT_COLS, goodput)
    for p in points:
        s, r = p.result.summary, p.result
        row = [f"{p.value:g}", fmt_rate(s.request_throughput_per_s),
               _banded(r, "output_tokens_per_s", s.output_tokens_per_s, fmt_rate),
               fmt_seconds(s.ttft_s.p50), _banded(r, "ttft_p95_s", s.ttft_s.p95, fmt_seconds),
               _banded(r, "tpot_p50_s", s.tpot_s.p50, fmt_seconds),
               fmt_seconds(s.tpot_s.p95), fmt_seconds(s.e2e_s.p50), _banded(r, "e2e_p95_s", s.e2e_s.p95, fmt_seconds),
               f"{r.mean_batch:,.1f}"]
        if goodput:
            row.append(fmt_rate(s.goodput_requests_per_s))
        t.add_row(*row)
    return t


def timeline_table(points) -> Table:
    t = Table(title="KV cache over time", title_justify="left")
    for c in ("t", "KV blocks used", "KV holding tokens", "running", "waiting", "preemptions"):
        t.add_column(c, justify="right")
    for p in points:
        t.add_row(fmt_seconds(p.t_s), f"{p.kv_used:.0%}", f"{p.kv_tokens:.0%}", f"{p.running:,}",
                  f"{p.waiting:,}", f"{p.preemptions:,}")
    return t
