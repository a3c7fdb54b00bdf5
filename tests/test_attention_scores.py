"""An unfused attention graph materializes its score matrix: llama.cpp without flash attention builds
attention from three ggml ops (src/llama.cpp, llm_build_kqv): the KQ product writes the scores in F32 (4 bytes
per query-key pair per head), ggml_soft_max_ext reads them and writes them back (4 + 4), the KQV product reads
them (4): 16 bytes per pair per head per layer, charged as attention traffic. Fused kernels (vLLM, SGLang,
TensorRT-LLM) write none."""

from __future__ import annotations

import dataclasses

import pytest

from vazao.physics.deployment import make_deployment
from vazao.physics.prompt import prompt_prefill
from vazao.physics.step import BatchShape, step_cost


def test_llama_cpp_score_bytes_per_pair_from_its_graph():
    dep = make_deployment("llama-3-8b", "l40s", "q4_k_m", engine="llama.cpp")
    m = dep.model
    assert dep.engine.attention_score_bytes == 4 + 4 + 4 + 4
    assert dep.consts.shard.score_bytes_per_pair_full == 16 * m.num_heads * m.num_layers  # 16 × 32 × 32
    assert make_deployment("llama-3-8b", "l40s", engine="vllm").consts.shard.score_bytes_per_pair_full == 0.0


def test_a_prompts_scores_are_memory_traffic():
    """A 512-token ubatch at 3,584 cached tokens: its score bytes are 16 B × heads × layers × pairs."""
    dep = make_deployment("llama-3-8b", "l40s", "q4_k_m", engine="llama.cpp")
    shape = BatchShape.prefill(1, 512, cached=3584)
    s = dep.consts.shard
    scores = s.score_bytes_per_pair_full * shape.attention_pairs  # 512 × (3,584 + 256.5) pairs
    kv = s.kv_bytes_per_token_full * (shape.context_tokens + shape.new_tokens)
    # 512 tokens on Ada: the GEMMs read the weights unpacked to F16 (tests/test_dequant_pass.py)
    weights_and_activations = (s.dense_weight_bytes + s.dequant_pass_gemm_extra_bytes
                               + s.act_bytes_per_token * shape.new_tokens)
    assert step_cost(dep, shape).bytes == weights_and_activations + kv + scores


def test_long_prompts_slow_down_more_where_compute_outruns_bandwidth():
    """XiongjieDai/GPU-Benchmarks-on-LLM-Inference (llama-bench, Llama 3 8B Q4_K_M, May 2024): pp4096 ÷ pp512
    tok/s measured 0.72 on an L40S (rows lcpp-xj-0127/0128 of the shared file) and 0.99 on an M2 Ultra
    (0255/0256). The scores cost bandwidth, which the L40S has least of against its compute: the same order."""
    def ratio(gpu: str) -> float:
        dep = make_deployment("llama-3-8b", gpu, "q4_k_m", engine="llama.cpp")
        return (4096 / prompt_prefill(dep, 4096).time_s) / (512 / prompt_prefill(dep, 512).time_s)
    assert ratio("l40s") < ratio("apple-m2-ultra")


def test_a_model_windowed_in_every_layer_pays_its_windowed_scores():
    """Mistral 7B v0.1 attends through a 4,096-token window in all 32 layers: its scores are the windowed
    layers' (a 512-token ubatch past 8,192 cached tokens scores 512 × 4,096 pairs per head, not 512 × 8,448)."""
    dep = make_deployment("mistral-7b", "l40s", "q4_k_m", engine="llama.cpp")
    s = dep.consts.shard
    assert s.score_bytes_per_pair_full == 0.0 and s.score_bytes_per_pair_window == 16 * 32 * 32
    shape = BatchShape.prefill(1, 512, cached=8192)
    bare = make_deployment("mistral-7b", "l40s", "q4_k_m", engine=dataclasses.replace(dep.engine,
                                                                                       attention_score_bytes=0.0))
    extra = step_cost(dep, shape).bytes - step_cost(bare, shape).bytes
    assert extra == pytest.approx(s.score_bytes_per_pair_window * 512 * 4096, rel=1e-3)


def test_the_physical_limit_materializes_no_scores():
    """--ideal is the fused kernel's limit: no score traffic, whatever the engine's graph."""
    dep = make_deployment("llama-3-8b", "l40s", "q4_k_m", engine="llama.cpp")
    assert dep.engine.idealized().attention_score_bytes == 0.0
