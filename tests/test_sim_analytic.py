"""The simulator against the analytic model (one cost model, two users), and its bookkeeping."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vazao.analytic import estimate, max_load_throughput
from vazao.catalog.models import get_model
from vazao.physics.deployment import make_deployment
from vazao.physics.step import BatchShape, step_cost
from vazao.results import SLO, Latency, pooled_gaps, summarize
from vazao.sim import simulate
from vazao.workload import load_workload, workload_from_dict


@pytest.fixture(scope="module")
def h100_8b():
    return make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")


@pytest.fixture(scope="module")
def h100x4_70b():
    return make_deployment(get_model("llama-3.1-70b"), "h100-sxm", "bf16", count=4)


def closed(concurrency: int, prompt, output, requests: int, warmup: int = 0):
    return workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": concurrency},
                               "prompt": prompt, "output": output, "requests": requests, "warmup": warmup})


@pytest.mark.parametrize("which", ["h100_8b", "h100x4_70b"])
def test_one_request_alone_equals_the_analytic_ttft_and_decode_time(which, request):
    dep = request.getfixturevalue(which)
    prompt, output = 1000, 200
    rec = simulate(dep, closed(1, prompt, output, 1)).records()[0]
    row = estimate(dep, [1], prompt, output).rows[0]
    assert rec.ttft_s == pytest.approx(row.ttft_s, rel=1e-12)  # the same prefill step
    decode = sum(step_cost(dep, BatchShape.decode(1, prompt + i)).time_s for i in range(output - 1))
    assert rec.end_s - rec.first_token_s == pytest.approx(decode, rel=1e-12)  # one step per token
    # estimate() prices every decode step at the mean context: equal to well under 0.1 %
    assert rec.e2e_s == pytest.approx(row.e2e_s, rel=1e-3)


def test_a_long_prompt_is_prefilled_in_budget_sized_chunks(h100_8b):
    prompt = 20_000  # vLLM's budget is 8,192 tokens per step
    rec = simulate(h100_8b, closed(1, prompt, 2, 1)).records()[0]
    chunks = [(8192, 0, False), (8192, 8192, False), (prompt - 16384, 16384, True)]  # logits on the last
    expected = sum(step_cost(h100_8b, BatchShape.from_sequences([c])).time_s for c in chunks)
    # plus the engine's fixed cost per request (front end, tokenisation), paid once before its first token
    expected += h100_8b.engine.request_overhead_s
    assert rec.ttft_s == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("which,tolerance", [("h100_8b", 0.08), ("h100x4_70b", 0.18)])
def test_at_saturation_throughput_approaches_the_analytic_max_load(which, tolerance, request):
    dep = request.getfixturevalue(which)
    prompt, output = 1000, 200
    sim = simulate(dep, closed(600, prompt, output, 6000, warmup=1000))
    analytic, batch = max_load_throughput(dep, prompt, output)
    ratio = sim.summary.output_tokens_per_s / analytic
    # The analytic figure charges each prefill its compute time only; the simulator also pays its
    # all-reduces (tp 4) and a slot's idle step between a completion and the next admission. It also runs the
    # prompts' chunks in the decodes' steps, whose memory time hides under the chunk's compute, where the
    # analytic waves prefill apart: 8B on one H100 sustains 1.07-1.08 × the analytic figure with or without a
    # warm-up left out (its work in the window counted, results.Background; 6,000 and 12,000 requests alike).
    assert 1 - tolerance <= ratio <= 1.10, ratio
    assert sim.peak_running == batch


def test_same_seed_same_run(h100_8b):
    w = load_workload("chat", requests=300)
    a, b = simulate(h100_8b, w), simulate(h100_8b, w)
    assert a.summary == b.summary and a.steps == b.steps
    c = simulate(h100_8b, load_workload("chat", requests=300, seed=99))
    assert c.summary != a.summary


def test_summary_equals_summarize_on_the_expanded_records(h100_8b):
    r = simulate(h100_8b, load_workload("chat", requests=400, rate=20).with_overrides())
    # limits between the run's own medians and tails, so that some requests meet them and some do not
    # whatever the calibrated profile's speed
    slo = SLO({"ttft_p95": r.summary.ttft_s.p90, "tpot_p95": r.summary.tpot_s.p90})
    plain = [replace(x, itl_s=tuple(x.itl_s)) for x in r.records()]  # the gaps as one float per token
    assert summarize(plain) == summarize(r.records()) == r.summary
    with_slo = summarize(r.records(), slo)
    assert summarize(plain, slo) == with_slo
    gaps = [g for x in plain for g in x.itl_s]
    assert r.summary.itl_s.p99 == pytest.approx(float(np.percentile(gaps, 99)), rel=1e-12)
    assert 0 < with_slo.goodput_requests_per_s < with_slo.request_throughput_per_s


def test_pooled_itl_counts_every_gap_once(h100_8b):
    w = load_workload("chat", requests=200)
    r = simulate(h100_8b, w)
    _, weights = pooled_gaps(r.records())
    assert int(weights.sum()) == sum(rec.output_tokens - 1 for rec in r.records())
    assert all(len(rec.itl_s) == rec.output_tokens - 1 for rec in r.records())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.001, 10.0), st.integers(0, 7)), min_size=1, max_size=40))
def test_weighted_latency_equals_the_repeated_values(pairs):
    values = [v for v, _ in pairs]
    weights = [w for _, w in pairs]
    repeated = [v for v, w in pairs for _ in range(w)]
    got = Latency.of(values, weights)
    want = Latency.of(repeated)
    for name in ("mean", "p50", "p90", "p95", "p99"):
        if want.get(name) is None:
            assert got.get(name) is None
        else:
            assert got.get(name) == pytest.approx(want.get(name), rel=1e-9, abs=1e-12)
