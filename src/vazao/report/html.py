"""One self-contained HTML file per report: the Vega libraries, every chart's spec and its data
inlined, so the file opens with the network off. jinja2 templates in report/templates/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vazao.errors import VazaoError
from vazao.report.model import Report
from vazao.report.plots import EXTRA, charts_for
from vazao.report.vega import javascript_bundle, spec

TEMPLATES = Path(__file__).with_name("templates")


def _jinja():
    try:
        import jinja2
    except ImportError:
        raise VazaoError(EXTRA) from None
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                              autoescape=jinja2.select_autoescape(["html", "j2"]),
                              trim_blocks=True, lstrip_blocks=True)


def _script_json(obj: Any) -> str:
    """JSON safe inside a <script> element: no '</' can close it early."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def _page(template: str, charts: list[tuple[str, dict]], **context: Any) -> str:
    specs = [{"id": f"chart-{i}", "title": title, "spec": vl_spec} for i, (title, vl_spec) in enumerate(charts)]
    return _jinja().get_template(template).render(
        bundle=javascript_bundle(), charts=specs, specs_json=_script_json([s["spec"] for s in specs]), **context)


def render_report(report: Report) -> str:
    """The report as one HTML document: headline, plots, tables, then what produced it."""
    charts = [(title, spec(chart)) for title, chart in charts_for(report)]
    return _page("report.html.j2", charts, report=report)


def chart_page(vl_spec: dict, *, title: str) -> str:
    """One interactive chart as a self-contained page."""
    return _page("chart.html.j2", [(title, vl_spec)], title=title)
