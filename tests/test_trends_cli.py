"""`vazao cost breakeven --horizon … --trend …`: the table, --json, the plot and `vazao report --breakeven`;
every output names the scenario and its citation (a scenario, never a forecast)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app

runner = CliRunner()
BASE = ["cost", "breakeven", "llama-3.1-8b", "--price", "gpt-5-mini", "--gpus", "h100-sxm", "--input", "512",
        "--output", "128", "--analytic", "--count", "1"]


def test_console_table_names_the_scenario_and_its_source():
    res = runner.invoke(app, [*BASE, "--traffic", "3/s", "--horizon", "24mo", "--trend", "epoch-fixed-capability"],
                        terminal_width=200)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "scenario epoch-fixed-capability (not a forecast)" in out and "epoch.ai/data-insights" in out
    assert "caveat:" in out and "monthly factors: API price ×0.7354" in out
    for col in ("month", "API $/Mtok", "self-host $/Mtok", "break-even req/day", "cumulative saved", "winner"):
        assert col in out
    assert "API at any load" in out  # the break-even leaves the deployment's capacity within two years
    assert "at 9x/year" in out and "at 900x/year" in out


def test_json_document_and_the_break_even_month():
    res = runner.invoke(app, [*BASE, "--traffic", "3/s", "--horizon", "12", "--trend", "flat-top-tier", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["kind"] == "breakeven trend" and doc["trend"]["horizon_months"] == 12
    sc = doc["trend"]["scenario"]
    assert sc["id"] == "flat-top-tier" and sc["is_forecast"] is False and "US$ 10 e US$ 50" in sc["seed"]
    (p,) = doc["trend"]["projections"]
    assert len(p["months"]) == 12 and p["winner_changes_month"] is None  # nothing moves when nothing falls
    assert {m["api_usd_per_month"] for m in p["months"]} == {p["months"][0]["api_usd_per_month"]}
    # the same question under Epoch's fall: the API's bill drops, the deployment's does not
    res = runner.invoke(app, [*BASE, "--traffic", "3/s", "--horizon", "12", "--trend", "epoch-fixed-capability",
                              "--json"])
    (q,) = json.loads(res.stdout)["trend"]["projections"]
    first = q["months"][0]
    assert first["cheaper"] == "self-hosted" and q["winner_changes_month"] is not None
    w = q["winner_changes_month"]
    assert q["months"][w]["cheaper"] == "api" and all(m["cheaper"] == "self-hosted" for m in q["months"][:w])


def test_a_user_trend_file_through_the_cli(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("trends:\n  - id: mine\n    name: halving\n    api_price_fall_per_year: 2\n"
                 "    citation: internal plan\n    caveat: an assumption\n", encoding="utf-8")
    res = runner.invoke(app, [*BASE, "--horizon", "1y", "--trend", str(f), "--json"])
    assert res.exit_code == 0, res.output
    sc = json.loads(res.stdout)["trend"]["scenario"]
    assert (sc["id"], sc["citation"], sc["api_monthly_factor"]) == ("mine", "internal plan", "0.943874313")


@pytest.mark.parametrize("args, message", [
    (["--horizon", "24mo"], "--trend go together"),
    (["--trend", "flat-top-tier"], "--trend go together"),
    (["--horizon", "500mo", "--trend", "flat-top-tier"], "--horizon"),
    (["--horizon", "24mo", "--trend", "moon"], "unknown trend scenario 'moon'"),
    (["--horizon", "24mo", "--trend", "missing.yaml"], "missing.yaml"),
    # a name longer than the file system takes: the reader refuses it (it reached the CLI's OSError net)
    (["--horizon", "24mo", "--trend", "/tmp/" + "x" * 5000], "cannot be read"),
])
def test_bad_trend_options_are_one_line_exit_2(args, message):
    res = runner.invoke(app, [*BASE, *args])
    assert res.exit_code == 2, res.output
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_plot_and_html_report(tmp_path):
    pytest.importorskip("altair", reason="the report extra (altair) is not installed")
    pytest.importorskip("vl_convert", reason="the report extra (vl-convert-python) is not installed")
    svg, doc, html = tmp_path / "t.svg", tmp_path / "t.json", tmp_path / "t.html"
    res = runner.invoke(app, [*BASE, "--horizon", "24mo", "--trend", "agent-rebound", "--plot", str(svg), "--json"])
    assert res.exit_code == 0, res.output
    assert "break-even over time" in res.stderr and svg.stat().st_size > 1000
    assert "not a forecast" in svg.read_text(encoding="utf-8")  # the chart's title says what it is
    doc.write_text(res.stdout, encoding="utf-8")
    res = runner.invoke(app, ["report", "--breakeven", str(doc), "-o", str(html)])
    assert res.exit_code == 0, res.output
    assert "breakeven trend report, 2 plots" in res.output
    page = html.read_text(encoding="utf-8")
    assert "agent-rebound" in page and "multi-agent-research-system" in page and "month by month" in page
    # a break-even without a trend is another kind of result
    plain = tmp_path / "plain.json"
    plain.write_text(runner.invoke(app, [*BASE, "--json"]).stdout, encoding="utf-8")
    res = runner.invoke(app, ["report", "--breakeven", str(plain), "-o", str(html)])
    assert res.exit_code == 2 and "expected a breakeven trend result" in res.stderr


def test_the_report_builder_reads_the_typed_result():
    pytest.importorskip("altair", reason="the report extra (altair) is not installed")
    from vazao.catalog.prices import get_price
    from vazao.cost.policy import RequestShape, SelfHostQuery, breakeven
    from vazao.cost.trends import trend_scenarios
    from vazao.report.plots import charts_for
    from vazao.report.small_reports import breakeven_trend_report

    q = SelfHostQuery("llama-3.1-8b", "h100-sxm", shape=RequestShape(512, 128), count=1, analytic=True)
    be = breakeven(q, ["h100-sxm", "a100-sxm-80gb"], get_price("gpt-5-mini"), horizon_months=6,
                   trend=trend_scenarios()["multi-agent-rebound"])
    rep = breakeven_trend_report(be)
    assert rep.kind == "breakeven trend" and "not a forecast" in rep.headline
    assert dict(rep.facts)["tokens per task multiplier"] == "15"
    assert len(rep.tables) == 2 and len(rep.tables[0].rows) == 6
    series = {p.series for p in rep.trend}
    assert {"break-even: h100-sxm", "capacity: a100-sxm-80gb", "API: gpt-5-mini"} <= series
    assert [t for t, _ in charts_for(rep)][0] == "Break-even over time"
