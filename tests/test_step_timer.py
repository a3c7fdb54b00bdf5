"""physics.step.StepTimer is step_cost without the objects (the simulator's hot path): it repeats
step_work and roofline's operations in the same order, so its times must equal step_cost's exactly, on
every deployment shape the cost model has a branch for. This test is what keeps the two from drifting
apart: "one cost model" holds only while it passes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vazao.physics.deployment import make_deployment
from vazao.physics.profiles import get_engine
from vazao.physics.step import BatchShape, StepTimer, step_cost


def _profile(name: str, **changes):
    return dataclasses.replace(get_engine(name), **changes)


# one deployment per branch of the cost model: dense, FP8, weight-only INT4 (dequant), MoE (routed experts),
# sliding windows, tensor and pipeline parallel, and a profile with a GEMM ramp, partial overlap, a
# pipeline bubble and host overlap (the terms StepTimer skips when they are zero)
DEPLOYMENTS = {
    "dense": lambda: make_deployment("llama-3.1-8b", "h100-sxm"),
    "fp8-trtllm": lambda: make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=4, engine="trtllm"),
    "int4": lambda: make_deployment("llama-3.1-8b", "l4", "int4-awq"),
    "moe": lambda: make_deployment("qwen3-30b-a3b", "h100-sxm", engine="sglang"),
    "window": lambda: make_deployment("gemma-2-9b", "a100-sxm-80gb"),
    "scores": lambda: make_deployment("llama-3.1-8b", "rtx-4090", "q4_k_m", engine="llama.cpp"),
    "scores-plain": lambda: make_deployment("llama-3.1-8b", "a100-sxm-80gb", engine=_profile(
        "llama.cpp", roofline_overlap=1.0, host_overlap=0.0)),
    "tp2-pp2": lambda: make_deployment("llama-3.1-70b", "h100-sxm", count=4, tp=2, pp=2),
    "expert-parallel": lambda: make_deployment("deepseek-v3", "h200-sxm", "fp8", count=8, engine="trtllm",
                                               expert_parallel=8),
    "attention-dp": lambda: make_deployment("qwen3-30b-a3b", "h100-sxm", "fp8", count=4, engine="trtllm",
                                            attention_dp=True),
    # a step with prompt tokens lasts at least its layers' eager launches (TensorRT-LLM's PyTorch executor)
    "eager-floor": lambda: make_deployment("llama-3.1-8b", "h100-sxm", "fp8", engine=_profile(
        "trtllm", eager_step_layer_s=0.004)),
    "every-term": lambda: make_deployment(
        "qwen3-30b-a3b", "h100-sxm", count=2, tp=2,
        engine=_profile("vllm", compute_ramp_tokens=512.0, roofline_overlap=0.7, pipeline_bubble=0.3,
                        host_overlap=0.5)),
}


@pytest.fixture(scope="module", params=sorted(DEPLOYMENTS))
def dep(request):
    return DEPLOYMENTS[request.param]()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 512), new_per=st.integers(1, 4096), ctx_per=st.integers(0, 32_768),
       emit=st.booleans())
def test_any_step_is_step_cost(dep, n, new_per, ctx_per, emit):
    new, ctx = n * new_per, n * ctx_per
    pairs = n * (new_per * ctx_per + new_per * (new_per + 1) / 2.0)
    logits = n if emit else 0
    timer = StepTimer(dep.consts)
    assert timer.time(n, new, ctx, pairs, logits) == step_cost(dep, BatchShape(n, new, ctx, pairs, logits)).time_s
    # the same step with its pairs decoding (MLA's latent-space attention on the DeepSeek deployment)
    assert (timer.time(n, new, ctx, pairs, logits, pairs)
            == step_cost(dep, BatchShape(n, new, ctx, pairs, logits, pairs)).time_s)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 512), ctx_per=st.integers(0, 32_768), steps=st.integers(1, 80))
def test_a_run_of_decode_steps_is_step_cost_step_by_step(dep, n, ctx_per, steps):
    timer = StepTimer(dep.consts)
    ctx = n * ctx_per
    # step j: every member one token longer; the first step's context + n is c0
    expected = [step_cost(dep, BatchShape.decode(n, ctx_per + j)).time_s for j in range(steps)]
    assert [timer.decode_time(n, ctx + j * n) for j in range(steps)] == expected
    assert timer.decode_list(n, ctx + n, steps) == expected
    out = np.empty(steps)
    timer.decode_times(n, ctx + n, out)
    assert out.tolist() == expected


def test_the_deployments_reach_the_branches():
    """The deployments above are the branches they claim (a renamed model would silently test less)."""
    built = {k: f() for k, f in DEPLOYMENTS.items()}
    assert built["moe"].model.num_experts and built["int4"].weight_format.name == "int4-awq"
    assert built["window"].consts.shard.kv_bytes_per_token_window > 0
    assert built["tp2-pp2"].pp == 2 and built["every-term"].engine.host_overlap == 0.5
    assert built["expert-parallel"].consts.shard.attn_flops_per_decode_pair_extra > 0  # MLA's decode
    assert built["scores"].consts.shard.score_bytes_per_pair_full > 0  # an unfused engine's score matrix
    assert built["scores"].consts.shard.dequant_pass_tokens == 32  # steps of 33+ tokens unpack Q4_K_M first
    plain = StepTimer(built["scores-plain"].consts)
    assert plain._plain and not any(plain._decode_terms(8)[k] for k in (1, 3, 4))  # the memory-only fast path
