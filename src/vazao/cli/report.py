"""`vazao report`: a result file (plan, simulation, bench run, validation, estimate, break-even over time) →
one self-contained HTML report. Hooked into the app by `register(app)`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from vazao import inputs
from vazao.errors import VazaoError

# The flag, the kind of result it takes, and the command that writes one.
EXPECTED = {"--plan": ("plan", "vazao plan --json"), "--sim": ("simulation", "vazao simulate --json"),
            "--run": ("bench run", "vazao bench -o run.json"), "--predicted": ("simulation", "vazao simulate --json"),
            "--validate": ("validation", "vazao validate --json"), "--estimate": ("estimate", "vazao estimate --json"),
            "--breakeven": ("breakeven trend", "vazao cost breakeven --horizon 24mo --trend NAME --json")}


def read_result(path: Path, flag: str) -> Any:
    """The JSON result named by `flag`, refused when it is another kind of file."""
    from vazao.report.adapters import kind_of

    data = inputs.read_json(inputs.input_file(path, f"{flag} file"), f"{flag} file")
    kind, (want, how) = kind_of(data), EXPECTED[flag]
    if kind != want:
        what = "an error result" if kind == "error" else ("not a vazao result" if kind == "unknown" else
                                                          f"a {kind} result")
        raise VazaoError(f"{flag} {path}: this file is {what}; expected a {want} result (from `{how}`)")
    return data


def build(plan: Path | None, sim: Path | None, run: Path | None, predicted: Path | None, validate: Path | None,
          estimate: Path | None = None, breakeven: Path | None = None):
    from vazao.report.estimate_report import estimate_report
    from vazao.report.plan_report import plan_report
    from vazao.report.reports import bench_report, comparison_report, simulation_report, validation_report

    if predicted is not None and run is None:
        raise VazaoError("--predicted compares a simulation with a measured run: give --run too")
    given = [f for f, v in (("--plan", plan), ("--sim", sim), ("--run", run), ("--validate", validate),
                            ("--estimate", estimate), ("--breakeven", breakeven)) if v]
    if len(given) != 1:
        raise VazaoError("give one of --plan, --sim, --run (with --predicted to compare), --validate, --estimate "
                         "or --breakeven" + (f"; got {', '.join(given)}" if given else ""))
    if plan:
        return plan_report(read_result(plan, "--plan"))
    if sim:
        return simulation_report(read_result(sim, "--sim"))
    if validate:
        return validation_report(read_result(validate, "--validate"))
    if estimate:
        return estimate_report(read_result(estimate, "--estimate"))
    if breakeven:
        from vazao.report.small_reports import breakeven_trend_report

        return breakeven_trend_report(read_result(breakeven, "--breakeven"))
    measured = read_result(run, "--run")
    if predicted is None:
        return bench_report(measured, run.parent)
    return comparison_report(measured, read_result(predicted, "--predicted"), run.parent)


def register(app: typer.Typer) -> None:
    from vazao.cli.app import console

    @app.command("report")
    def report_cmd(
        plan: Path | None = typer.Option(None, "--plan", help="A `vazao plan --json` result."),
        sim: Path | None = typer.Option(None, "--sim", help="A `vazao simulate --json` result."),
        run: Path | None = typer.Option(None, "--run", help="A `vazao bench` result (its JSON)."),
        predicted: Path | None = typer.Option(None, "--predicted", help="With --run: the simulation to compare."),
        validate: Path | None = typer.Option(None, "--validate", help="A `vazao validate --json` result."),
        estimate: Path | None = typer.Option(None, "--estimate", help="A `vazao estimate --json` result."),
        breakeven: Path | None = typer.Option(None, "--breakeven", help="A `vazao cost breakeven --horizon … "
                                              "--trend … --json` result: the break-even over time."),
        output: Path = typer.Option(Path("report.html"), "--output", "-o", help="The HTML file to write."),
    ) -> None:
        """One self-contained HTML report (plots, tables, the inputs that produced it) of a plan,
        simulation, bench run, measured-vs-predicted comparison or validation; opens offline."""
        inputs.output_file(output, "--output")  # before any work: an unwritable path fails first
        report = build(plan, sim, run, predicted, validate, estimate, breakeven)
        from vazao.report.html import render_report
        from vazao.report.plots import charts_for

        inputs.write_text(output, render_report(report), "--output")
        console.print(f"wrote {output} ({report.kind} report, {len(charts_for(report))} plots)", highlight=False)


def _register_once() -> None:
    from vazao.cli.app import app

    if not any(c.name == "report" for c in app.registered_commands):
        register(app)


_register_once()  # importing this module registers the command, as every cli module does
