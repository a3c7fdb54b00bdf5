"""`vazao validate` and `vazao calibrate`: predictions against measurements, and profiles fitted on them."""

from __future__ import annotations

from pathlib import Path

import typer

from vazao import inputs
from vazao.cli.app import JSON, QUIET, app, console, emit_json, err_console, show_progress
from vazao.cli.plotting import PLOT, check_plot, write_plot
from vazao.errors import VazaoError


def _check_profile(profile: Path | None) -> str | None:
    if profile is None:
        return None
    from vazao.physics.profiles import load_profiles

    load_profiles(profile)  # refuse a bad file before any work, with its one line
    return str(profile)


def _check_workers(workers: int | None) -> None:
    if workers is not None:
        inputs.number(workers, "--workers", minimum=1, maximum=256, integer=True)


def _family(engine: str) -> str:
    """The engine profile's name; an unknown one is one line with the closest names."""
    from vazao.physics.profiles import get_engine

    return get_engine(engine).name


def _existing(path: Path) -> None:
    """The measurements path is there (a file or a folder of runs): checked first, so a typo is not
    reported as whatever the path's kind would have needed next."""
    if not path.is_dir():
        inputs.input_file(path, "measurements")


def _measured(path: Path, fam: str, *, gpu: str | None, model: str | None, fmt: str, kv: str, count: int, tp: int,
              pp: int, strict: bool = False):
    """Rows from a measurements CSV, or from `vazao bench` results served by the deployment named. strict: a CSV
    row that needs a reading it does not state is refused (with that reading) instead of read."""
    from vazao.validate import read_rows
    from vazao.validate.bench_runs import RunDeployment, read_runs, run_files

    if path.is_file() and path.suffix.lower() == ".csv":
        return read_rows(path, strict=strict)
    files = run_files(path)
    if gpu is None:
        raise VazaoError(f"{path}: bench runs do not say what served them; give --gpu (and --model, --format, "
                         "--count, --tp if not the defaults)")
    for v, what in ((count, "--count"), (tp, "--tp"), (pp, "--pp")):
        inputs.number(v, what, minimum=1, maximum=4096, integer=True)
    if count % (tp * pp):
        raise VazaoError(f"--count {count} is not a multiple of --tp × --pp = {tp * pp}")
    return read_runs(files, RunDeployment(engine=fam, gpu=gpu, model=model, weights=fmt, kv=kv, gpu_count=count,
                                          tp=tp, pp=pp))


# what served a folder of `vazao bench` results (they do not say): shared by validate and calibrate
RUN_GPU = typer.Option(None, "--gpu", "-g", help="Bench runs: the accelerator that served them.")
RUN_MODEL = typer.Option(None, "--model", "-m", help="Bench runs: the model served (default: the one the server "
                                                     "named).")
RUN_FORMAT = typer.Option("", "--format", "-f", help="Bench runs: the weight format served (default: a GGUF's own, "
                                                     "else bf16).")
RUN_KV = typer.Option("not stated", "--kv", help="Bench runs: the KV-cache dtype (default: the engine's).")
RUN_COUNT = typer.Option(1, "--count", "-n", help="Bench runs: GPUs.")
RUN_TP = typer.Option(1, "--tp", help="Bench runs: tensor-parallel degree.")
RUN_PP = typer.Option(1, "--pp", help="Bench runs: pipeline-parallel degree.")


@app.command("validate")
def validate_cmd(
    measurements: Path = typer.Argument(..., help="CSV in the schema of shared/data/published-measurements.csv, "
                                                  "or `vazao bench` result JSON files (a file or a folder)."),
    profile: Path | None = typer.Option(None, "--profile", help="A calibrated profile file (vazao calibrate -o)."),
    engine: str | None = typer.Option(None, "--engine", help="Only rows of this engine family (bench runs: the "
                                                             "engine that served them)."),
    gpu: str | None = RUN_GPU, model: str | None = RUN_MODEL, fmt: str = RUN_FORMAT, kv: str = RUN_KV,
    count: int = RUN_COUNT, tp: int = RUN_TP, pp: int = RUN_PP,
    workers: int | None = typer.Option(None, "--workers", help="Processes (default: every core)."),
    worst: int = typer.Option(10, "--worst", help="Worst rows to list."),
    strict: bool = typer.Option(False, "--strict", help="Refuse a row that needs a reading it does not state "
                                                        "('~500', 'FP8?', an empty tp, 'gemm=fp8 moe=fp8', ...) "
                                                        "instead of reading it and naming the assumption."),
    plot: Path | None = PLOT,
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Predict every row under its stated conditions and report the errors by metric, engine, GPU
    generation, model family and regime, with the coverage and why each skipped row was skipped.
    A messy row is read as a careful person would read it, each assumption named on the row (`assumed`
    in --json, a count in the summary); --strict refuses such rows instead.
    --plot draws predicted against measured on log axes, with the band."""
    from vazao.report.validate_console import render_validation
    from vazao.validate import predict_rows, validation_report

    path = _check_profile(profile)
    _check_workers(workers)
    inputs.number(worst, "--worst", minimum=0, maximum=10_000, integer=True)
    check_plot(plot)
    _existing(measurements)
    fam = _family(engine) if engine else None
    is_csv = measurements.is_file() and measurements.suffix.lower() == ".csv"
    if not is_csv and fam is None:
        raise VazaoError(f"{measurements}: bench runs do not say which engine served them; give --engine")
    rows, problems = _measured(measurements, fam or "", gpu=gpu, model=model, fmt=fmt, kv=kv, count=count, tp=tp,
                               pp=pp, strict=strict)
    if fam:
        rows = [r for r in rows if r.family == fam]
    from vazao.report.progress import progress_bar

    with progress_bar("predicting rows", enabled=show_progress(json_out, quiet)) as show:
        results = predict_rows(rows, profile_path=path, workers=workers, progress=show)
    rep = validation_report(results, problems)
    if json_out:
        emit_json(rep.to_json())
    else:
        render_validation(console, rep, worst)
        _print_assumed(rep)
        _print_caveats(rep)
    if plot is not None:
        from vazao.report.reports import validation_report

        write_plot(validation_report(rep), plot, json_out=json_out, quiet=quiet)


def _print_assumed(rep) -> None:
    """The summary line of the assumptions taken, with the most frequent ones."""
    notes = rep.assumptions()
    if not notes:
        return
    console.print(f"[bold]{rep.assumed_rows:,} of {len(rep.results):,} rows read with assumptions[/] they do not "
                  "state (--json lists each row's `assumed`; --strict refuses them):", highlight=False)
    for note, n in notes[:8]:
        console.print(f"  {n:5,}  {note}", highlight=False)
    if len(notes) > 8:
        console.print(f"  and {len(notes) - 8:,} other assumption(s)", highlight=False)


def _print_caveats(rep) -> None:
    """What the comparison says about the measurements themselves (--json lists each row's `caveats`)."""
    for note, n in rep.caveats():
        console.print(f"[bold]{n:,} row(s):[/] {note} (--json lists each row's `caveats`)", highlight=False)


@app.command("calibrate")
def calibrate_cmd(
    measurements: Path = typer.Argument(..., help="Measurements CSV (published rows), or `vazao bench` result "
                                                  "JSON files (a file or a folder of them) to fit on."),
    engine: str = typer.Option(..., "--engine", help="The engine family to fit: trtllm, vllm, sglang, llama.cpp."),
    output: Path = typer.Option(..., "-o", "--output", help="Profile file to write (YAML)."),
    profile: Path | None = typer.Option(None, "--profile", help="Start from this profile file."),
    gpu: str | None = RUN_GPU, model: str | None = RUN_MODEL, fmt: str = RUN_FORMAT, kv: str = RUN_KV,
    count: int = RUN_COUNT, tp: int = RUN_TP, pp: int = RUN_PP,
    workers: int | None = typer.Option(None, "--workers", help="Processes (default: every core)."),
    force: bool = typer.Option(True, "--force/--no-force", help="Overwrite the output file."),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Fit the engine family's calibrated parameters (robust loss on log error, each metric group
    weighted alike), one set per engine release in the rows, and write them with the residual
    quantiles per regime that give every prediction its band."""
    import os

    from vazao.calibrate import calibrate_engine

    path = _check_profile(profile)
    _check_workers(workers)
    fam = _family(engine)
    _existing(measurements)
    inputs.output_file(output, "profile file", force=force)
    rows, problems = _measured(measurements, fam, gpu=gpu, model=model, fmt=fmt, kv=kv, count=count, tp=tp, pp=pp)
    rows = [r for r in rows if r.family == fam]
    if not rows:
        why = f" ({problems[0].id}: {problems[0].reason})" if problems else ""
        raise VazaoError(f"{measurements}: no rows of engine {engine}{why}")
    n = workers or os.cpu_count() or 1
    say = (lambda m: err_console.print(m, highlight=False)) if not (json_out or quiet) else None
    doc, fits = calibrate_engine(rows, fam, profile_path=path, workers=n, progress=say,
                                 source=str(measurements))
    inputs.write_text(output, inputs.dump_yaml(doc, sort_keys=False), "profile file")
    summary = {"output": str(output), "engine": fam, "rows": len(rows), "unreadable": len(problems),
               "fits": [{"min_version": ".".join(map(str, f.min_version)) if f.min_version else None,
                         "rows": f.rows, "median_ape": f.median_ape, "values": dict(f.values)} for f in fits]}
    if json_out:
        emit_json(summary)
        return
    for f in fits:
        ver = ".".join(map(str, f.min_version)) if f.min_version else "all versions"
        console.print(f"{fam} {ver}: {f.rows} rows, median |error| {f.median_ape * 100:.0f}% after the fit",
                      highlight=False)
    console.print(f"wrote {output}; use it with --profile {output}", highlight=False)
