"""The plot and HTML-report layer: chart specs carry the data they were given, on log axes where a
ratio scale belongs; adapters read each vazao result kind; `vazao report` refuses a file of the
wrong kind and an unwritable output path (exit 2, before any work); HTML reports are self-contained."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("altair", reason="the report extra (altair) is not installed")
pytest.importorskip("vl_convert", reason="the report extra (vl-convert-python) is not installed")

import _report_files as files  # noqa: E402
from vazao.errors import VazaoError  # noqa: E402
from vazao.report import adapters as ad  # noqa: E402
from vazao.report import plots  # noqa: E402
from vazao.report.estimate_report import estimate_report  # noqa: E402
from vazao.report.export import save_chart  # noqa: E402
from vazao.report.html import render_report  # noqa: E402
from vazao.report.model import Ceilings, CostPoint, CurvePoint, ParetoPoint, Report, ValidationPoint  # noqa: E402
from vazao.report.plan_report import COLUMNS, plan_cost, plan_report  # noqa: E402
from vazao.report.reports import comparison_report, simulation_report, validation_report  # noqa: E402


def nodes(spec):
    """Every mapping inside a Vega-Lite spec, depth first."""
    stack = [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def rows_of(spec: dict) -> list[dict]:
    """Every data row inlined in a Vega-Lite spec."""
    out = [r for rows in spec.get("datasets", {}).values() for r in rows]
    for node in nodes(spec):
        data = node.get("data")
        if isinstance(data, dict):
            out.extend(data.get("values") or [])
    return out


def scales(spec: dict) -> dict[str, set]:
    """field -> the scale types its x/y encodings use, anywhere in the spec."""
    found: dict[str, set] = {}
    for node in nodes(spec):
        for ch in ("x", "y"):
            enc = (node.get("encoding") or {}).get(ch)
            if isinstance(enc, dict) and "field" in enc:
                found.setdefault(enc["field"], set()).add((enc.get("scale") or {}).get("type", "linear"))
    return found


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("results")
    return {"sim": files.simulation(d), "estimate": files.estimate(d), "plan": files.plan(d),
            "validate": files.validation(d), "dir": d}


def load(results, key):
    return json.loads(results[key].read_text())


def test_each_result_file_is_recognised(results):
    kinds = {k: ad.kind_of(load(results, k)) for k in ("sim", "estimate", "plan", "validate")}
    assert kinds == {"sim": "simulation", "estimate": "estimate", "plan": "plan", "validate": "validation"}
    assert ad.kind_of({"error": "x"}) == "error" and ad.kind_of([1, 2]) == "unknown"


def test_roofline_spec_has_the_points_on_log_log_axes_under_the_ceilings(results):
    data = load(results, "estimate")
    report = estimate_report(data)
    spec = plots.roofline_chart(report.roofline, report.ceilings).to_dict()
    points = [r for r in rows_of(spec) if "phase" in r]
    expected = {(phase, b) for phase in ("decode", "prefill") for b in (1, 8, 64, 256)}
    assert {(p["phase"], p["batch"]) for p in points} == expected
    decode1 = next(r for r in data["rows"] if r["batch"] == 1)["decode"]
    p = next(p for p in points if p["phase"] == "decode" and p["batch"] == 1)
    assert p["intensity"] == pytest.approx(decode1["flops"] / decode1["bytes"])
    assert p["flops_per_s"] == pytest.approx(decode1["flops"] / decode1["time_s"])
    assert scales(spec)["intensity"] == {"log"} and scales(spec)["flops_per_s"] == {"log"}
    # no point may sit above the highest roof: the cost model never beats the silicon
    bw, top = report.ceilings.bandwidth_bytes_per_s, max(v for _, v in report.ceilings.peak_flops)
    assert all(q["flops_per_s"] <= min(top, bw * q["intensity"]) * 1.001 for q in points)


def test_memory_breakdown_sums_to_the_gpu(results):
    data = load(results, "estimate")
    (mem,) = estimate_report(data).memory
    assert sum(s.bytes for s in mem.segments) == pytest.approx(data["fit"]["memory_bytes_per_gpu"])
    spec = plots.memory_chart([mem]).to_dict()
    assert {r["part"] for r in rows_of(spec) if "part" in r} == {s.part for s in mem.segments}


def test_latency_curve_has_both_sources_the_slo_lines_and_log_latency(results, fake_llm):
    run = files.bench_run(results["dir"], fake_llm.url)
    report = comparison_report(json.loads(run.read_text()), load(results, "sim"), run.parent)
    # the prediction's 80% bands beside its figures, the measurement marked in or outside each
    table = report.tables[0]
    assert table.columns[3:] == ("predicted 80% band", "measured in band")
    banded = {r[0]: r for r in table.rows if r[3] != "–"}
    assert {"TTFT p95 (ms)", "TPOT p50 (ms)", "E2E p95 (ms)", "output tokens/s"} <= set(banded)
    assert all("–" in r[3] and r[4] in ("yes", "no") for r in banded.values())
    assert {p.source for p in report.curve} == {"measured", "predicted"}
    assert {s.source for s in report.latencies} == {"measured", "predicted"}
    spec = plots.curve_chart(report.curve, report.slo_s, report.curve_axis).to_dict()
    rows = rows_of(spec)
    # the run's own SLO where both name one (TTFT 1 s), the simulation's where only it does (TPOT 40 ms)
    assert {r["slo"] for r in rows if "slo" in r} == {1.0, 0.04}
    assert {r["level"] for r in rows if r.get("source") == "predicted"} == {2.0, 8.0, 32.0}
    assert scales(spec)["seconds"] == {"log"}
    # the measured distribution is the run's own records (many quantiles), the prediction its summary's
    assert len([s for s in report.latencies if s.source == "measured"]) > 20


def test_cost_lines_cross_at_the_break_even(results):
    data = load(results, "plan")
    points, be = plan_cost(data)
    assert be == pytest.approx(data["against_api"]["breakeven_requests_per_s"])
    win = data["candidates"][data["winner"]]
    tokens = data["lengths"]["prompt_mean"] + data["lengths"]["output_mean"]
    api = data["against_api"]["api_usd_per_request"] / tokens * 1e6
    selfhost_at_be = win["usd_per_hour"] / (be * 3600 * tokens) * 1e6
    assert selfhost_at_be == pytest.approx(api, rel=1e-3)  # the two lines meet where the break-even is drawn
    spec = plots.cost_chart(points, be).to_dict()
    assert scales(spec)["traffic_per_s"] == {"log"} and scales(spec)["usd_per_mtok"] == {"log"}
    assert any(r.get("x") == pytest.approx(be) for r in rows_of(spec))


def test_cost_curve_adds_a_deployment_past_capacity():
    pts = [p for p in ad.cost_curve(10.0, 1000.0, 2.0, 0.01, "self", "api", (1.0, 8.0)) if p.series == "self"]
    just_below, just_above = max((p for p in pts if p.traffic_per_s <= 2.0), key=lambda p: p.traffic_per_s), \
        min((p for p in pts if p.traffic_per_s > 2.0), key=lambda p: p.traffic_per_s)
    assert just_above.usd_per_mtok > just_below.usd_per_mtok  # a second copy is paid for


def test_plan_pareto_marks_the_front_and_every_candidate(results):
    data = load(results, "plan")
    report = plan_report(data)
    # the candidates only estimated (never simulated) have no p95 to draw
    assert len(report.pareto) == sum(1 for c in data["candidates"] if c["checks"]) > 0
    assert {p.rank for p in report.pareto} == {i for i, c in enumerate(data["candidates"], 1) if c["checks"]}
    assert sum(p.on_front for p in report.pareto) == len(data["pareto"])
    spec = plots.pareto_chart(report.pareto).to_dict()
    assert scales(spec)["usd_per_mtok"] == {"log"} and scales(spec)["latency_s"] == {"log"}
    table = next(t for t in report.tables if t.title.startswith("Candidates"))
    assert len(table.rows) == len(data["candidates"])
    unsimulated = [row for row, c in zip(table.rows, data["candidates"], strict=True) if not c["checks"]]
    assert all(row[COLUMNS.index("meets SLO")] == "not simulated" for row in unsimulated)


def test_plan_report_shows_the_launch_command_why_others_lost_and_the_top_curves(results):
    # Issue 20: the plan report carries the launch command, each figure's band, the binding constraint, why
    # the other models/GPUs lost and the latency–throughput curve of the top three.
    data = load(results, "plan")
    report = plan_report(data)
    titles = [t.title for t in report.tables]
    assert titles[0] == "Launch the winner" and report.tables[0].rows[0][1] == data["candidates"][0]["command"]
    assert "Why the others lost" in titles and "binding: " + str(data["binding_constraint"]) in report.headline
    lost = next(t for t in report.tables if t.title == "Why the others lost")
    winner = data["candidates"][0]
    assert all(not r[0].startswith(f"{winner['model']} on {winner['gpu']}") for r in lost.rows)
    assert len(data["curves"]) == 3 and [c["rank"] for c in data["curves"]] == [1, 2, 3]
    series = {p.series for p in report.curve}
    assert len(series) == 3 and all(s.startswith("#") for s in series)
    spec = plots.curve_chart(report.curve, report.slo_s).to_dict()
    assert {r["series"] for r in rows_of(spec) if "series" in r} == series


def test_validation_scatter_is_log_log_with_the_bands(results):
    data = load(results, "validate")
    report = validation_report(data)
    spec = plots.validation_chart(report.validation).to_dict()
    measured = sorted(r["measured"] for r in rows_of(spec) if "measured" in r and "band_lo" in r)
    assert measured and set(measured) <= {r["measured"] for r in data["rows"]}
    assert scales(spec)["measured"] == {"log"} and scales(spec)["predicted"] == {"log"}
    assert scales(spec)["band_lo"] == {"log"}


def test_the_html_report_is_self_contained(results):
    html = render_report(simulation_report(load(results, "sim")))
    assert "<script src" not in html and "<link" not in html and "@import" not in html
    assert "vegaEmbed" in html and html.count('class="chart"') == 2
    specs = json.loads(html.split('id="vazao-specs" type="application/json">')[1].split("</script>")[0])
    assert len(specs) == 2 and any(r.get("level") == 32.0 for r in rows_of(specs[0]))
    assert "h100-sxm" in html and "Inputs, engine profile" in html


def test_html_escapes_what_a_result_file_says():
    report = Report(kind="plan", title="<script>alert(1)</script>", facts=(("x", "</script><b>"),),
                    validation=(ValidationPoint(1.0, 2.0, None, None, "</script>"),))
    html = render_report(report)
    assert "<script>alert(1)" not in html and "</script><b>" not in html


def test_charts_save_as_png_svg_and_html(tmp_path):
    chart = plots.pareto_chart([ParetoPoint("a", 0.5, 0.02, True, True, 1), ParetoPoint("b", 1.0, 0.01, True, True, 2)])
    assert save_chart(chart, tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in save_chart(chart, tmp_path / "p.svg").read_text()[:200]
    assert "vegaEmbed" in save_chart(chart, tmp_path / "p.html").read_text()
    with pytest.raises(VazaoError, match=r"\.png"):
        save_chart(chart, tmp_path / "p.jpg")


def test_missing_extra_is_one_line_naming_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "altair", None)
    with pytest.raises(VazaoError, match=r"vazao\[report\]"):
        plots.curve_chart([CurvePoint(1, 10, 0.1, 0.01, "predicted")], {})


def test_non_positive_values_are_left_off_log_axes():
    spec = plots.validation_chart([ValidationPoint(0.0, 1.0, None, None, "m"),
                                   ValidationPoint(2.0, 3.0, 1.0, 4.0, "m")]).to_dict()
    assert all(r["measured"] > 0 for r in rows_of(spec) if "measured" in r)
    c = plots.cost_chart([CostPoint(1.0, 2.0, "s")], math.inf).to_dict()
    assert not any("x" in r for r in rows_of(c))  # no break-even rule at infinity
    assert plots.roofline_chart([], Ceilings("g", 1e12, (("bf16", 1e14),))).to_dict()


@pytest.mark.parametrize("flag, key, says", [
    ("--plan", "sim", "this file is a simulation result; expected a plan result"),
    ("--validate", "plan", "this file is a plan result; expected a validation result"),
    ("--sim", "estimate", "this file is a estimate result; expected a simulation result"),
    ("--run", "sim", "this file is a simulation result; expected a bench run result"),
])
def test_a_file_of_the_wrong_kind_is_refused(results, tmp_path, flag, key, says):
    r = files.invoke("report", flag, str(results[key]), "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 2 and says in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_json_that_is_not_a_result_and_missing_pairs_are_refused(tmp_path, results):
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    r = files.invoke("report", "--plan", str(other), "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 2 and "not a vazao result" in r.stderr
    r = files.invoke("report", "--predicted", str(results["sim"]), "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 2 and "give --run too" in r.stderr
    r = files.invoke("report", "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 2 and "give one of" in r.stderr


def test_an_unwritable_output_fails_before_any_work(tmp_path):
    # the input does not exist either: the output's error comes first, so no input was read
    r = files.invoke("report", "--plan", str(tmp_path / "missing.json"), "-o", str(tmp_path / "no" / "r.html"))
    assert r.exit_code == 2 and "--output" in r.stderr and "does not exist" in r.stderr
    assert "missing.json" not in r.stderr


def test_report_command_writes_the_file(results, tmp_path):
    out = tmp_path / "plan.html"
    r = files.invoke("report", "--plan", str(results["plan"]), "-o", str(out))
    assert r.exit_code == 0, r.output
    assert "plan report, 3 plots" in r.stdout and out.read_text().startswith("<!DOCTYPE html>")


def test_the_command_without_the_extra_is_one_line_exit_2(results, tmp_path):
    import subprocess

    code = ("import sys\n"
            "for m in ('altair', 'vl_convert', 'jinja2'): sys.modules[m] = None\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import _report_files\n"
            "from vazao.cli import main\n"
            "sys.argv = ['vazao', 'report', '--plan', sys.argv[2], '-o', sys.argv[3]]\n"
            "main()\n")
    tests = str(Path(__file__).parent)
    r = subprocess.run([sys.executable, "-c", code, tests, str(results["plan"]), str(tmp_path / "r.html")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: plots and HTML reports need the report extra: pip install 'vazao[report]'"]


@pytest.mark.parametrize("doc", ['{"kind": "simulation", "summary": {"requests": 3}}',
                                 '{"summary": {"ttft_s": "x", "requests": "a"}, "sim": {}}'])
def test_a_malformed_result_is_one_line_not_a_traceback(tmp_path, doc):
    from typer.testing import CliRunner

    from vazao.cli import app

    bad = tmp_path / "sim.json"
    bad.write_text(doc)
    res = CliRunner().invoke(app, ["report", "--sim", str(bad), "-o", str(tmp_path / "r.html")])
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.stderr
