"""Pipelined micro-batches go at the pace of the slowest stage. With pp stages each on its own micro-batch
(TensorRT-LLM, vLLM), a micro-batch's token period is pp times the longest stage, and the last stage holds the
lm_head besides its share of the layers: the period costs the layers once and the lm_head pp times. llama.cpp's
layer split runs one micro-batch through the stages in turn, so it costs each once."""

from __future__ import annotations

import pytest

from vazao.physics.deployment import make_deployment


def _shard(pp: int, engine: str = "trtllm", fmt: str = "nvfp4"):
    dep = make_deployment("llama-3.3-70b", "rtx-pro-6000-blackwell-server", fmt, count=pp, tp=1, pp=pp,
                          engine=engine)
    return dep, dep.consts.shard


def test_the_lm_head_counts_once_per_stage_of_a_pipelined_period():
    dep1, one = _shard(1)
    dep8, eight = _shard(8)
    m = dep1.model
    # Llama-3.3-70B: vocab 128,256 × hidden 8,192 (config.json), the lm_head kept at 16 bits in NVFP4 checkpoints
    head_bytes = m.lm_head_params * dep1.weight_format.embed_bits / 8
    assert m.lm_head_params == 128256 * 8192
    assert eight.dense_weight_bytes - one.dense_weight_bytes == pytest.approx(7 * head_bytes)
    assert eight.lm_head_flops_per_logit == pytest.approx(8 * one.lm_head_flops_per_logit)


def test_a_layer_split_that_does_not_pipeline_counts_the_lm_head_once():
    _, one = _shard(1, "llama.cpp", "q4_k_m")
    _, four = _shard(4, "llama.cpp", "q4_k_m")
    assert four.dense_weight_bytes == pytest.approx(one.dense_weight_bytes)
    assert four.lm_head_flops_per_logit == pytest.approx(one.lm_head_flops_per_logit)
