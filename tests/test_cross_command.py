"""One answer, whichever command gives it: estimate, simulate, cost selfhost, fit and plan agree on the same
deployment, and no figure or band claims more than the hardware can do. Each case is one a new user found
(2026-12-08 audit): a band past the roofline, an "ideal" that changed with the engine, a closed loop's throughput
counted without its warm-up's tokens, an SLO held at the value where the header said the band's edge, a deployment
priced that its engine would refuse to start, and a count chosen by one model and reported by another."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from vazao.analytic import estimate
from vazao.cost.policy import RequestShape, SelfHostQuery, fixed_workload, mean_shape, selfhost, selfhost_for
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.results import SLO, Background, RequestRecord, summarize
from vazao.sim import SimConfig, simulate
from vazao.workload import load_workload, workload_from_dict


def _fixed(n_in: int, n_out: int, concurrency: int, requests: int, warmup: int = 0):
    w = workload_from_dict({"name": "fixed", "arrival": {"kind": "concurrency", "concurrency": concurrency},
                            "prompt": n_in, "output": n_out, "requests": requests, "seed": 1}, where="test")
    return replace(w, warmup=warmup)


@pytest.mark.parametrize(("model", "gpu", "fmt", "engine"), [
    ("llama-3.1-70b", "l40s", "int4-awq", "sglang"),  # a band widened for generation, format and family
    ("llama-3.1-8b", "l40s", "bf16", "vllm"),
    ("llama-3.1-8b", "rtx-4090", "bf16", "vllm"),
])
def test_no_band_claims_more_than_the_physical_limit(model, gpu, fmt, engine):
    """The fast edge of every band stops at the idealized profile's figure (efficiencies 1, no overheads): a
    step of Llama-3.1-70B INT4-AWQ on one L40S reads 38.8 GB, at least 45.2 ms at 864 GB/s, so no band may say
    27 tok/s at batch 1 (the audit's case: 14.1–27.1)."""
    dep = make_deployment(model, gpu, fmt, engine=engine)
    ideal = make_deployment(model, gpu, fmt, engine=engine, ideal=True)
    est, lim = estimate(dep, (1, 8, 32), 1024, 256), estimate(ideal, (1, 8, 32), 1024, 256)
    for row, top in zip(est.rows, lim.rows, strict=True):
        assert row.tokens_per_s_band is not None
        assert row.tokens_per_s_band.high <= top.tokens_per_s_total * (1 + 1e-9)
        assert row.decode_step_band.low >= top.decode_step_s * (1 - 1e-9)
        assert row.ttft_band.low >= top.ttft_s * (1 - 1e-9)
    assert est.max_load_band.high <= lim.max_load_tokens_per_s * (1 + 1e-9)
    assert est.latency_floor_band.low >= lim.latency_floor_s * (1 - 1e-9)


def test_the_ideal_is_one_bound_whatever_the_engine_and_has_no_band():
    """--ideal is the roofline with no losses: TensorRT-LLM's fitted overlap (0.398) or llama.cpp's unpacking
    work are losses too, so every engine's ideal is the same number, and a bound has no error band."""
    steps = set()
    for engine in ("vllm", "sglang", "trtllm", "ideal"):
        e = estimate(make_deployment("llama-3.1-8b", "l40s", "fp8", "fp8", engine=engine, ideal=True), (1,), 1024, 256)
        r = e.rows[0]
        steps.add((round(r.ttft_s, 12), round(r.decode_step_s, 12)))
        assert r.tokens_per_s_band is None and r.ttft_band is None and e.physical_limit
        # the roofline's max of compute and memory: the prompt's time is its compute (no share of the memory)
        assert r.prefill.time_s == pytest.approx(max(r.prefill.compute_s, r.prefill.memory_s) + r.prefill.comm_s)
    assert len(steps) == 1


def test_a_closed_loops_throughput_counts_the_warm_ups_work_in_its_window():
    """A closed loop of 256 clients on one RTX 4090 holds ~31 sequences: the first 256 requests (the warm-up
    burst) are still being served long after the first counted request arrives. The window's throughput counts
    their tokens made inside it, or it reads ~18% low (the audit: 643 against 780 tok/s for the same run)."""
    dep = make_deployment("llama-3.1-8b", "rtx-4090", "bf16", engine="vllm")
    warm = simulate(dep, _fixed(1024, 256, 256, 256 + 600, warmup=256)).summary
    cold = simulate(dep, _fixed(1024, 256, 256, 256 + 600)).summary
    assert warm.output_tokens_per_s == pytest.approx(cold.output_tokens_per_s, rel=0.03)
    # the window's rates stay one request's mix
    assert warm.output_tokens_per_s == pytest.approx(warm.request_throughput_per_s * 256, rel=1e-9)


def test_background_counts_a_records_tokens_inside_the_window_only():
    bg = Background.of([RequestRecord("a", "measured", 0.0, 100, 11, 1.0, 11.0)])  # first token at 1, end at 11
    assert bg.within(0.0, 20.0) == pytest.approx((1.0, 100.0, 11.0))
    assert bg.within(6.0, 20.0) == pytest.approx((5 / 11, 500 / 11, 5.0))  # half the 10 spread tokens
    counted = [RequestRecord("b", "measured", 6.0, 100, 11, 7.0, 17.0)]
    s = summarize(counted, background=bg)  # window 6 → 17 s: b's 11 tokens and 5 of a's
    assert s.output_tokens_per_s == pytest.approx(16 / 11)
    assert s.output_tokens == 11 and s.prompt_tokens == 100  # the totals are the counted records' own


@pytest.mark.parametrize("analytic", [False, True])
def test_cost_selfhost_holds_the_slo_at_the_bands_edge_as_its_header_says(analytic):
    """`--judge band` (the default) holds each latency's pessimistic edge to the limit, as plan does; `--judge
    prediction` the value. The edge is further from the limit, so the band's answer runs a smaller batch."""
    slo = SLO.parse("ttft_p95=1s,tpot_p95=50ms")
    q = SelfHostQuery("llama-3.1-8b", "rtx-4090", RequestShape(1024, 256), fixed_workload(1024, 256), count=1,
                      fmt="fp8", slo=slo, analytic=analytic)
    band = selfhost_for(q).throughput
    value = selfhost_for(replace(q, slo=SLO(slo.limits, "prediction"))).throughput
    assert band.batch < value.batch and band.output_tokens_per_s < value.output_tokens_per_s


def test_no_command_prices_or_simulates_a_deployment_its_engine_would_not_start():
    """vLLM will not start when its KV cache cannot hold one max_model_len sequence
    (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory). Llama-3.1-70B FP8 on one H100 holds ~6.2k
    tokens of KV; chat's longest request is 7,168: fit says it does not fit, plan prunes it, and simulate and cost
    refuse it the same way instead of pricing it."""
    chat = load_workload("chat")
    with pytest.raises(VazaoError, match="would not start"):
        selfhost_for(SelfHostQuery("llama-3.1-70b", "h100-sxm", mean_shape(chat.specs()), chat, count=1, fmt="fp8"))
    dep = make_deployment("llama-3.1-70b", "h100-sxm", "fp8", engine="vllm")
    with pytest.raises(VazaoError, match="would not start"):
        simulate(dep, load_workload("chat", requests=50))
    # a context the cache holds runs (the longer requests refused, as the engine would)
    res = simulate(dep, load_workload("chat", requests=50), SimConfig.from_engine(dep.engine, max_context=4096))
    assert res.completed > 0


def test_plan_and_cost_draw_the_same_workload():
    """Both draw the workload with its own seed (plan's --seed overrides it only when given), so the batch cap
    and the $/Mtok they show for one deployment at one traffic are the same figures."""
    from vazao.plan import PlanInputs, Traffic, run_plan

    inp = PlanInputs(workload="chat", traffic=Traffic(rate=10.0), slo=SLO.parse("ttft_p95=1s,tpot_p95=50ms"),
                     models=("llama-3.1-8b",), gpus=("rtx-4090",), formats=("fp8",), requests=200, simulate_top=2,
                     disagg=False)
    r = run_plan(inp, workers=1)
    w = r.winner
    chat = load_workload("chat")
    cost = selfhost(SelfHostQuery("llama-3.1-8b", "rtx-4090", mean_shape(chat.specs()), chat,
                                  count=w.shape.gpus_per_replica, fmt="fp8", slo=inp.slo), rps=10.0).cost
    assert cost.throughput.batch == w.max_batch
    demand = load_workload("chat").with_overrides(requests=20_000).specs()
    mean_out = sum(s.output_tokens for s in demand) / len(demand)
    assert r.lengths.output_mean == pytest.approx(mean_out, rel=0.02)
    assert math.isclose(float(w.usd_per_mtok), float(cost.usd_per_mtok_output), rel_tol=0.03)
