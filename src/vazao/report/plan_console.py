"""`vazao plan` on the console: what was searched, the ranked table, the winner and its binding
constraint, the Pareto front, and the next commands. Renders a PlanResult; computes nothing."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from vazao.plan.evaluate import Candidate
from vazao.plan.search import PlanResult

ROWS = 15


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v * 1e3:,.0f}" if v >= 0.0995 else f"{v * 1e3:.1f}"


def _usd(v: float | None, digits: int) -> str:
    return "no price" if v is None else f"{v:,.{digits}f}"


def _check_cell(c: Candidate, key: str) -> str:
    chk = next((k for k in c.checks if k.key == key), None)
    if chk is None:
        return "–"
    band = c.bands.get(key)
    text = _ms(chk.value)
    if band:
        text += f" ({_ms(band[0])}–{_ms(band[1])})"
    return text


def _status(c: Candidate) -> str:
    if c.source == "analytic":
        return "[dim]estimate[/dim]"
    if c.meets_slo:
        return "[green]meets[/green]"
    if c.marginal:
        return "[yellow]marginal[/yellow]"
    return f"[red]misses {c.binding}[/red]"


def gpus_cell(c: Candidate) -> str:
    s = c.shape
    par = f"tp{s.tp}" + (f"·pp{s.pp}" if s.pp > 1 else "")
    return f"{c.replicas}×{par} {s.gpu}" if c.replicas > 1 else f"{par} {s.gpu}"


def render_plan(console: Console, r: PlanResult, rows: int = ROWS) -> None:
    inp = r.inputs
    slo = ", ".join(f"{k} ≤ {_ms(v)} ms" for k, v in inp.slo.limits.items())
    console.print(f"plan: {inp.workload} at {inp.traffic.describe()}; SLO {slo}"
                  + (" (the default; set --slo)" if inp.slo_is_default else ""), highlight=False)
    sim = sum(1 for c in r.candidates if c.source == "simulated")
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(r.pruned_by_reason().items(), key=lambda kv: -kv[1]))
    console.print(f"searched {len(r.candidates) + len(r.pruned)} deployments: {sim} simulated, "
                  f"{len(r.candidates) - sim} estimated, {len(r.pruned)} pruned" + (f" ({reasons})" if reasons else "")
                  + f"; mean lengths {r.lengths.prompt_mean:.0f} in / {r.lengths.output_mean:.0f} out", highlight=False)
    keys = list(inp.slo.limits)
    t = Table(show_lines=False, pad_edge=False)
    for col in ("#", "model", "format / KV", "GPUs", "engine", "max batch"):
        t.add_column(col, justify="right" if col in ("#", "max batch") else "left")
    for k in keys:
        t.add_column(f"{k} ms", justify="right")
    for col in ("$/Mtok", "$/month", "quality", "status"):
        t.add_column(col, justify="right" if col.startswith("$") or col == "quality" else "left")
    for i, c in enumerate(r.candidates[:rows], 1):
        q = "–" if c.quality is None else f"{c.quality:.1%}"
        t.add_row(str(i), c.shape.model, f"{c.shape.fmt} / {c.kv_format}", gpus_cell(c), c.shape.engine,
                  str(c.max_batch), *(_check_cell(c, k) for k in keys), _usd(c.usd_per_mtok, 3),
                  _usd(c.usd_per_month, 0), q, _status(c))
    console.print(t)
    w = r.winner
    if w is not None:
        cost = (f"${w.usd_per_mtok:,.3f}/Mtok, ${w.usd_per_month:,.0f}/month" if w.usd_per_mtok is not None
                else "no rental price (give --gpu-price)")
        console.print(f"[bold]winner[/bold]: {w.shape.label()}, {w.replicas} replica(s), {w.count} GPU(s): "
                      f"{cost}; binding constraint {r.binding_constraint}", highlight=False)
    elif r.closest_miss is not None:
        m = r.closest_miss
        worst = max(m.checks, key=lambda k: k.ratio)
        console.print(f"[bold red]no deployment meets the SLO[/bold red]; closest: {m.shape.label()} × "
                      f"{m.replicas}, {worst.key} {_ms(worst.edge or worst.value)} ms against {_ms(worst.limit)} ms",
                      highlight=False)
    if r.pareto:
        console.print("Pareto front ($/Mtok, latency, quality): " + "; ".join(
            f"{c.shape.model} {c.shape.fmt} {gpus_cell(c)} ${c.usd_per_mtok:,.3f}" for c in r.pareto),
            highlight=False)
    if r.backend != "local":
        console.print(f"backend: {r.backend}", highlight=False)
    if w is not None:
        console.print("next: add --emit vllm (or sglang, llama.cpp, trtllm) for the launch command; "
                      "--json for every candidate", highlight=False)


def render_command(console: Console, cmd, bench: str) -> None:
    """The winner's launch command, each flag with why, and the bench that checks it."""
    console.print(f"\n[bold]launch ({cmd.engine})[/bold]  [dim]flags checked against {cmd.source}[/dim]")
    console.print(cmd.shell, highlight=False, soft_wrap=True)
    for flag, value, why in cmd.flags:
        console.print(f"  {flag} {value}".rstrip() + f"  [dim]# {why}[/dim]", highlight=False)
    for note in cmd.notes:
        console.print(f"  [yellow]note[/yellow]: {note}", highlight=False)
    console.print("\n[bold]then check it[/bold]", highlight=False)
    console.print(bench, highlight=False, soft_wrap=True)
