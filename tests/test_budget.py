"""Budgets in the spec (seed 004_9706bef9153e5571.txt): cost per task, margin, latency, CI exit codes."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vazao.analytic import steady_point
from vazao.budget import analytic_summary, check_budget, deployment_latency, load_budget, parse_budget
from vazao.cli import app
from vazao.cost.ledger import TokenLedger
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.results import Latency, RunSummary

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "budget.yaml"


def run_file(tmp_path: Path, ttft_p95: float, e2e_p95: float) -> Path:
    def lat(p95: float) -> Latency:
        return Latency(p95 / 2, p95 / 2, p95 * 0.9, p95, p95 * 1.2)

    s = RunSummary(requests=50, errors=0, duration_s=30.0, ttft_s=lat(ttft_p95), itl_s=lat(0.02),
                   tpot_s=lat(0.02), e2e_s=lat(e2e_p95), request_throughput_per_s=1.6,
                   output_tokens_per_s=400.0, total_tokens_per_s=2000.0)
    path = tmp_path / f"run-{ttft_p95}-{e2e_p95}.json"
    path.write_text(json.dumps({"summary": s.to_json(), "records": []}), encoding="utf-8")
    return path


def test_example_budget_prices_the_seed_conversation():
    """The support conversation of seed 004 with its prefix cached costs $0.0748 per task."""
    b = load_budget(EXAMPLE)
    result = check_budget(b)
    support = next(t for t in result.tasks if t.name == "support-conversation")
    assert support.cost_usd == Decimal("0.0748")
    assert support.margin_usd == Decimal("0.8") * Decimal("0.40") - Decimal("0.0748")
    research = next(t for t in result.tasks if t.name == "research-agent")
    assert research.cost_usd == Decimal("0.15")  # 100 calls of 7,000 tokens: under Haiku's 100k tier
    nightly = next(t for t in result.tasks if t.name == "nightly-enrichment")
    assert nightly.cost_usd == (Decimal(1500) * Decimal("0.625") + Decimal(40) * 5) / Decimal(1_000_000)
    assert result.passed  # latency unchecked is not a miss unless --strict
    assert any("not checked" in n for n in result.notes)


def test_measured_run_pass_and_fail_exit_codes(tmp_path):
    fast = run_file(tmp_path, 0.5, 6.0)
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--measured", str(fast), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert {"name", "cost_usd", "margin_usd", "pass", "misses"} <= set(d["tasks"][0])
    assert all(t["pass"] for t in d["tasks"]) and d["pass"] is True

    slow = run_file(tmp_path, 0.95, 7.2)
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--measured", str(slow), "--json"])
    assert res.exit_code == 1
    d = json.loads(res.stdout)
    support = d["tasks"][0]
    assert support["pass"] is False and support["misses"] == ["ttft_p95: 950 ms > 800 ms"]
    assert Decimal(support["cost_usd"]) == Decimal("0.0748")
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--measured", str(slow)])
    assert res.exit_code == 1 and "FAIL" in res.output


def test_per_task_measured_and_strict(tmp_path):
    slow = run_file(tmp_path, 0.95, 7.2)
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--measured", f"research-agent={slow}", "--json"])
    assert res.exit_code == 0, res.output  # the support task is unchecked, the agent meets 10 minutes
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--strict", "--json"])
    assert res.exit_code == 1
    misses = json.loads(res.stdout)["tasks"][0]["misses"]
    assert "ttft_p95: not measured > 800 ms" in misses
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--measured", f"nobody={slow}"])
    assert res.exit_code == 2 and "unknown task" in res.output


BASE = """price: sonnet-5.5
tasks:
  - name: t
    ttft_p95: 800ms
    tokens: {cached_input: 6000, new_input: 1000, output: 250}
    value_usd: "0.05"
    max_cost_usd: "0.01"
"""


def test_cost_cap_and_negative_margin_are_misses():
    b = parse_budget(BASE)
    t = check_budget(b).tasks[0]
    # 6,000 × $0.10/M + 1,000 × $2/M + 250 × $10/M = $0.0051
    assert t.cost_usd == Decimal("0.0051") and t.passed
    poor = parse_budget(BASE.replace('value_usd: "0.05"', 'value_usd: "0.001"'))
    t = check_budget(poor).tasks[0]
    assert t.margin_usd == Decimal("-0.0041") and not t.passed
    assert t.misses == ["margin: $-0.0041 < $0"]
    capped = parse_budget(BASE.replace('max_cost_usd: "0.01"', 'max_cost_usd: "0.005"'))
    assert check_budget(capped).tasks[0].misses == ["cost: $0.0051 > $0.005"]


@pytest.mark.parametrize(("bad", "message"), [
    (BASE.replace("    value_usd:", "    valu_usd:"), "budget:6: unknown field 'valu_usd'"),
    (BASE.replace("800ms", "800 msec"), "budget:4: ttft_p95: unknown time unit 'msec'"),
    (BASE.replace("800ms", "800"), "budget:4: ttft_p95: give a unit"),
    (BASE.replace("new_input: 1000", "fresh_input: 1000"), "budget:5: unknown token field 'fresh_input'"),
    (BASE.replace("new_input: 1000", "new_input: 10.5"), "budget:5: tokens.new_input"),
    (BASE.replace("price: sonnet-5.5", "price: sonet-5"), "budget:1: unknown price 'sonet-5'"),
    (BASE.replace('"0.05"', '"five cents"'), "budget:6: value_usd: cannot read dollars"),
    (BASE.replace("  - name: t", "  - name: t\n    latency_p95: 1s"), "budget:4: unknown field 'latency_p95'"),
    (BASE + "extra: 1\n", "budget:8: unknown field 'extra'"),
    ("tasks: []\n", "'tasks' must be a non-empty list"),
    ("tasks: [\n", "budget is not valid YAML (line 2"),
])
def test_bad_budget_files_name_the_line(bad, message):
    with pytest.raises(VazaoError) as exc:
        parse_budget(bad)
    assert message in str(exc.value)


def test_bad_budget_through_the_cli(tmp_path):
    f = tmp_path / "budget.yaml"
    f.write_text(BASE.replace("800ms", "800 msec"), encoding="utf-8")
    res = runner.invoke(app, ["budget", "check", str(f)])
    assert res.exit_code == 2 and f"{f}:4: ttft_p95: unknown time unit" in res.output
    res = runner.invoke(app, ["budget", "check", str(f.with_name("missing.yaml"))])
    assert res.exit_code == 2 and "budget file" in res.output and "missing.yaml does not exist" in res.output
    good = tmp_path / "good.yaml"
    good.write_text(BASE, encoding="utf-8")
    broken_run = tmp_path / "run.json"
    broken_run.write_text('{"records": []}', encoding="utf-8")
    res = runner.invoke(app, ["budget", "check", str(good), "--measured", str(broken_run)])
    assert res.exit_code == 2 and "no RunSummary" in res.output


def test_simulated_latency(tmp_path):
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    s = analytic_summary(dep, TokenLedger(new_input=1000, cache_read=6000, output=250), concurrency=4)
    assert 0 < s.ttft_s.p95 < s.e2e_s.p95
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--simulate", "--model", "llama-3.1-8b",
                              "--gpu", "h100-sxm", "--concurrency", "8", "--analytic", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["tasks"][0]["latency_source"].startswith("analytic: llama-3.1-8b")
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--simulate", "--model", "llama-3.1-8b",
                              "--gpu", "h100-sxm", "--concurrency", "8", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tasks"][0]["latency_source"].startswith("simulated: llama-3.1-8b")
    res = runner.invoke(app, ["budget", "check", str(EXAMPLE), "--simulate"])
    assert res.exit_code == 2 and "--model and --gpu" in res.output


def test_analytic_latency_is_the_steady_point_of_the_mean_call():
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    task = load_budget(EXAMPLE).tasks[0]
    latency, label = deployment_latency(dep, concurrency=4, analytic=True)
    assert label == f"analytic: {dep.label()} at concurrency 4"
    s, call = latency(task), task.tokens_per_call
    cached = call.cache_read if dep.engine.prefix_caching else 0
    p = steady_point(dep, call.prompt_tokens, call.billed_output, 4, cached)
    assert (s.ttft_s.p95, s.tpot_s.p95, s.e2e_s.p95) == (p.ttft_s, p.tpot_s, p.e2e_s)
    assert deployment_latency(dep, 4)[1].startswith("simulated: ")


def test_a_predicted_latency_is_held_at_its_bands_pessimistic_edge():
    """As plan and cost selfhost hold an SLO (cost.capacity.Check): a TTFT limit between the prediction and its
    band's high edge passes when the prediction is judged, and fails when the edge is, the default."""
    from vazao.bands import deployment_band
    from vazao.budget import latency_band

    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    latency, label = deployment_latency(dep, concurrency=1, analytic=True)

    def budget_at(limit_s: float):
        return parse_budget(f"price: claude-sonnet-5.5\ntasks:\n  - name: t\n    ttft_p95: {limit_s * 1e3:.3f}ms\n"
                            "    tokens: {new_input: 17800, cached_input: 42000, output: 2000}\n    calls: 8\n")

    ttft = latency(budget_at(1.0).tasks[0]).ttft_s.p95
    edge = deployment_band(dep, "serving", ttft, metric="ttft_ms")
    assert edge is not None and edge.high > ttft
    budget = budget_at((ttft + edge.high) / 2)
    by_edge = check_budget(budget, simulate=latency, simulate_label=label, band=latency_band(dep))
    by_value = check_budget(budget, simulate=latency, simulate_label=label, band=latency_band(dep),
                            judge="prediction")
    (c_edge,), (c_value,) = ([c for c in r.tasks[0].checks if c.what == "ttft_p95"] for r in (by_edge, by_value))
    assert c_edge.ok is False and c_value.ok is True
    assert c_edge.band == pytest.approx((edge.low, edge.high)) and c_edge.judged_by == "band"
    assert "–" in c_edge.actual  # the band is shown beside the prediction
    # a measured run is what it is: no band
    assert check_budget(budget, simulate=latency, simulate_label=label).tasks[0].checks[-1].band is None


# ---- the error rate is part of every budget -------------------------------------------------------
def _failing_run(tmp_path: Path, requests: int, errors: int) -> Path:
    lat = Latency(0.1, 0.1, 0.2, 0.3, 0.4)  # the requests that succeeded were fast
    s = RunSummary(requests=requests, errors=errors, duration_s=10.0, ttft_s=lat, itl_s=lat, tpot_s=lat,
                   e2e_s=lat, request_throughput_per_s=0.6, output_tokens_per_s=60.0, total_tokens_per_s=100.0)
    path = tmp_path / f"run-{errors}-of-{requests}.json"
    path.write_text(json.dumps({"summary": s.to_json()}), encoding="utf-8")
    return path


def test_failed_requests_fail_the_budget(tmp_path):
    f = tmp_path / "budget.yaml"
    f.write_text(BASE, encoding="utf-8")
    run = _failing_run(tmp_path, 12, 6)  # 6 of 12 requests answered HTTP 500
    res = runner.invoke(app, ["budget", "check", str(f), "--measured", str(run), "--json"])
    assert res.exit_code == 1, res.output
    task = json.loads(res.stdout)["tasks"][0]
    assert task["misses"] == ["error_rate: 50.0% (6 of 12 requests failed) > 0.0%"]
    res = runner.invoke(app, ["budget", "check", str(f), "--measured", str(run)])
    assert res.exit_code == 1 and "6 of 12 requests failed" in res.output
    clean = _failing_run(tmp_path, 12, 0)
    assert runner.invoke(app, ["budget", "check", str(f), "--measured", str(clean)]).exit_code == 0


def test_max_error_rate_at_the_top_and_per_task(tmp_path):
    run = _failing_run(tmp_path, 200, 2)  # 1%
    b = parse_budget(BASE + "max_error_rate: 0.01\n")
    assert b.tasks[0].max_error_rate == Decimal("0.01")
    assert check_budget(b, measured_all=run).passed
    strict = parse_budget(BASE.replace("    max_cost_usd:", "    max_error_rate: 0.005\n    max_cost_usd:")
                          + "max_error_rate: 0.01\n")
    result = check_budget(strict, measured_all=run)
    assert not result.passed and result.tasks[0].misses == ["error_rate: 1.0% (2 of 200 requests failed) > 0.5%"]
    # without a run there is nothing to count: the error rate is checked whenever latency is
    assert check_budget(parse_budget(BASE)).tasks[0].passed
    with pytest.raises(VazaoError, match="max_error_rate must be a fraction"):
        parse_budget(BASE + "max_error_rate: 1.5\n")
