"""`--plot PATH` on the commands that have a natural picture: checked before any work (a name
ending .svg/.png/.html, a folder that exists, the report extra installed), drawn after from the
same typed report `vazao report` builds (renderers do no maths)."""

from __future__ import annotations

from pathlib import Path

import typer

from vazao.errors import VazaoError

PLOT = typer.Option(None, "--plot", help="Also draw this command's picture to this file (.svg, .png or "
                    ".html; needs the report extra).")


_NAMED = {"estimate", "fit", "simulation", "breakeven", "breakeven trend"}  # reports titled by what they are of


def check_plot(path: Path | None) -> None:
    """Fail (exit 2) before any work on a name, folder or missing extra that would fail after."""
    if path is None:
        return
    from vazao import inputs
    from vazao.report.export import FORMATS

    if Path(path).suffix.lower() not in FORMATS:
        raise VazaoError(f"--plot {str(path)!r}: expected a name ending in {', '.join(FORMATS)}")
    inputs.output_file(path, "--plot")
    from vazao.report.export import vl_convert
    from vazao.report.plots import altair

    altair(), vl_convert()


def write_plot(report, path: Path | None, *, json_out: bool = False, quiet: bool = False) -> None:
    """The report's first chart (the command's own picture: roofline, latency curve …) to `path`; the
    note saying so goes to stdout, to stderr under --json, nowhere under --quiet."""
    if path is None:
        return
    from vazao.cli.app import console, err_console
    from vazao.report.export import save_chart
    from vazao.report.plots import charts_for

    charts = charts_for(report)
    if not charts:
        raise VazaoError(f"--plot: this {report.kind} has nothing to draw")
    title, chart = charts[0]
    save_chart(chart, path)
    if not quiet:
        of = f" of {report.title}" if report.kind in _NAMED else ""
        (err_console if json_out else console).print(f"wrote {path}: {title.lower()}{of}", highlight=False)
