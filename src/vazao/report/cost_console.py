"""Rich tables for prices, bills, self-hosted cost, break-even, training, the prefix advisor and
budgets. Renderers format what the library computed; they do no arithmetic on money."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from rich.table import Table

from vazao.report.fitted import FittedTable
from vazao.units import fmt_rate


def usd(d: Decimal | None, places: int | None = None) -> str:
    """Dollars for reading: 4 decimals under $1 (6 under a cent), 2 above; exact text stays in --json."""
    if d is None:
        return "-"
    if places is None:
        a = abs(d)
        places = 6 if 0 < a < Decimal("0.01") else 4 if a < 1 else 2
    text = f"{d:,.{places}f}"
    while places > 4 and text.endswith("0"):  # $0.004800 -> $0.0048
        text, places = text[:-1], places - 1
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


def pct(d: Decimal | float | None) -> str:
    return "-" if d is None else f"{float(d):.1%}"


def rate(d: Decimal | None) -> str:
    return "-" if d is None else f"{d:g}"


# ---- prices -----------------------------------------------------------------------------------
def prices_table(tables: Sequence) -> Table:
    t = FittedTable(title="API prices, USD per million tokens", title_justify="left")
    t.add_column("id")
    t.add_column("provider", keep=3)
    t.add_column("input", justify="right", keep=10)
    t.add_column("output", justify="right", keep=10)
    t.add_column("cache read", short="cached", justify="right", keep=8)
    t.add_column("cache write (TTL:$)", short="write", prose=True, min_width=10, keep=6)
    t.add_column("batch", justify="right", keep=7)
    t.add_column("long context", short="long ctx", prose=True, min_width=10, keep=5)
    t.add_column("as of", keep=2)
    for p in tables:
        b = p.base
        writes = ", ".join(f"{k}:{rate(v)}" for k, v in b.cache_write.items()) or "= input"  # 5m:2.50, 1h:4
        long = "; ".join(f">{tier.above_input_tokens:,}: {rate(tier.rates.input)}/{rate(tier.rates.output)}"
                         for tier in p.tiers[1:]) or "-"
        disc = p.batch_discount
        batch = "-" if disc is None else f"-{float(disc):.0%}"
        t.add_row(p.id, p.provider, rate(b.input), rate(b.output), rate(b.cache_read),
                  writes if b.cache_read is not None else "-", batch, long, p.as_of)
    return t


def gpu_rental_table(accs: Sequence) -> Table:
    t = FittedTable(title="GPU rental, USD per GPU-hour (accelerator catalog)", title_justify="left")
    t.add_column("id")
    t.add_column("$/h", justify="right")
    t.add_column("as of", keep=3)
    t.add_column("source", prose=True, min_width=24, keep=2)
    t.add_column("name", prose=True, keep=1)
    for a in accs:
        t.add_row(a.id, f"{a.usd_per_hour:.2f}", a.price_as_of or "-", a.price_source or "-", a.name)
    return t


# ---- bills ------------------------------------------------------------------------------------
def bill_table(bill, title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("", "requests", "new input", "cache read", "cache write", "output", "reasoning", "USD"):
        t.add_column(col, justify="right" if col else "left")
    for ln in bill.lines:
        k = ln.tokens
        tier = f" [yellow](>{ln.tier_above_tokens:,} tier)[/]" if ln.tier_above_tokens else ""
        t.add_row(ln.label + tier, f"{ln.requests:,}", f"{k.new_input:,}", f"{k.cache_read:,}",
                  f"{k.cache_write:,}", f"{k.output:,}", f"{k.reasoning:,}", usd(ln.total_usd))
    k, c = bill.tokens, bill.charge
    t.add_row("[bold]total[/]", f"{bill.requests:,}", f"{k.new_input:,}", f"{k.cache_read:,}",
              f"{k.cache_write:,}", f"{k.output:,}", f"{k.reasoning:,}", f"[bold]{usd(bill.total_usd)}[/]")
    t.add_row("  USD", "", usd(c.new_input), usd(c.cache_read), usd(c.cache_write), usd(c.output),
              usd(c.reasoning), "")
    return t


def bill_footer(bill, per_day: int | None = None, per_day_usd: Decimal | None = None) -> list[str]:
    k = bill.tokens
    p = bill.price
    mode = "batch" if bill.batch else "standard"
    cache = f", cache TTL {bill.cache_ttl}" if bill.cache_ttl else ""
    lines = [
        f"price {p.id} ({p.provider}, as of {p.as_of}; {mode}{cache})",
        f"input {k.prompt_tokens:,} tokens ({k.cache_read:,} cached, {k.cache_write:,} written to cache) "
        f"= {usd(bill.charge.input_usd)}; output {k.billed_output:,} tokens"
        + (f" (of which {k.reasoning:,} reasoning)" if k.reasoning else "")
        + f" = {usd(bill.charge.output_usd)}",
        f"output is {pct(bill.output_share)} of the bill",
    ]
    if per_day is not None and per_day_usd is not None:
        lines.append(f"× {per_day:,} per day = [bold]{usd(per_day_usd, 2)}[/] per day")
    lines += [f"[yellow]note:[/] {n}" for n in bill.notes]
    return lines


def levers_table(levers: Sequence) -> Table:
    t = Table(title="Levers", title_justify="left")
    for col in ("change", "USD", "saving", "share"):
        t.add_column(col, justify="left" if col == "change" else "right")
    for lv in levers:
        t.add_row(lv.name, usd(lv.total_usd), usd(lv.saving_usd), pct(lv.saving_share))
    return t


def malformed_lines(count: int, items: Sequence[tuple[int, str]]) -> list[str]:
    if not count:
        return []
    out = [f"[yellow]{count} malformed line(s) skipped[/]"]
    out += [f"  line {n}: {reason}" for n, reason in items]
    if count > len(items):
        out.append(f"  … and {count - len(items)} more")
    return out


# ---- self-hosted ------------------------------------------------------------------------------
def usd_band(d: Decimal | None, band: Sequence[Decimal] | None, places: int | None = None) -> str:
    """'$0.1072 ($0.0871–$0.1354)': an amount and its 80% band, when it has one (a band of one value is not)."""
    if not band or d is None or band[0] == band[1] == d:
        return usd(d, places)
    return f"{usd(d, places)} ({usd(band[0], places)}–{usd(band[1], places)})"


def _short(x: float) -> str:
    """'3.9M', '640k', '87': a count to two or three figures, for a band beside its full figure."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.2g}{suffix}" if abs(x) < 10 * scale else f"{x / scale:.0f}{suffix}"
    return f"{x:.0f}"


def selfhost_lines(c) -> list[str]:
    tp = c.throughput
    b = tp.band
    out_rate = fmt_rate(tp.output_tokens_per_s, "output tok/s")
    if b is not None:
        out_rate += f" ({fmt_rate(b.low)}–{fmt_rate(b.high)})"
    if b is None:
        band_note = (["  80% band       none: a measured throughput"] if tp.source == "measured" else
                     ["  80% band       none: this engine profile is not calibrated (vazao calibrate)"])
    else:
        band_note = ["  80% band       (low–high): the engine profile's calibration residuals on the output rate; "
                     "the $ figures at its edges (at a fixed traffic: with the copies each edge needs; an amount "
                     "shown alone is the same at both)"
                     + (f"; [yellow]{b.note}[/]" if b.note else "")]
    return [
        f"[bold]{c.deployment}[/]",
        f"  price          {usd(c.usd_per_gpu_hour, 2)}/GPU-h × {c.gpus} = {usd(c.usd_per_hour, 2)}/h "
        f"({c.usd_per_gpu_hour_source})",
        f"  throughput     {out_rate}, "
        f"{fmt_rate(tp.input_tokens_per_s, 'input tok/s')}, {fmt_rate(tp.requests_per_s, 'req/s')} "
        f"[dim]({tp.source}: {tp.detail})[/]",
        f"  utilisation    {pct(c.utilisation)} of paid hours at that throughput",
        f"  $/M output     {usd_band(c.usd_per_mtok_output, c.usd_per_mtok_output_band)}  "
        "(all GPU time charged to output tokens)",
        f"  $/M tokens     {usd_band(c.usd_per_mtok_blended, c.usd_per_mtok_blended_band)}  (input + output, blended)",
        f"  split by time  {usd(c.usd_per_mtok_input_split)} per M input, {usd(c.usd_per_mtok_output_split)} "
        f"per M output" + (f" (prefill {pct(tp.input_time_share)} of GPU time)"
                           if tp.input_time_share is not None else " (needs the analytic model)"),
        f"  per request    {usd_band(c.usd_per_request, c.usd_per_request_band)}",
        *band_note,
        *energy_lines(c.energy),
    ]


def energy_lines(e) -> list[str]:
    """The electricity of a self-hosted cost (cost/energy.py), or why there is none."""
    if e is None:
        return ["  energy         unknown (no published power rating for this board, or a measured run)"]
    j = "-" if e.j_per_output_token is None else f"{e.j_per_output_token:.3g} J"
    kwh = "-" if e.kwh_per_mtok_output is None else f"{e.kwh_per_mtok_output:.3g} kWh"
    return [
        f"  power          {e.serving_w_per_gpu:.0f} W per GPU serving, {e.idle_w_per_gpu:.0f} W idle "
        f"[dim](from the steps' utilisation; physics/energy.py)[/]",
        f"  energy         {j} per output token at full load; {kwh} per M output at the wall "
        f"(PUE {e.site.pue:g})",
        f"  electricity    {usd(e.usd_per_hour, 4)}/h, {usd(e.usd_per_mtok_output)} per M output at "
        f"{usd(e.site.usd_per_kwh, 3)}/kWh [dim](in a rental price already)[/]",
    ]


def own_table(answer) -> Table:
    t = Table(title=f"Own, rent or API over {answer.horizon_months} months at "
              f"{answer.traffic_requests_per_s:g} requests/s ({answer.input_tokens:,} in / "
              f"{answer.output_tokens:,} out)", title_justify="left")
    for col in ("", "option", "GPUs", "up front", "a month", "total", "$/request", "$/M out", "J/out tok",
                "pays back vs"):
        t.add_column(col, overflow="fold")
    for i, o in enumerate(answer.options):
        e = o.cost.energy if o.cost is not None else None
        j = "-" if e is None or e.j_per_output_token is None else f"{e.j_per_output_token:.3g}"
        back = ""
        if o.payback_months:
            back = "; ".join(f"{alt}: " + ("never" if m is None else f"month {m}")
                             for alt, m in o.payback_months.items())
        t.add_row("[bold green]cheapest[/]" if i == 0 else "", o.label, str(o.gpus) if o.gpus else "-",
                  usd_band(o.upfront_usd, o.upfront_usd_band, 0), usd_band(o.monthly_usd, o.monthly_usd_band, 2),
                  usd_band(o.total_usd, o.total_usd_band, 0),
                  usd_band(o.usd_per_request, o.usd_per_request_band),
                  usd_band(o.usd_per_mtok_output, o.usd_per_mtok_output_band), j, back)
    return t


def own_lines(answer) -> list[str]:
    out = []
    if any(o.usd_per_request_band for o in answer.options):
        out.append("  (low–high): the 80% band of the predicted throughput, as the cards or GPU-hours its edges need "
                   "to carry this traffic (an amount shown alone is the same at both edges)")
    for o in answer.options:
        if o.terms is not None:
            t = o.terms
            out.append(f"  {o.label}: {usd(t.purchase_usd, 0)} a card ({t.purchase_source}), written off over "
                       f"{t.life_years:g} years, {pct(t.resale_share)} resold at the end, "
                       f"{usd(t.hosting_usd_per_gpu_month, 2)}/GPU-month hosting")
    for label, why in answer.refused.items():
        out.append(f"  [yellow]{label}: not an option[/] — {why}")
    return out


def breakeven_table(rows: Sequence, api_price: str, api_per_request: Decimal) -> Table:
    banded = any(r.capacity_band is not None for r in rows)
    t = Table(title=f"Break-even against {api_price} ({usd(api_per_request)} per request)", title_justify="left",
              caption="(low–high): the 80% band of the predicted throughput (the engine profile's residuals) and the "
              "$ figures at its edges" if banded else None, caption_justify="left")
    for col in ("", "deployment", "$/h", "capacity req/day", "$/request", "$/M out", "throughput from",
                "break-even req/day", "verdict"):
        t.add_column(col, overflow="fold")
    for i, r in enumerate(rows):
        c = r.selfhost
        be = "-" if r.breakeven_requests_per_day is None else f"{r.breakeven_requests_per_day:,.0f}"
        mark = "[bold green]best[/]" if i == 0 and r.breakeven_requests_per_day is not None else ""
        cap = f"{r.capacity_requests_per_day:,.0f}"
        if r.capacity_band is not None:
            cap += f" ({_short(r.capacity_band[0])}–{_short(r.capacity_band[1])})"
        t.add_row(mark, c.deployment, usd(c.usd_per_hour, 2), cap,
                  usd_band(c.usd_per_request, c.usd_per_request_band),
                  usd_band(c.usd_per_mtok_output, c.usd_per_mtok_output_band),
                  c.throughput.source, be, r.verdict)
    return t


def at_traffic_lines(rows: Sequence[dict], rps: float) -> list[str]:
    out = [f"[bold]at {rps:g} requests/s[/] (copies of each deployment to carry it):"]
    for r in rows:
        out.append(f"  {r['deployment']}: ${r['selfhost_usd_per_month']:,.0f}/month self-hosted vs "
                   f"${r['api_usd_per_month']:,.0f}/month API → {r['cheaper']} cheaper")
    return out


def trend_header_lines(trend) -> list[str]:
    """What a projection is: a named, cited scenario (never a forecast), and its caveat."""
    s = trend.scenario
    return [f"[bold]{s.label}[/]", f"  caveat: {s.caveat}",
            f"  monthly factors: API price ×{s.api_monthly_factor:.4f}, GPU $/h ×{s.gpu_monthly_factor:.4f}, "
            f"tokens per task ×{s.tokens_monthly_factor:.4f}" +
            (f" (× {s.tokens_per_task_multiplier} from month 0)" if s.tokens_per_task_multiplier != 1 else "")]


def trend_table(projection, scenario_id: str) -> Table:
    """One deployment's break-even month by month under a scenario."""
    t = Table(title=f"{projection.deployment} against the API, month by month (scenario {scenario_id})",
              title_justify="left")
    traffic = projection.months[0].cheaper is not None
    cols = ["month", "API $/Mtok", "self-host $/Mtok", "break-even req/day"]
    cols += ["API $/month", "self-host $/month", "cumulative saved self-hosting", "winner"] if traffic else ["winner"]
    for col in cols:
        t.add_column(col, justify="left" if col == "winner" else "right")
    for m in projection.months:
        be = "API at any load" if m.breakeven_requests_per_day is None else f"{m.breakeven_requests_per_day:,.0f}"
        row = [str(m.month), usd(m.api_usd_per_mtok),
               usd_band(m.selfhost_usd_per_mtok, m.selfhost_usd_per_mtok_band), be]
        if traffic:
            row += [usd(m.api_usd_per_month, 2), usd(m.selfhost_usd_per_month, 2),
                    usd(m.cumulative_selfhost_saving_usd, 2), m.cheaper or "-"]
        else:
            row += ["api" if m.breakeven_requests_per_day is None else "by load"]
        t.add_row(*row)
    return t


def training_lines(tc) -> list[str]:
    kind = "LoRA fine-tune" if tc.lora else "full training"
    return [
        f"[bold]{kind}[/]: {tc.params / 1e9:,.3g}B parameters × {tc.tokens / 1e9:,.4g}B tokens "
        f"× {tc.flops_per_param_token} = {tc.flops:.3g} FLOPs",
        f"  {tc.gpu}: {tc.peak_flops_per_gpu / 1e12:,.0f} TFLOP/s {tc.dtype} dense × MFU {tc.mfu:.0%} "
        f"= {tc.achieved_flops_per_s / tc.gpus / 1e12:,.0f} TFLOP/s per GPU",
        f"  {tc.gpu_hours:,.0f} GPU-hours; {tc.wall_hours:,.0f} h ({tc.wall_hours / 24:,.1f} days) on {tc.gpus} GPU(s)",
        f"  {usd(tc.usd_per_gpu_hour, 2)}/GPU-h ({tc.usd_per_gpu_hour_source}) → [bold]{usd(tc.usd, 2)}[/]",
    ] + ([f"  LoRA: {tc.fraction_of_full:.0%} of a full fine-tune's FLOPs on the same tokens"] if tc.lora else [])


# ---- prefix advisor ---------------------------------------------------------------------------
def prefix_lines(r) -> list[str]:
    c = r.cache
    lines = [
        f"[bold]{r.requests:,} requests[/], {r.prompt_tokens:,} prompt tokens ({r.unit}s; blocks of "
        f"{r.block_units} {r.unit}s; cache TTL {'none' if r.ttl_s is None else f'{r.ttl_s:g} s'})",
        f"  prefix shared by every request: {r.static_prefix_tokens:,} tokens, "
        f"ending …{r.static_prefix_tail[-50:]!r}",
        f"  longest prefix shared by at least half: {r.majority_prefix_tokens:,} tokens "
        f"({r.majority_requests} requests)",
        f"  cache hit rate {pct(c.hit_rate)}: {c.cached_tokens:,} tokens read, {c.cache_write_tokens:,} written",
        f"  input bill under {r.price}: {usd(c.uncached_usd)} uncached → {usd(c.cached_usd)} cached "
        f"(saves {usd(c.savings_usd)}, {pct(c.savings_share)})",
    ]
    if r.after_fix is not None:
        a = r.after_fix
        lines.append(f"  with volatile content moved to the end: hit rate {pct(a.hit_rate)}, "
                     f"{usd(a.cached_usd)} (saves {usd(a.savings_usd)}, {pct(a.savings_share)})")
    return lines


def volatile_table(findings: Sequence) -> Table:
    t = Table(title="Volatile content that breaks the prefix", title_justify="left")
    for col in ("kind", "after", "≈ token", "requests", "static tokens after", "examples"):
        t.add_column(col, overflow="fold")
    for f in findings:
        t.add_row(f.kind, repr(f.anchor[-30:]), f"{f.position_tokens:,}", str(f.requests),
                  f"{f.static_after_tokens:,}", "; ".join(repr(e[:40]) for e in f.examples))
    return t


# ---- budgets ----------------------------------------------------------------------------------
def budget_table(result) -> Table:
    t = Table(title="Budget check", title_justify="left")
    for col in ("task", "price", "cost/task", "margin", "checks", "result"):
        t.add_column(col, overflow="fold")
    for task in result.tasks:
        checks = []
        for c in task.checks:
            mark = "[green]✓[/]" if c.ok else "[dim]–[/]" if c.ok is None else "[red]✗[/]"
            sign = "≥" if c.what == "margin" else "≤"
            checks.append(f"{mark} {c.what} {c.actual} {sign} {c.limit}")
        verdict = "[green]pass[/]" if task.passed else "[bold red]FAIL[/]"
        t.add_row(task.name, task.price, usd(task.cost_usd), usd(task.margin_usd), "\n".join(checks) or "-", verdict)
    return t
