"""Charts to files, offline: PNG and SVG drawn by vl-convert (no browser, no network), interactive
HTML with the Vega libraries inlined (report.html's chart page). vl-convert is imported on first use
(the `report` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vazao.errors import VazaoError
from vazao.report.html import chart_page
from vazao.report.vega import spec, vl_convert, vl_version

# cli.plotting and cli.physics_cmds import vl_convert from here (it lives in report.vega)

FORMATS = (".png", ".svg", ".html")


def save_chart(chart: Any, path: str | Path, *, scale: float = 2.0) -> Path:
    """Write the chart as PNG, SVG or self-contained interactive HTML, by the file's suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise VazaoError(f"chart file {str(path)!r}: expected a name ending in {', '.join(FORMATS)}")
    vlc = vl_convert()
    vl_spec, version = spec(chart), vl_version()
    if suffix == ".png":
        path.write_bytes(vlc.vegalite_to_png(vl_spec, vl_version=version, scale=scale))
    elif suffix == ".svg":
        path.write_text(vlc.vegalite_to_svg(vl_spec, vl_version=version), encoding="utf-8")
    else:
        path.write_text(chart_page(vl_spec, title=path.stem), encoding="utf-8")
    return path
