"""Kimi K2, GLM-4.5 (and Air) and Qwen3-Coder-480B: the MoE models 2025-26 serving benchmarks run that the shared
files do not hold. Expected totals and active counts are the model cards' (cited per case); shapes their
config.json files' (models.yaml `source`)."""

from __future__ import annotations

import pytest

from vazao.catalog.models import get_model


@pytest.mark.parametrize("name, total, active, rel", [
    # moonshotai/Kimi-K2-Instruct model card: "1 trillion total parameters", "32 billion activated parameters"
    ("moonshotai/Kimi-K2-Instruct", 1.0e12, 32e9, 0.03),
    # zai-org/GLM-4.5 model card: "355 billion total parameters and 32 billion active parameters" (the MTP layer
    # the checkpoint ships is not counted here: 1.6% of it)
    ("zai-org/GLM-4.5", 355e9, 32e9, 0.03),
    # zai-org/GLM-4.5-Air model card: "106 billion total parameters and 12 billion active parameters"
    ("zai-org/GLM-4.5-Air", 106e9, 12e9, 0.07),
    # Qwen/Qwen3-Coder-480B-A35B-Instruct model card: "480B total parameters and 35B activated"
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 480e9, 35e9, 0.02),
])
def test_totals_and_active_match_the_model_cards(name, total, active, rel):
    m = get_model(name)
    assert m.is_moe
    assert m.total_params == pytest.approx(total, rel=rel)
    assert m.active_params == pytest.approx(active, rel=max(rel, 0.05))


def test_kimi_k2_is_deepseek_v3s_latent_cache():
    """MLA caches the 512-wide latent and the 64-wide rope key per layer: the KV per token does not depend on the
    head count, so Kimi K2 (64 heads) and DeepSeek-V3 (128) cache the same 61 x 576 values."""
    k2, v3 = get_model("kimi-k2"), get_model("deepseek-v3")
    assert k2.attention_kind == v3.attention_kind == "MLA"
    assert k2.kv_bytes_per_token(2) == v3.kv_bytes_per_token(2) == 61 * (512 + 64) * 2
    assert k2.num_experts == 384 and v3.num_experts == 256


def test_glm_45_grouped_kv():
    # config.json: 92 layers, 8 KV heads of 128: 2 x 92 x 8 x 128 values per token
    assert get_model("glm-4.5").kv_bytes_per_token(2) == 2 * 92 * 8 * 128 * 2
    assert get_model("glm-4.6").name == "glm-4.5"  # the same shapes
