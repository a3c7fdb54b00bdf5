"""Self-hosted $/Mtok: the formula, the throughput sources (simulated, measured, analytic), the SLO."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vazao.analytic import max_load_throughput, slo_batch, steady_batch_limit, steady_point
from vazao.cli import app
from vazao.cost.selfhost import (
    Throughput,
    _bisect,
    _bracket,
    analytic_throughput,
    selfhost_cost,
    simulated_throughput,
    throughput_from_summary,
)
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.results import SLO, Latency, RunSummary
from vazao.workload import load_workload

runner = CliRunner()


def lat(v: float) -> Latency:
    return Latency(v, v, v, v, v)


def summary(rps=2.0, out=500.0, total=2500.0, goodput=None) -> RunSummary:
    return RunSummary(requests=100, errors=0, duration_s=50.0, ttft_s=lat(0.2), itl_s=lat(0.02),
                      tpot_s=lat(0.02), e2e_s=lat(5.0), request_throughput_per_s=rps, output_tokens_per_s=out,
                      total_tokens_per_s=total, goodput_requests_per_s=goodput)


def test_usd_per_mtok_by_hand():
    tp = Throughput(requests_per_s=2.0, input_tokens_per_s=4000.0, output_tokens_per_s=1000.0, source="measured",
                    detail="", input_time_share=0.25)
    c = selfhost_cost("x", 2, Decimal("1.8"), "given", tp)
    assert c.usd_per_hour == Decimal("3.6")
    assert c.usd_per_mtok_output == Decimal("1")  # $3.60/h over 3.6M output tokens/h
    assert c.usd_per_mtok_blended == Decimal("0.2")  # over 18M tokens/h
    assert c.usd_per_mtok_input_split == Decimal("0.0625")  # a quarter of $3.60 over 14.4M input tokens
    assert c.usd_per_mtok_output_split == Decimal("0.75")
    assert c.usd_per_request == Decimal("0.0005")
    half = selfhost_cost("x", 2, Decimal("1.8"), "given", tp, "0.5")
    assert half.usd_per_mtok_output == 2 * c.usd_per_mtok_output  # idle paid hours double the unit cost
    with pytest.raises(VazaoError, match="utilisation"):
        selfhost_cost("x", 1, Decimal(1), "given", tp, "0")


def test_measured_run_and_goodput():
    tp = throughput_from_summary(summary())
    assert (tp.output_tokens_per_s, tp.input_tokens_per_s, tp.source) == (500.0, 2000.0, "measured")
    good = throughput_from_summary(summary(goodput=1.5))
    assert good.requests_per_s == 1.5 and good.output_tokens_per_s == pytest.approx(375.0)


def test_analytic_without_slo_is_estimate_max_load_throughput():
    dep = make_deployment("llama-3.1-8b", "a100-sxm-80gb")
    tp = analytic_throughput(dep, 1000, 250)
    out, batch = max_load_throughput(dep, 1000, 250)
    assert tp.output_tokens_per_s == out and tp.batch == batch and tp.source == "analytic"
    # steady_point's cycle at the largest batch agrees with the offline waves (prefill in
    # chunks of the token budget, then decode together) to a few tenths of a percent
    p = steady_point(dep, 1000, 250, steady_batch_limit(dep, 1000, 250))
    assert p.output_tokens_per_s == pytest.approx(out, rel=0.01)


def test_a_tighter_slo_costs_more_per_token():
    dep = make_deployment("llama-3.1-8b", "a100-sxm-80gb")
    loose = analytic_throughput(dep, 1000, 250, SLO.parse("tpot_p95=100ms"))
    tight = analytic_throughput(dep, 1000, 250, SLO.parse("tpot_p95=20ms"))
    assert 0 < tight.output_tokens_per_s < loose.output_tokens_per_s
    # held at the band's pessimistic edge (SLO.parse's default judge, as plan and the simulated paths hold it)
    from vazao.cost.capacity import term_band

    def edge(batch: int) -> float:
        return term_band(dep, "tpot", steady_point(dep, 1000, 250, batch).tpot_s).high

    assert edge(tight.batch) <= 0.020 < edge(tight.batch + 1)
    # and at the value with --judge prediction
    by_value = analytic_throughput(dep, 1000, 250, SLO(SLO.parse("tpot_p95=20ms").limits, "prediction"))
    assert by_value.batch > tight.batch
    assert steady_point(dep, 1000, 250, by_value.batch).tpot_s <= 0.020
    assert steady_point(dep, 1000, 250, by_value.batch + 1).tpot_s > 0.020
    impossible = analytic_throughput(dep, 1000, 250, SLO.parse("tpot_p95=1ms"))
    assert impossible.output_tokens_per_s == 0 and "missed even at batch 1" in impossible.detail
    c = selfhost_cost("x", 1, Decimal("1.8"), "given", impossible)
    assert c.usd_per_mtok_output is None


def test_slo_batch_is_the_largest_batch_within_the_limits():
    dep = make_deployment("llama-3.1-8b", "a100-sxm-80gb")
    top = steady_batch_limit(dep, 1000, 250)
    limits = {"tpot_p95": 0.02, "ttft_p95": 1.0}
    p = slo_batch(dep, 1000, 250, limits, top)
    assert p is not None and 1 <= p.batch < top and p.meets(limits)
    assert not steady_point(dep, 1000, 250, p.batch + 1).meets(limits)
    assert slo_batch(dep, 1000, 250, {"tpot_p95": 0.001}, top) is None
    assert slo_batch(dep, 1000, 250, {"e2e_mean": 1e6}, top).batch == top  # nothing binds: the memory limit


def test_simulated_capacity_meets_the_slo():
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    slo = SLO.parse("ttft_p95=500ms,tpot_p95=40ms")
    tp = simulated_throughput(dep, load_workload("chat"), slo)
    assert tp is not None and tp.source == "simulated" and tp.output_tokens_per_s > 0
    # issue 20, point 2: the open-loop capacity of the one policy (cost.capacity), not a closed loop
    assert "Poisson" in tp.detail and "the highest that meets ttft_p95, tpot_p95" in tp.detail
    assert "warm-up" in tp.detail


def _rate_knee_sim(calls: list[float]):
    """A stand-in simulator whose p95 TTFT is 0.1 + 0.01 × (arrival rate) s."""
    from types import SimpleNamespace

    def fake(dep, workload, config=None, slo=None):
        rate = workload.arrival.rate
        calls.append(rate)
        assert workload.warmup >= workload.requests // 10  # the start from an empty engine is left out
        n = workload.requests - workload.warmup
        s = RunSummary(requests=n, errors=0, duration_s=10.0, ttft_s=lat(0.1 + 0.01 * rate), itl_s=lat(0.02),
                       tpot_s=lat(0.02), e2e_s=lat(1.0), request_throughput_per_s=rate,
                       output_tokens_per_s=25.0 * rate, total_tokens_per_s=125.0 * rate, prompt_tokens=100 * n,
                       output_tokens=25 * n)
        return SimpleNamespace(summary=s, mean_batch=rate)

    return fake


def test_simulated_search_finds_the_highest_rate_that_meets_the_slo():
    """The stand-in's p95 TTFT crosses 470 ms above 37 arrivals/s: the search lands within 3% below. The
    profile's calibration is taken off: with it the limit is judged at the band's pessimistic edge."""
    calls: list[float] = []
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    dep = replace(dep, engine=replace(dep.engine, calibration=None))
    tp = simulated_throughput(dep, load_workload("chat"), SLO.parse("ttft_p95=470ms"), simulate=_rate_knee_sim(calls))
    assert 37 / 1.03 <= tp.requests_per_s <= 37  # 0.1 + 0.01 × 37 = 0.47 s
    assert any(c > 37 for c in calls) and len(calls) == len(set(calls))  # it checked a rate above, once each
    never = simulated_throughput(dep, load_workload("chat"), SLO.parse("ttft_p95=50ms"),
                                 simulate=_rate_knee_sim(calls))
    assert never.output_tokens_per_s == 0 and "missed even" in never.detail


def test_the_capacity_search_judges_runs_of_the_length_asked():
    """By default a run of 400 requests, as a default `vazao plan` judges a replica (PlanInputs.requests); with
    `requests` another length, so that a plan judged on shorter runs is compared like for like (issue 20)."""
    lengths: list[int] = []
    inner = _rate_knee_sim([])

    def sim(dep, workload, config=None, slo=None):
        lengths.append(workload.requests)
        return inner(dep, workload, config, slo)

    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    dep = replace(dep, engine=replace(dep.engine, calibration=None))
    # the stand-in meets it up to 1 arrival/s, where a run is as long as asked (faster rates run longer: the
    # steady state needs a few multiples of the limits, cost.capacity.steady_length)
    slo = SLO.parse("ttft_p95=110ms")
    tp = simulated_throughput(dep, load_workload("chat"), slo, simulate=sim)
    assert min(lengths) == 400 and "360 requests judged" in tp.detail
    lengths.clear()
    tp = simulated_throughput(dep, load_workload("chat"), slo, simulate=sim, requests=200)
    assert min(lengths) == 200 and "180 requests judged" in tp.detail


def test_selfhost_cli_names_its_throughput_source(tmp_path):
    base = ["cost", "selfhost", "llama-3.1-8b", "--gpu", "a100-sxm-80gb", "--usd-per-hour", "1.8", "--count", "1"]
    res = runner.invoke(app, [*base, "--input", "1000", "--output", "250", "--analytic", "--slo", "none", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["throughput_source"] == "analytic" and d["usd_per_gpu_hour"] == "1.8" and d["slo"] is None
    dep = make_deployment("llama-3.1-8b", "a100-sxm-80gb")
    out, _ = max_load_throughput(dep, 1000, 250)
    expected = (Decimal("1.8") / (Decimal(repr(out)) * 3600) * 1_000_000).quantize(Decimal("0.000001"))
    assert Decimal(d["usd_per_mtok_output"]) == expected

    res = runner.invoke(app, [*base, "--workload", "chat", "--slo", "ttft_p95=500ms,tpot_p95=40ms", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["throughput_source"] == "simulated"

    run = tmp_path / "run.json"
    run.write_text(json.dumps({"summary": summary().to_json()}), encoding="utf-8")
    res = runner.invoke(app, [*base, "--measured", str(run), "--slo", "none", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["throughput_source"] == "measured"
    assert Decimal(d["usd_per_mtok_output"]) == Decimal("1")  # $1.80/h over 500 tok/s = 1.8M tok/h

    res = runner.invoke(app, ["cost", "selfhost", "llama-3.1-8b", "--gpu", "a100-sxm-80gb"])
    assert res.exit_code == 2 and "--workload" in res.output
    res = runner.invoke(app, [*base, "--input", "10", "--output", "10", "--slo", "ttft=1s"])
    assert res.exit_code == 2 and "SLO term" in res.output
    res = runner.invoke(app, [*base, "--input", "10", "--output", "10", "--utilisation", "150%"])
    assert res.exit_code == 2 and "--utilisation" in res.output


def test_catalog_rental_price_is_reused():
    res = runner.invoke(app, ["cost", "selfhost", "llama-3.1-8b", "--gpu", "h100-sxm", "--count", "1",
                              "--input", "500", "--output", "200", "--analytic", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    from vazao.catalog.hardware import get_accelerator

    assert Decimal(d["usd_per_gpu_hour"]) == Decimal(repr(get_accelerator("h100-sxm").usd_per_hour))
    assert d["usd_per_gpu_hour_source"].startswith("catalog:")


def test_selfhost_states_its_default_slo_and_costs_a_given_traffic():
    base = ["cost", "selfhost", "llama-3.1-8b", "--gpu", "a100-sxm-80gb", "--count", "1", "--input", "1000",
            "--output", "250", "--analytic"]
    res = runner.invoke(app, base)
    assert res.exit_code == 0 and ("SLO: ttft_p95 ≤ 1000 ms, tpot_p95 ≤ 50 ms, each held at its band's pessimistic "
                                   "edge (the default") in res.output
    d = json.loads(runner.invoke(app, [*base, "--json"]).stdout)
    assert d["slo_is_default"] is True and d["slo"] == {"ttft_p95": 1.0, "tpot_p95": 0.05}
    full = d
    rps = float(full["throughput"]["requests_per_s"])
    # twice the capacity: two copies, each fully busy, the same $/Mtok
    two = json.loads(runner.invoke(app, [*base, "--traffic", f"{2 * rps}/s", "--json"]).stdout)
    assert two["gpus"] == 2 and Decimal(two["usd_per_mtok_output"]) == Decimal(full["usd_per_mtok_output"])
    # half the capacity: one copy, half busy, twice the $/Mtok
    half = json.loads(runner.invoke(app, [*base, "--traffic", f"{rps / 2}/s", "--json"]).stdout)
    assert half["gpus"] == 1
    assert float(half["usd_per_mtok_output"]) == pytest.approx(2 * float(full["usd_per_mtok_output"]), rel=1e-3)


def _knee_sim(calls: list[int]):
    """A stand-in simulator whose p95 TTFT is 0.1 + 0.01 × concurrency s, mean batch = concurrency."""
    from types import SimpleNamespace

    def fake(dep, workload, slo=None):
        c = workload.concurrency
        calls.append(c)
        assert workload.warmup == c  # the t = 0 burst is left out of the summary
        n = workload.requests - c
        s = RunSummary(requests=n, errors=0, duration_s=10.0, ttft_s=lat(0.1 + 0.01 * c), itl_s=lat(0.02),
                       tpot_s=lat(0.02), e2e_s=lat(1.0), request_throughput_per_s=c / 10,
                       output_tokens_per_s=25.0 * c, total_tokens_per_s=125.0 * c, prompt_tokens=100 * n,
                       output_tokens=25 * n)
        return SimpleNamespace(summary=s, mean_batch=float(c))

    return fake


def test_simulated_search_saturates_without_an_slo():
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    calls: list[int] = []
    top = dep.engine.max_num_seqs * dep.replicas
    sat = simulated_throughput(dep, load_workload("chat"), None, simulate=_knee_sim(calls))
    assert calls == [top] and sat.batch == top and "no SLO (saturated)" in sat.detail
    assert sat.input_time_share is not None and 0 < sat.input_time_share < 1


@settings(max_examples=200, deadline=None)
@given(top=st.integers(1, 128), start=st.integers(1, 128), knee=st.integers(0, 128))
def test_bracket_then_bisect_finds_the_highest_concurrency_that_meets(top, start, knee):
    """Met up to the knee, missed above it: doubling/halving then bisecting lands on the knee (capped by
    top) — exactly, since a bracket up to 128 wide closes within BISECT_STEPS halvings."""
    knee, start = min(knee, top), min(start, top)
    good, bad = _bracket(lambda c: c <= knee, start, top)
    if knee == 0:
        assert good is None
    else:
        assert _bisect(lambda c: c <= knee, good, bad) == knee
