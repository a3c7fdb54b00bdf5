"""Expert parallelism: the routed experts split over ep GPUs as whole experts (TensorRT-LLM moe_ep, vLLM
--enable-expert-parallel), each of the tp / ep GPUs sharing an expert holding a slice of its columns. The
bytes and FLOPs per GPU are the tensor-parallel split's on average; what changes is the width of each expert's
GEMM (the profile's MoE width ramp)."""

from __future__ import annotations

import pytest

from vazao.analytic import decode_cost
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment


def _dep(ep: int, tp: int = 8, model: str = "deepseek-v3"):
    return make_deployment(model, "h200-sxm", "fp8", count=tp, engine="trtllm", expert_parallel=ep)


def test_whole_experts_are_wider_gemms():
    # DeepSeek-V3: 256 routed experts of intermediate 2048 (config.json moe_intermediate_size)
    assert _dep(1).consts.shard.expert_shard_cols == 2048 / 8
    assert _dep(8).consts.shard.expert_shard_cols == 2048
    assert _dep(2).consts.shard.expert_shard_cols == 2048 / 4


def test_bytes_and_flops_per_gpu_are_the_tensor_parallel_split_s():
    # each GPU holds 256 / 8 whole experts or a 1/8 slice of every expert: the same bytes and FLOPs on average
    # (a routing that loads one GPU more than another is not modelled: uniform-routing skew made TensorRT-LLM's
    # DeepSeek and Qwen3-235B TPOT worse, docs/accuracy.md)
    ep, tp = decode_cost(_dep(8), 64, 2048), decode_cost(_dep(1), 64, 2048)
    assert ep.flops == tp.flops and ep.bytes == tp.bytes
    # but the wider expert GEMMs run nearer the peak where the profile has a width ramp
    assert decode_cost(_dep(8), 4096, 2048).compute_s <= decode_cost(_dep(1), 4096, 2048).compute_s


def test_expert_parallelism_needs_experts_and_must_divide_tp():
    with pytest.raises(VazaoError, match="mixture-of-experts"):
        make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=4, expert_parallel=4)
    with pytest.raises(VazaoError, match="divide tp"):
        _dep(3)
    assert "ep8" in _dep(8).label() and _dep(8).to_json()["expert_parallel"] == 8
