"""`vazao plan`: parse → run_plan → render (console or JSON)."""

from __future__ import annotations

from pathlib import Path

import typer

from vazao import inputs
from vazao.cli.app import JSON, JUDGE, QUIET, app, console, emit_json, err_console, show_progress
from vazao.cli.plotting import PLOT, check_plot, write_plot
from vazao.errors import VazaoError


def _names(text: str, what: str) -> tuple[str, ...]:
    return tuple(inputs.split_list(text, what, max_items=64))


def _check_names(models, gpus, formats, engines, kvs) -> None:
    """Unknown names are one line with the closest matches, before any work."""
    from vazao.catalog.formats import get_format, get_kv_format
    from vazao.catalog.local import resolve_accelerator
    from vazao.catalog.models import load_model
    from vazao.physics.profiles import get_engine

    for m in models:
        load_model(m)
    for g in gpus:
        resolve_accelerator(g)
    for f in formats:
        get_format(f)
    for e in engines:
        get_engine(e)
    for k in kvs:
        get_kv_format(k)


def _prices(items: list[str]) -> dict[str, float]:
    from vazao.catalog.local import resolve_accelerator

    out = {}
    for item in items:
        gpu, sep, usd = item.partition("=")
        if not sep:
            raise VazaoError(f"--gpu-price {item[:40]!r}: expected GPU=USD_PER_HOUR, e.g. rtx-3060=0.08")
        out[resolve_accelerator(gpu.strip()).id] = float(inputs.number(usd, f"--gpu-price {gpu}", minimum=0.0,
                                                                     maximum=1e4))
    return out


@app.command("plan")
def plan_cmd(
    models: str = typer.Option(..., "--models", "-m", help="Comma-separated models (catalog names or files)."),
    gpus: str = typer.Option(..., "--gpus", "-g", help="Comma-separated accelerator ids."),
    formats: str = typer.Option("bf16", "--formats", "-f", help="Comma-separated weight formats to try."),
    workload: str = typer.Option("chat", "--workload", "-w", help="Workload YAML or built-in name."),
    traffic: str = typer.Option("10/s", "--traffic", help="Request rate (20/s) or concurrency (c32)."),
    objective: str = typer.Option("cost", "--objective", help="cost: the cheapest deployment for --traffic; "
                                  "throughput: the most output tok/s per GPU on --gpu-count GPUs."),
    gpu_count: int | None = typer.Option(None, "--gpu-count", help="GPUs every deployment uses (throughput)."),
    user_tps: float | None = typer.Option(None, "--user-tps", help="Least tok/s per user: adds tpot_mean ≤ 1/X "
                                                                   "to the SLO (its default keeps only TTFT)."),
    curves: int | None = typer.Option(None, "--curves", help="Latency-throughput curves of the best N (default "
                                                             "3 with --json or --plot, else 0)."),
    disagg: bool = typer.Option(True, "--disagg/--no-disagg", help="Also try the best deployments as prefill and "
                                                                   "decode pools (vLLM, SGLang)."),
    slo: str | None = typer.Option(None, "--slo", help="Latency limits, e.g. ttft_p95=500ms,tpot_p95=40ms "
                                                       "(default ttft_p95=1s,tpot_p95=50ms)."),
    judge: str = JUDGE,
    engines: str | None = typer.Option(None, "--engines", "-e", help="Engine profiles to try (default: each "
                                                                     "GPU's default engine)."),
    kv: str | None = typer.Option(None, "--kv", help="KV-cache dtypes to try (default: the engine's own)."),
    max_gpus: int = typer.Option(8, "--max-gpus", help="Most GPUs a deployment may use (replicas × tp × pp)."),
    quality_floor: float | None = typer.Option(None, "--quality-floor",
                                               help="Least published quality recovery vs 16-bit (0-1)."),
    quality_file: Path | None = typer.Option(None, "--quality", help="Quality rows (vazao quality -o) used "
                                             "before the catalog's for their family and format."),
    requests: int = typer.Option(400, "--requests", help="Simulated requests per deployment."),
    simulate_top: int = typer.Option(48, "--simulate-top", help="Deployments simulated, cheapest estimate first "
                                     "(as many more, twice at most, while none meets the SLO)."),
    emit: str | None = typer.Option(None, "--emit", help="Print the winner's launch command for this engine "
                                                         "(vllm, sglang, llama.cpp, trtllm)."),
    emit_dir: Path | None = typer.Option(None, "--emit-dir", help="Write the winner's serve.sh, compose.yaml, "
                                         "k8s.yaml and bench.sh into this folder (for --emit's engine if given)."),
    force: bool = typer.Option(False, "--force", help="Replace the files in an existing, non-empty --emit-dir."),
    against_api: str | None = typer.Option(None, "--against-api", help="Compare with this API price id."),
    backend: str = typer.Option("local", "--backend", help="local (processes) or ray."),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (auto, ray://host:port)."),
    fallback_local: bool = typer.Option(False, "--fallback-local", help="Run locally if Ray is unreachable."),
    workers: int | None = typer.Option(None, "--workers", help="Local processes (default: every core)."),
    gpu_price: list[str] = typer.Option([], "--gpu-price", help="$/GPU-hour for an accelerator, e.g. "
                                                                "rtx-3060=0.08 (repeatable; owned hardware)."),
    profile: Path | None = typer.Option(None, "--profile", help="A calibrated profile file (vazao calibrate -o)."),
    seed: int | None = typer.Option(None, "--seed", help="Workload seed (default: the workload's own, as cost and "
                                                        "bench draw it)."),
    support_horizon: str | None = typer.Option(
        None, "--support-horizon", help="Leave out GPUs whose support by the engine has ended or is announced "
        "to end within this span (24mo, 2y; engine_support.yaml); default: try them, with a note."),
    buy: bool = typer.Option(False, "--buy", help="Price GPUs as bought, not rented: the published purchase "
                             "price over the card's life plus electricity at the candidate's draw (as `vazao "
                             "cost own`); cards with no published price are left out."),
    plot: Path = PLOT,
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """The cheapest deployment that meets the SLO at this traffic: ranked, with its Pareto front,
    the binding constraint and the command that launches it. Exit 1 when nothing meets the SLO.
    --plot draws the Pareto front of $/Mtok against latency."""
    from vazao.plan import DEFAULT_SLO, PlanInputs, Traffic, run_plan
    from vazao.results import SLO

    m, g, f = _names(models, "--models"), _names(gpus, "--gpus"), _names(formats, "--formats")
    e = _names(engines, "--engines") if engines else ()
    k = _names(kv, "--kv") if kv else ()
    _check_names(m, g, f, e, k)
    if workers is not None:
        inputs.number(workers, "--workers", minimum=1, maximum=256, integer=True)
    if profile is not None:
        from vazao.physics.profiles import load_profiles

        load_profiles(profile)
    from vazao.plan.space import slo_with_user_tps

    if objective == "throughput" and gpu_count is None:
        raise VazaoError("--objective throughput needs --gpu-count N: the GPUs every deployment spreads over")

    limits = slo_with_user_tps(SLO.parse(slo or DEFAULT_SLO).judged_by(judge), user_tps, slo_given=slo is not None)
    if curves is None:
        curves = 3 if (json_out or plot is not None) else 0
    inp = PlanInputs(workload=workload, traffic=Traffic.parse(traffic), slo=limits,
                     models=m, gpus=g, formats=f, engines=e, kv_formats=k, max_gpus=max_gpus,
                     quality_floor=quality_floor,
                     quality_file=str(quality_file) if quality_file else None, requests=requests,
                     simulate_top=simulate_top, seed=seed,
                     profile=str(profile) if profile else None, slo_is_default=slo is None and user_tps is None,
                     gpu_prices=_prices(gpu_price), objective=objective, gpu_count=gpu_count, curves=curves,
                     disagg=disagg, support_horizon_months=(inputs.months(support_horizon, "--support-horizon")
                                                            if support_horizon is not None else None),
                     buy=buy)
    inp.check_workload()
    if emit is not None:
        from vazao.physics.profiles import get_engine

        get_engine(emit)
    if against_api is not None:
        from vazao.catalog.prices import get_price

        get_price(against_api)
    if emit_dir is not None:
        from vazao.plan.artefacts import check_directory

        check_directory(emit_dir, force=force)
    check_plot(plot)
    from vazao.report.progress import progress_bar

    with progress_bar("simulating deployments", enabled=show_progress(json_out, quiet)) as show:
        result = run_plan(inp, workers=workers, backend=backend, address=address, fallback_local=fallback_local,
                          progress=show)
    _finish(result, emit=emit, against_api=against_api, json_out=json_out, plot=plot, quiet=quiet,
            emit_dir=emit_dir, force=force)


def _plot(result, plot: Path | None, json_out: bool, quiet: bool) -> None:
    if plot is not None and result.candidates:
        from vazao.plan.output import plan_json
        from vazao.report.plan_report import plan_report

        write_plot(plan_report(plan_json(result)), plot, json_out=json_out, quiet=quiet)


def _finish(result, *, emit: str | None, against_api: str | None, json_out: bool, plot: Path | None = None,
            quiet: bool = False, emit_dir: Path | None = None, force: bool = False) -> None:
    from vazao.plan.output import plan_json
    from vazao.report.plan_console import render_plan

    if not result.candidates:
        reasons = ", ".join(f"{n} {why}" for why, n in result.pruned_by_reason().items())
        first = result.pruned[0] if result.pruned else None
        detail = f"; e.g. {first.shape.label()}: {first.detail}" if first else ""
        if json_out:
            emit_json(plan_json(result))
        err_console.print(f"error: every deployment was pruned ({reasons}){detail}", highlight=False)
        raise typer.Exit(1)
    api = _api(result, against_api) if against_api else None
    commands = _commands(result)
    launch = None
    if emit is not None and result.winner is not None:
        from vazao.plan.emit import launch_for

        launch = launch_for(result.winner, result.lengths, emit)
    emitted = None
    if emit_dir is not None and result.winner is not None:
        from vazao.plan.artefacts import write_artefacts

        emitted = write_artefacts(emit_dir, result, engine=emit, force=force)
    if json_out:
        doc = plan_json(result, commands=commands, api=api)
        if launch is not None:
            doc["launch"] = launch.to_json()
            doc["bench_command"] = _bench(result)
        if emitted is not None:
            doc["emitted"] = [str(p) for p in emitted]
        emit_json(doc)
    else:
        render_plan(console, result, emitted=launch is not None)
        from vazao.plan.evaluate import shape_lifecycles
        from vazao.report.console import lifecycle_lines, print_lines

        print_lines(console, lifecycle_lines(shape_lifecycles([c.shape for c in result.candidates])))
        if api is not None:
            _print_api(api)
        if launch is not None:
            from vazao.report.plan_console import render_command

            render_command(console, launch, _bench(result))
    _plot(result, plot, json_out, quiet)
    if emitted is not None and not json_out:
        console.print(f"wrote {', '.join(p.name for p in emitted)} to {emit_dir}", highlight=False)
    elif emit_dir is not None and result.winner is None and not quiet:
        err_console.print(f"note: no deployment meets the SLO; nothing written to {emit_dir}", highlight=False)
    if result.winner is None:
        raise typer.Exit(1)


def _commands(result, top: int = 10) -> dict:
    """Launch commands (shell strings) of the best simulated candidates, for the JSON."""
    from vazao.plan.emit import launch_for

    out = {}
    for c in [c for c in result.candidates if c.source == "simulated"][:top]:
        try:
            out[id(c)] = launch_for(c, result.lengths).shell
        except VazaoError:
            continue  # no command for this engine and format: the JSON says null
    return out


def _bench(result) -> str:
    from vazao.plan.emit import planned_bench

    return planned_bench(result)


def _api(result, price: str) -> dict:
    from vazao.plan.api import against_api

    return against_api(result, price).to_json()


def _print_api(api: dict) -> None:
    verdict = ("self-hosting is cheaper" if api["cheaper"] == "self-hosted" else "the API is cheaper")
    console.print(f"against {api['price_id']}: API ${api['api_usd_per_request']:.5f}/request "
                  f"(${api['api_usd_per_month']:,.0f}/month at this traffic) vs self-hosted "
                  f"${api['selfhost_usd_per_request']:.5f} (${api['selfhost_usd_per_month']:,.0f}/month): {verdict} "
                  f"by {max(api['api_over_selfhost'], 1 / api['api_over_selfhost']):.1f}×; break-even "
                  f"{api['breakeven_requests_per_s']:.2f} req/s", highlight=False)
