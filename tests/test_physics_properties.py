"""Property tests over the cost model: monotone in bandwidth and bits, bounded by the roofline."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest
from hypothesis import example, given, reject, settings
from hypothesis import strategies as st

from vazao.catalog.formats import formats
from vazao.catalog.hardware import accelerators
from vazao.catalog.models import models
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.physics.memory import weights_bytes
from vazao.physics.step import BatchShape, step_cost

MODELS = sorted(models())
GPUS = sorted(accelerators())
FORMATS = sorted(formats())
shapes = st.builds(
    lambda b, n, c: BatchShape.from_sequences([(n, c)] * b),
    st.integers(1, 256), st.integers(1, 4096), st.integers(0, 32768),
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(GPUS), shapes, st.floats(1.01, 4.0), st.booleans())
def test_more_bandwidth_is_never_slower(model, gpu, shape, factor, ideal):
    acc = accelerators()[gpu]
    faster = replace(acc, memory_bandwidth_bytes_per_s=acc.memory_bandwidth_bytes_per_s * factor)
    m = models()[model]
    fmt = "fp16"
    slow = make_deployment(m, acc, fmt, ideal=ideal, strict=False, engine="llama.cpp")
    fast = make_deployment(m, faster, fmt, ideal=ideal, strict=False, engine="llama.cpp")
    assert step_cost(fast, shape).time_s <= step_cost(slow, shape).time_s


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(FORMATS), st.sampled_from(FORMATS))
def test_fewer_weight_bits_never_need_more_memory(model, a, b):
    fa, fb = formats()[a], formats()[b]
    m = models()[model]
    if fa.weight_bits <= fb.weight_bits and fa.embed_bits <= fb.embed_bits:
        assert weights_bytes(m, fa) <= weights_bytes(m, fb)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from(FORMATS), shapes,
       st.sampled_from(["vllm", "ideal", "llama.cpp"]), st.sampled_from([1, 2, 4, 8]))
# the ideal profile charges a weight-only format's unpacking work, which the step counts in its FLOPs (a draw that
# found it uncharged once: Falcon-180B INT4-AWQ on an M1, 9 tokens)
@example("falcon-180b", "m1", "int4-awq", BatchShape.from_sequences([(9, 0)]), "ideal", 8)
def test_throughput_never_exceeds_the_roofline(model, gpu, fmt, shape, engine, tp):
    acc = accelerators()[gpu]
    m = models()[model]
    try:
        dep = make_deployment(m, acc, fmt, count=tp, engine=engine, strict=False)
    except VazaoError:  # a deployment the catalog refuses: engine not on this vendor, tp not dividing the heads
        reject()  # counted by hypothesis, which fails the test if most draws were refused
    cost = step_cost(dep, shape)
    # The step can never beat streaming its bytes at full bandwidth or its FLOPs at the best peak.
    best_peak = max(acc.peak_flops.values())
    assert cost.time_s >= cost.bytes / acc.memory_bandwidth_bytes_per_s * (1 - 1e-9)
    assert cost.time_s >= cost.flops / best_peak * (1 - 1e-9)
    tokens_per_s = shape.new_tokens / cost.time_s
    # Every computed token runs at least the layers' matmuls (the lm_head only runs for tokens that
    # emit logits), so tokens/s is capped by the best peak over 2 FLOPs per active non-head parameter.
    roofline = best_peak * tp / (2 * (m.active_params - m.lm_head_params))
    assert tokens_per_s <= roofline * (1 + 1e-9)


def test_mapping_proxy_is_preserved_by_replace():
    acc = accelerators()["h100-sxm"]
    assert isinstance(replace(acc, memory_bandwidth_bytes_per_s=1.0).peak_flops, MappingProxyType)


def test_narrow_expert_shards_slow_only_the_routed_experts_gemms():
    # an expert of Qwen3-235B has 1,536 intermediate columns (its config.json: moe_intermediate_size): 384 per
    # rank at tp 4, 192 at tp 8. With moe_width_ramp_cols r its GEMMs run at c / (c + r) of moe_efficiency, so
    # the routed experts' compute time grows by (c + r) / c and nothing else moves (physics/step.py)
    from vazao.physics.step import StepConstants, step_work

    shape = BatchShape.prefill(1, 8192)
    for tp, cols in ((4, 384), (8, 192)):
        base = make_deployment("qwen3-235b-a22b", "h200-sxm", "fp8", strict=False, engine="vllm", tp=tp, count=tp)
        off = replace(base, engine=replace(base.engine, moe_width_ramp_cols=0.0, compute_ramp_tokens=0.0))
        on = replace(off, engine=replace(off.engine, moe_width_ramp_cols=256.0))
        c_off, c_on = StepConstants.of(off), StepConstants.of(on)
        assert c_on.shard.expert_shard_cols == cols
        assert c_on.expert_eff == pytest.approx(c_off.expert_eff * cols / (cols + 256.0), rel=1e-12)
        assert (c_on.matmul_eff, c_on.memory_eff) == (c_off.matmul_eff, c_off.memory_eff)
        w = step_work(c_on.shard, shape)
        extra = w.expert_flops / (c_on.matmul_peak * c_off.expert_eff) * 256.0 / cols
        assert step_cost(on, shape).compute_s - step_cost(off, shape).compute_s == pytest.approx(extra, rel=1e-9)
    # a dense model has no experts to narrow
    dense = make_deployment("llama-3.1-70b", "h200-sxm", "fp8", strict=False, engine="vllm", tp=8, count=8)
    ramped = replace(dense, engine=replace(dense.engine, moe_width_ramp_cols=256.0))
    assert step_cost(ramped, shape) == step_cost(dense, shape)


def test_moe_memory_efficiency_slows_only_the_routed_experts_reads():
    # the routed experts' weights stream at moe_memory_efficiency of the dense rate; a dense model, the KV
    # cache and the dense layers of a MoE model are untouched (physics/step.py, roofline)
    from vazao.physics.step import StepConstants, experts_touched, step_work

    base = make_deployment("qwen3-235b-a22b", "h200-sxm", "fp8", strict=False, engine="vllm", tp=4, count=4)
    moe = replace(base, engine=replace(base.engine, moe_memory_efficiency=1.0))
    slow = replace(base, engine=replace(base.engine, moe_memory_efficiency=0.5))
    shape = BatchShape.decode(16, 2048)
    a, b = step_cost(moe, shape), step_cost(slow, shape)
    c = StepConstants.of(moe)
    w = step_work(c.shard, shape)
    touched = experts_touched(c.shard.num_experts, c.shard.experts_per_token, 16)
    assert w.expert_bytes == touched * c.shard.expert_bytes > 0
    # 1 / 0.5 − 1: each expert byte costs once more its dense time
    assert b.memory_s - a.memory_s == pytest.approx(w.expert_bytes / (c.bandwidth * c.memory_eff), rel=1e-9)
    dense = make_deployment("llama-3.1-8b", "h200-sxm", "fp8", strict=False, engine="vllm")
    dense_slow = replace(dense, engine=replace(dense.engine, moe_memory_efficiency=0.5))
    assert step_cost(dense_slow, shape) == step_cost(dense, shape)
