"""Every kind of HTML report opened in headless Chromium with the network cut (a dead proxy for
anything not local): no console errors, no request leaves the file, every plot drew a non-empty
SVG, and a screenshot is kept in the test's tmp folder. Skipped, with the reason, only where
Chromium cannot be found (`apt-get install -y chromium`)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("altair", reason="the report extra (altair) is not installed")
pytest.importorskip("vl_convert", reason="the report extra (vl-convert-python) is not installed")

import _report_files as files  # noqa: E402
from _cdp import find_chromium, open_page  # noqa: E402

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def reports(tmp_path_factory, fake_llm):
    """One HTML file per report kind, written by `vazao report` from real result files."""
    d = tmp_path_factory.mktemp("reports")
    sim, run = files.simulation(d), files.bench_run(d, fake_llm.url)
    asks = {"plan": ["--plan", files.plan(d)], "simulation": ["--sim", sim], "bench run": ["--run", run],
            "comparison": ["--run", run, "--predicted", sim], "validation": ["--validate", files.validation(d)],
            "estimate": ["--estimate", files.estimate(d)]}
    out = {}
    for kind, args in asks.items():
        page = d / f"{kind.replace(' ', '-')}.html"
        r = files.invoke("report", *map(str, args), "-o", str(page))
        assert r.exit_code == 0, r.output
        assert f"{kind} report" in r.stdout
        out[kind] = page
    return out


EXPECTED_PLOTS = {"plan": 3, "simulation": 2, "bench run": 2, "comparison": 2, "validation": 1, "estimate": 2}


@pytest.mark.parametrize("kind", sorted(EXPECTED_PLOTS))
def test_report_renders_offline_with_every_plot_drawn(reports, kind, tmp_path):
    page = open_page(CHROMIUM, reports[kind], tmp_path)
    assert page.console_errors == []
    assert page.external_requests == []
    assert page.done == str(EXPECTED_PLOTS[kind]), f"charts did not finish: {json.dumps(page.charts)}"
    assert len(page.charts) == EXPECTED_PLOTS[kind]
    for chart in page.charts:
        assert chart["drawn"] == "1" and chart["error"] is None, chart
        assert chart["svg_marks"] > 10 and chart["width"] > 100 and chart["height"] > 50, chart
    assert page.screenshot.stat().st_size > 10_000  # a drawn page, not a blank one


def test_a_broken_chart_is_caught(tmp_path):
    """The check can fail: a spec Vega cannot draw leaves a console error and no drawn mark."""
    from vazao.report.html import chart_page

    bad = tmp_path / "bad.html"
    bad.write_text(chart_page({"mark": "nonsense-mark", "data": {"values": [{"a": 1}]}}, title="bad"))
    page = open_page(CHROMIUM, bad, tmp_path)
    assert page.console_errors and page.charts[0]["drawn"] is None and page.charts[0]["error"]


def test_a_page_asking_the_network_is_caught(tmp_path):
    """The check can fail: a page that fetches from outside is reported, and gets nothing."""
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><html><body><img src="https://example.com/x.png">'
                     '<script>document.body.setAttribute("data-charts-done", "0")</script></body></html>')
    page = open_page(CHROMIUM, leaky, tmp_path)
    assert any("example.com" in u for u in page.external_requests)
