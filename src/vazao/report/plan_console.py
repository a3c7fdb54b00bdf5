"""`vazao plan` on the console: what was searched, the ranked table, the winner and its binding
constraint, the Pareto front, and the next commands. Renders a PlanResult; computes nothing."""

from __future__ import annotations

from rich.console import Console

from vazao.plan.evaluate import Candidate
from vazao.plan.search import PlanResult
from vazao.report.fitted import FittedTable

ROWS = 15


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v * 1e3:,.0f}" if v >= 0.0995 else f"{v * 1e3:.1f}"


def _usd(v: float | None, digits: int) -> str:
    return "no price" if v is None else f"{v:,.{digits}f}"


def _check_cell(c: Candidate, key: str) -> str:
    chk = next((k for k in c.checks if k.key == key), None)
    return "–" if chk is None else _ms(chk.value)


def _band_cell(c: Candidate, key: str) -> str:
    band = c.bands.get(key)
    return f"{_ms(band.low)}–{_ms(band.high)}" if band else "–"


def _status(c: Candidate) -> str:
    if c.source == "analytic":
        return "[dim]estimate[/dim]"
    if c.meets_slo:
        return "[green]meets[/green]"
    if c.marginal:
        return "[yellow]marginal[/yellow]"
    return f"[red]misses {c.binding}[/red]"


def gpus_cell(c: Candidate) -> str:
    return f"{c.layout()} {c.shape.gpu}"


def _per(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def render_plan(console: Console, r: PlanResult, rows: int = ROWS, emitted: bool = False) -> None:
    """The plan's table, winner, energy, Pareto front and what to run next (`emitted`: the launch command
    follows, so the hint does not ask for it)."""
    inp = r.inputs
    throughput = inp.objective == "throughput"
    slo = ", ".join(f"{k} ≤ {_ms(v)} ms" for k, v in inp.slo.limits.items())
    what = (f"the most output tok/s per GPU on {inp.gpu_count} GPUs" if throughput
            else f"the cheapest deployment at {inp.traffic.describe()}")
    console.print(f"plan: {inp.workload}, {what}; SLO {slo}"
                  + (" (the default; set --slo)" if inp.slo_is_default else "") + f", {inp.slo.held}",
                  highlight=False)
    sim = sum(1 for c in r.candidates if c.source == "simulated")
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(r.pruned_by_reason().items(), key=lambda kv: -kv[1]))
    console.print(f"searched {len(r.candidates) + len(r.pruned)} deployments: {sim} simulated, "
                  f"{len(r.candidates) - sim} estimated, {len(r.pruned)} pruned" + (f" ({reasons})" if reasons else "")
                  + f"; mean lengths {r.lengths.prompt_mean:.0f} in / {r.lengths.output_mean:.0f} out", highlight=False)
    keys = list(inp.slo.limits)
    # Ids, GPUs, the SLO terms (with their bands), the objective's figure and the status are never left
    # out; on a narrow terminal the others go, least telling first (FittedTable names them in a caption).
    t = FittedTable()
    t.add_column("#", justify="right")
    t.add_column("model")
    t.add_column("format / KV", short="fmt/KV")
    t.add_column("GPUs")
    t.add_column("engine", keep=9)
    t.add_column("max batch", justify="right", keep=3, short="batch")
    banded = [k for k in keys if any(k in c.bands for c in r.candidates[:rows])]
    for k in keys:
        t.add_column(f"{k} ms", justify="right", short=k.split("_", 1)[0])
        if k in banded:  # the 80% band beside its figure; the last columns to go on a narrow terminal
            t.add_column("80% band", justify="right", keep=8)
    if throughput:
        t.add_column("tok/s /GPU", justify="right", short="tok/s/GPU")
        t.add_column("tok/s /user", justify="right", keep=6, short="tok/s/u")
        t.add_column("req/s", justify="right", keep=2)
    t.add_column("$/Mtok", justify="right", keep=4)
    t.add_column("$/month", justify="right", keep=None if not throughput else 5)
    t.add_column("quality", justify="right", keep=1)
    t.add_column("status")
    for i, c in enumerate(r.candidates[:rows], 1):
        q = "–" if c.quality is None else f"{c.quality:.1%}"
        figures = (_per(c.tokens_per_s_per_gpu), _per(c.tokens_per_s_per_user), _per(c.capacity_req_s)) \
            if throughput else ()
        t.add_row(str(i), c.shape.model, f"{c.shape.fmt} / {c.kv_format}", gpus_cell(c), c.shape.engine,
                  str(c.max_batch), *(x for k in keys for x in ((_check_cell(c, k), _band_cell(c, k))
                                                                if k in banded else (_check_cell(c, k),))),
                  *figures, _usd(c.usd_per_mtok, 3),
                  _usd(c.usd_per_month, 0), q, _status(c))
    console.print(t)
    w = r.winner
    if w is not None:
        cost = (f"${w.usd_per_mtok:,.3f}/Mtok, ${w.usd_per_month:,.0f}/month" if w.usd_per_mtok is not None
                else "no rental price (give --gpu-price)")
        rate = (f"{_per(w.tokens_per_s_per_gpu)} output tok/s per GPU at {_per(w.tokens_per_s_per_user)} tok/s "
                f"per user ({_per(w.capacity_req_s)} req/s); " if throughput else "")
        console.print(f"[bold]winner[/bold]: {w.shape.label()}, {w.replicas} replica(s), {w.count} GPU(s): "
                      f"{rate}{cost}; binding constraint {r.binding_constraint}", highlight=False)
        if w.power_w_per_gpu is not None:
            j = "" if w.j_per_output_token is None else f", {w.j_per_output_token:.3g} J per output token"
            if w.electricity_usd_per_mtok is not None:
                j += f", ${w.electricity_usd_per_mtok:.3g} of electricity per M"
            paid = "in the owned price" if r.inputs.buy else "in the rental price"
            console.print(f"energy: {w.power_w_per_gpu:.0f} W per GPU over the judged run{j} "
                          f"(physics/energy.py; {paid})", highlight=False)
    elif r.closest_miss is not None:
        m = r.closest_miss
        worst = max(m.checks, key=lambda k: k.ratio)
        console.print(f"[bold red]no deployment meets the SLO[/bold red]; binding constraint {r.binding_constraint}; "
                      f"closest: {m.shape.label()} as {m.layout()}, {worst.key} {_ms(worst.judged)} ms "
                      f"against {_ms(worst.limit)} ms", highlight=False)
        marginal = sum(1 for c in r.candidates if c.marginal)
        if marginal:
            console.print(f"{marginal} deployment(s) meet it by the prediction but not by its band's pessimistic "
                          "edge (marginal): --judge prediction takes the prediction, or measure one with "
                          "`vazao bench`", highlight=False)
    if r.pareto:
        console.print("Pareto front ($/Mtok, latency, quality): " + "; ".join(
            f"{c.shape.model} {c.shape.fmt} {gpus_cell(c)} ${c.usd_per_mtok:,.3f}" for c in r.pareto),
            highlight=False)
    if r.backend != "local":
        console.print(f"backend: {r.backend}", highlight=False)
    if w is not None:
        hint = "" if emitted else "add --emit vllm (or sglang, llama.cpp, trtllm) for the launch command; "
        console.print(f"next: {hint}--json for every candidate", highlight=False)


def _one_command(console: Console, title: str, cmd) -> None:
    console.print(f"\n[bold]{title} ({cmd.engine})[/bold]  [dim]flags checked against {cmd.source}[/dim]")
    console.print(cmd.shell, highlight=False, soft_wrap=True)
    for flag, value, why in cmd.flags:
        console.print(f"  {flag} {value}".rstrip() + f"  [dim]# {why}[/dim]", highlight=False)
    for note in cmd.notes:
        console.print(f"  [yellow]note[/yellow]: {note}", highlight=False)
    for name, text in getattr(cmd, "files", ()):
        console.print(f"  [bold]{name}[/bold] [dim](the command reads it: write it in the folder it runs in; "
                      "--emit-dir does)[/dim]", highlight=False)
        for line in text.splitlines():
            console.print(f"    {line}", highlight=False, markup=False)


def render_command(console: Console, launch, bench: str) -> None:
    """The winner's launch command (a disaggregated deployment: each server and the router), each flag with
    why, and the bench that checks it."""
    if hasattr(launch, "instances"):
        for i in launch.instances:
            _one_command(console, f"{i.role} server {i.index} on :{i.port}", i.command)
        _one_command(console, "router, the endpoint", launch.router)
    else:
        _one_command(console, "launch", launch)
    console.print("\n[bold]then check it[/bold]", highlight=False)
    console.print(bench, highlight=False, soft_wrap=True)
