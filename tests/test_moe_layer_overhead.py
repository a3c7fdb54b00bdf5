"""A MoE layer's fixed time per step (EngineProfile.moe_layer_overhead_s): its router, top-k, token permutation,
grouped expert GEMMs and finalize are a dozen short kernels whose own latency a step's few tokens per expert do not
hide, where a dense layer's few large GEMMs hide theirs under the weights' reads. Charged with the step's fixed
overhead, per MoE layer a GPU runs.

The serving file shows why a constant per step could not do: TensorRT-LLM's base fit charged 3.7 ms to every step,
which gpt-oss-120b's decode needs (5.85 ms TPOT at 4 clients on 2 H200, published-serving.csv aic-03134) and
Llama-3.1-70B FP8 does not (6.26 ms at 4 clients on 8 H200, aic-04336: 6.95 ms predicted, +11%)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vazao.physics.deployment import make_deployment
from vazao.physics.profiles import get_engine
from vazao.physics.step import BatchShape, StepTimer, step_cost

SERVING = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-serving.csv"


def _eng(per_layer: float):
    return dataclasses.replace(get_engine("trtllm").at_version((1, 0)), moe_layer_overhead_s=per_layer)


def test_each_moe_layer_adds_its_time_to_every_step_and_a_dense_model_none():
    decode = BatchShape.decode(4, 2048)
    for name, tp, moe_layers in (("gpt-oss-120b", 2, 36), ("qwen3-235b-a22b", 8, 94)):
        with_it = make_deployment(name, "h200-sxm", "fp8", count=tp, tp=tp, engine=_eng(5e-5))
        without = make_deployment(name, "h200-sxm", "fp8", count=tp, tp=tp, engine=_eng(0.0))
        assert with_it.model.moe_layers == moe_layers
        assert with_it.consts.step_overhead_s - without.consts.step_overhead_s == pytest.approx(5e-5 * moe_layers)
        # the engine's host overlap hides a share of the shorter of host and device work: at least the rest shows
        extra = step_cost(with_it, decode).time_s - step_cost(without, decode).time_s
        assert (1 - with_it.engine.host_overlap) * 5e-5 * moe_layers * 0.999 <= extra <= 5e-5 * moe_layers * 1.001
    dense = [make_deployment("llama-3.1-70b", "h200-sxm", "fp8", count=8, tp=8, engine=_eng(v)) for v in (0.0, 5e-5)]
    assert step_cost(dense[0], decode).time_s == step_cost(dense[1], decode).time_s


def test_a_pipeline_stage_pays_for_its_own_moe_layers_and_the_timer_agrees():
    one = make_deployment("qwen3-235b-a22b", "h200-sxm", "fp8", count=8, tp=8, engine=_eng(5e-5))
    two = make_deployment("qwen3-235b-a22b", "h200-sxm", "fp8", count=8, tp=4, pp=2, engine=_eng(5e-5))
    base = _eng(0.0).step_overhead_s
    assert one.consts.step_overhead_s == pytest.approx(base + 5e-5 * 94)
    assert two.consts.step_overhead_s == pytest.approx(base + 5e-5 * 47)
    timer = StepTimer(one.consts)
    for n, new, ctx in ((4, 4, 4 * 2048), (16, 16 + 512, 16 * 1024)):
        shape = BatchShape(n, new, ctx, float(new * 10), n)
        assert timer.time(n, new, ctx, float(new * 10), n) == step_cost(one, shape).time_s


def test_the_shipped_profile_charges_it_where_its_fit_found_it():
    """bench/serving_fit.py --release base fitted it on TensorRT-LLM's base rows (gpt-oss-120b, DeepSeek: 52 us),
    --release 1.1 on 1.1's (DeepSeek: 8 us), and SGLang's base refit of 2026-12-07 on its rows (DeepSeek-R1/V3:
    12 us); release 1.0's fit found none (Qwen3-235B), vLLM's none, and the entries fitted without it (0.14, 0.17)
    keep none (calibration.yaml)."""
    eng = get_engine("trtllm")
    assert 1e-5 < eng.at_version(None).moe_layer_overhead_s < 2e-4
    assert 0.0 < eng.at_version((1, 1, 0)).moe_layer_overhead_s < 1e-4
    for release in ((0, 14), (0, 17), (1, 0)):
        assert eng.at_version(release).moe_layer_overhead_s == 0.0
    assert 0.0 < get_engine("sglang").moe_layer_overhead_s < 1e-4
    for name in ("vllm", "llama.cpp"):
        assert get_engine(name).moe_layer_overhead_s == 0.0
    assert eng.idealized().moe_layer_overhead_s == 0.0


@pytest.mark.skipif(not SERVING.exists(), reason="shared/data is not beside this checkout")
def test_the_validator_predicts_a_dense_and_a_moe_decode_of_the_same_campaign():
    """aic-03134: gpt-oss-120b on 2 H200, 1,024/1,024 tokens, 4 clients, TPOT 5.85 ms; aic-04336: Llama-3.1-70B FP8
    on 8 H200, the same lengths and clients, TPOT 6.26 ms (TensorRT-LLM, release not stated: the base)."""
    from vazao.validate.predict import predict
    from vazao.validate.rows import read_rows

    rows, _ = read_rows(SERVING)
    byid = {r.id: r for r in rows if r.id in ("aic-03134", "aic-04336")}
    assert byid["aic-03134"].value == pytest.approx(5.85, abs=0.01)
    assert byid["aic-04336"].value == pytest.approx(6.26, abs=0.01)
    for row in byid.values():
        assert abs(predict(row).value / row.value - 1) < 0.1
