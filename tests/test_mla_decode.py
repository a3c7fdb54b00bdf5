"""MLA decodes in its latent space: a decoding query's attention costs 2·heads·(2·kv_lora_rank + rope) FLOPs per
(query, key) pair per layer, a prompt's 2·heads·(qk_nope + qk_rope + v_head) (DeepSeek-V2 paper, §2.1.2, the
absorbed up-projections; FlashMLA and vLLM's / SGLang's MLA decode backends run the first form, their prefill
paths the second). Expected numbers from deepseek-ai/DeepSeek-V3's config.json: 128 heads, kv_lora_rank 512,
qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128."""

from __future__ import annotations

import pytest

from vazao.catalog.models import get_model
from vazao.physics.deployment import make_deployment
from vazao.physics.step import DECODE_QUERY_TOKENS, BatchShape, StepTimer, step_cost


def test_deepseek_v3_pair_costs_from_its_config():
    m = get_model("deepseek-v3")
    assert m.attention_flops_per_pair == 2 * 128 * (128 + 64 + 128)  # 81,920
    assert m.decode_attention_flops_per_pair == 2 * 128 * (2 * 512 + 64)  # 278,528
    assert m.decode_attention_flops_per_pair / m.attention_flops_per_pair == pytest.approx(3.4, abs=0.01)


def test_attention_without_a_latent_costs_a_decode_as_a_prompt():
    m = get_model("llama-3.1-8b")
    assert m.decode_attention_flops_per_pair == m.attention_flops_per_pair == 4 * 32 * 128
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    assert dep.consts.shard.attn_flops_per_decode_pair_extra == 0.0


def test_which_pairs_decode():
    """A sequence computing up to DECODE_QUERY_TOKENS tokens (a token, a speculative verification) decodes;
    a prompt chunk longer than that attends in the prompt's form."""
    shape = BatchShape.from_sequences([(1, 100), (DECODE_QUERY_TOKENS, 50), (DECODE_QUERY_TOKENS + 1, 0)])
    one = 1 * (100 + 1.0)
    spec = DECODE_QUERY_TOKENS * (50 + (DECODE_QUERY_TOKENS + 1) / 2.0)
    assert shape.decode_pairs == one + spec
    assert shape.attention_pairs > shape.decode_pairs
    assert BatchShape.decode(4, 100).decode_pairs == BatchShape.decode(4, 100).attention_pairs
    assert BatchShape.prefill(1, 512).decode_pairs == 0.0


def test_a_long_context_mla_decode_step_is_charged_the_latent_attention():
    """DeepSeek-V3 FP8 on 8 H200, 256 sequences of 8k context: the decode step's attention FLOPs are those of
    the latent form (3.4× a prompt's), and the step is slower than the same pairs scored in the prompt's form."""
    dep = make_deployment("deepseek-v3", "h200-sxm", "fp8", count=8, engine="trtllm")
    dec = BatchShape.decode(256, 8192)
    as_prompt = BatchShape(dec.num_seqs, dec.new_tokens, dec.context_tokens, dec.attention_pairs, dec.logit_tokens)
    a, b = step_cost(dep, dec), step_cost(dep, as_prompt)
    m = dep.model
    extra = (m.decode_attention_flops_per_pair - m.attention_flops_per_pair) / 8 * m.num_layers
    assert a.flops - b.flops == pytest.approx(extra * dec.attention_pairs)
    assert a.compute_s > b.compute_s
    assert StepTimer(dep.consts).decode_time(256, 256 * 8192) == a.time_s
