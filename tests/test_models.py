"""The model catalog, tolerant look-up, and Hugging Face config.json parsing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from vazao.catalog.arch import ModelArch
from vazao.catalog.models import (
    LoadedModel,
    from_hf_config,
    get_model,
    load_model,
    models,
    read_hf_config,
)
from vazao.errors import NotFoundError, VazaoError

SEED_004 = "/work/shared/seeds/004_9706bef9153e5571.txt"

# ---- real config.json files, as published on Hugging Face (the keys that matter kept verbatim) ----
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}

MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.02,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.36.0.dev0",
    "use_cache": True,
    "vocab_size": 32000,
}

DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "auto_map": {
        "AutoConfig": "configuration_deepseek.DeepseekV3Config",
        "AutoModel": "modeling_deepseek.DeepseekV3Model",
        "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM",
    },
    "aux_loss_alpha": 0.001,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "ep_size": 1,
    "first_k_dense_replace": 3,
    "hidden_act": "silu",
    "hidden_size": 7168,
    "initializer_range": 0.02,
    "intermediate_size": 18432,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "model_type": "deepseek_v3",
    "moe_intermediate_size": 2048,
    "moe_layer_freq": 1,
    "n_group": 8,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1,
    "pretraining_tp": 1,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    },
    "rms_norm_eps": 1e-06,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "rope_theta": 10000,
    "routed_scaling_factor": 2.5,
    "scoring_func": "sigmoid",
    "tie_word_embeddings": False,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16",
    "transformers_version": "4.33.1",
    "use_cache": True,
    "v_head_dim": 128,
    "vocab_size": 129280,
}

_SIGLIP = {
    "hidden_size": 1152,
    "image_size": 896,
    "intermediate_size": 4304,
    "model_type": "siglip_vision_model",
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "patch_size": 14,
    "vision_use_head": False,
}

# Gemma 3 4B lists only what differs from Gemma3TextConfig's defaults in its text_config.
GEMMA3_4B_IT = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "boi_token_index": 255999,
    "eoi_token_index": 256000,
    "eos_token_id": [1, 106],
    "image_token_index": 262144,
    "initializer_range": 0.02,
    "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "model_type": "gemma3_text",
        "num_hidden_layers": 34,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "torch_dtype": "bfloat16",
    "transformers_version": "4.50.0.dev0",
    "vision_config": _SIGLIP,
}

GEMMA3_27B_IT = {
    **GEMMA3_4B_IT,
    "text_config": {
        "head_dim": 128,
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "model_type": "gemma3_text",
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "query_pre_attn_scalar": 168,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
}

GPT_OSS_20B = {
    "architectures": ["GptOssForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "eos_token_id": 200002,
    "experts_per_token": 4,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 2880,
    "initial_context_length": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 2880,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072,
    "model_type": "gpt_oss",
    "num_attention_heads": 64,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "output_router_logits": False,
    "pad_token_id": 199999,
    "quantization_config": {
        "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head",
        ],
        "quant_method": "mxfp4",
    },
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "rope_type": "yarn",
        "truncate": False,
    },
    "rope_theta": 150000,
    "router_aux_loss_coef": 0.9,
    "sliding_window": 128,
    "swiglu_limit": 7.0,
    "tie_word_embeddings": False,
    "transformers_version": "4.55.0.dev0",
    "use_cache": True,
    "vocab_size": 201088,
}

QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1",
    "use_cache": True,
    "use_mrope": False,
    "use_sliding_window": False,
    "vocab_size": 152064,
}

GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"],
    "attention_bias": False,
    "attn_logit_softcapping": 50.0,
    "cache_implementation": "hybrid",
    "final_logit_softcapping": 30.0,
    "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "gemma2",
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "sliding_window_size": 4096,
    "vocab_size": 256000,
}

# The fields that decide memory and FLOPs (name, source and family are labels).
LABELS = ("name", "source", "as_of", "aliases", "declared_params", "family")
SHAPE = tuple(f.name for f in dataclasses.fields(ModelArch) if f.name not in LABELS)


def shape(arch) -> dict:
    return {k: getattr(arch, k) for k in SHAPE}


def write_config(tmp_path: Path, config: dict, folder: str = "model") -> Path:
    d = tmp_path / folder
    d.mkdir(parents=True, exist_ok=True)
    p = d / "config.json"
    p.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return p


# ---- catalog ---------------------------------------------------------------------------------
def test_catalog_has_the_required_models():
    required = {
        "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b",
        "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "mistral-7b", "mistral-7b-v0.3",
        "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-0.5b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b",
        "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3",
        "gpt-oss-20b", "gpt-oss-120b", "gemma-2-9b", "gemma-2-27b", "gemma-3-4b", "gemma-3-12b",
        "gemma-3-27b", "gemma-3-270m", "phi-3-mini", "phi-4",
    }
    assert required <= set(models())
    assert len(models()) >= 24


@pytest.mark.parametrize("name", sorted(models()))
def test_total_params_within_3_percent_of_declared(name):
    arch = models()[name]
    assert arch.declared_params, f"{name} has no declared_params"
    assert arch.source and arch.as_of
    assert arch.total_params == pytest.approx(arch.declared_params, rel=0.03)


def test_llama_31_70b_kv_bytes_per_token_matches_seed_004():
    # seed 004: 2 × 80 × 8 × 128 × 2 bytes = 327,680 bytes per token at 16 bits
    assert Path(SEED_004).name == "004_9706bef9153e5571.txt"
    arch = get_model("llama-3.1-70b")
    assert (arch.num_layers, arch.num_kv_heads, arch.head_dim, arch.max_context) == (80, 8, 128, 131072)
    assert arch.kv_bytes_per_token(2) == 327_680
    # "a janela de 128.000 tokens ... cerca de 43 gigabytes, aproximadamente 40 GiB"
    full = arch.kv_bytes_per_sequence(arch.max_context)
    assert full == pytest.approx(43e9, rel=0.01)
    assert full / 2**30 == pytest.approx(40, rel=0.01)


def test_llama_31_70b_mha_variant_matches_seed_004():
    # seed 004: one K/V pair per query head would cost ~2.6 MB per token, ~340 GB for a full window
    mha = dataclasses.replace(get_model("llama-3.1-70b"), num_kv_heads=64)
    assert mha.attention_kind == "MHA"
    assert mha.kv_bytes_per_token(2) == pytest.approx(2.6e6, rel=0.01)
    assert mha.kv_bytes_per_sequence(mha.max_context) == pytest.approx(340e9, rel=0.02)


def test_catalog_structure_of_special_models():
    ds = get_model("deepseek-v3")
    assert ds.attention_kind == "MLA" and ds.kv_elements_per_token_per_layer == 576
    assert (ds.num_experts, ds.experts_per_token) == (256, 8)
    assert (ds.num_shared_experts, ds.first_dense_layers) == (1, 3)
    oss = get_model("gpt-oss-120b")
    assert (oss.sliding_window, oss.sliding_window_layers, oss.head_dim) == (128, 18, 64)
    for name in ("gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "gemma-3-270m"):
        g = get_model(name)
        assert g.sliding_window_layers == g.num_layers - g.num_layers // 6
        assert g.sliding_window == (512 if name == "gemma-3-270m" else 1024)
    assert get_model("gemma-2-27b").sliding_window_layers == 23
    assert all(get_model(n).qkv_bias for n in models() if n.startswith("qwen2.5"))


# ---- look-up -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("llama-3.1-70b", "llama-3.1-70b"),
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("Meta-Llama-3.1-8B", "llama-3.1-8b"),
        ("Llama-3.1-8B", "llama-3.1-8b"),
        ("llama3.1-8b", "llama-3.1-8b"),
        ("LLAMA-3.1-8B-INSTRUCT", "llama-3.1-8b"),
        ("  llama_3.1_8b ", "llama-3.1-8b"),
        ("Meta-Llama-3-8B-Instruct", "llama-3-8b"),
        ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
        ("Llama-2-70b-hf", "llama-2-70b"),
        ("mistralai/Mistral-7B-v0.1", "mistral-7b"),
        ("mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"),
        ("Qwen3-235B-A22B", "qwen3-235b-a22b"),
        ("deepseek-ai/DeepSeek-V3-Base", "deepseek-v3"),
        ("openai/gpt-oss-20b", "gpt-oss-20b"),
        ("google/gemma-3-27b-it", "gemma-3-27b"),
        ("gemma-3-270m-it", "gemma-3-270m"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
        ("microsoft/Phi-3-mini-4k-instruct", "phi-3-mini"),
        ("microsoft/phi-4", "phi-4"),
    ],
)
def test_tolerant_lookup(query, expected):
    assert get_model(query).name == expected


def test_exact_entry_wins_over_suffix_stripping():
    # "-v0.1" is stripped only when nothing matches as given; v0.3 stays v0.3
    assert get_model("mistral-7b-v0.3").vocab_size == 32768
    assert get_model("mistral-7b-v0.1").vocab_size == 32000


def test_unknown_model_raises_not_found_with_suggestions():
    with pytest.raises(NotFoundError) as info:
        get_model("llama-3.1-7b")
    err = info.value
    assert isinstance(err, VazaoError)
    assert err.kind == "model" and err.name == "llama-3.1-7b"
    assert err.suggestions and all(s in models() for s in err.suggestions)
    assert any(s.startswith("llama-3.1") for s in err.suggestions)
    assert "unknown model 'llama-3.1-7b'" in str(err)


# ---- config.json -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "catalog"),
    [
        (LLAMA_31_8B, "llama-3.1-8b"),
        (MIXTRAL_8X7B, "mixtral-8x7b"),
        (DEEPSEEK_V3, "deepseek-v3"),
        (GEMMA3_4B_IT, "gemma-3-4b"),
        (GEMMA3_27B_IT, "gemma-3-27b"),
        (GPT_OSS_20B, "gpt-oss-20b"),
        (QWEN25_7B, "qwen2.5-7b"),
        (GEMMA2_9B, "gemma-2-9b"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_real_config_json_parses_to_catalog_numbers(tmp_path, config, catalog):
    p = write_config(tmp_path, config, folder=catalog)
    arch = read_hf_config(p)
    expected = get_model(catalog)
    assert shape(arch) == shape(expected)
    assert arch.total_params == expected.total_params
    assert arch.kv_bytes_per_token(2) == expected.kv_bytes_per_token(2)
    assert arch.name == catalog  # the folder names it when the config has no _name_or_path


def test_name_comes_from_name_or_path(tmp_path):
    p = write_config(tmp_path, {**LLAMA_31_8B, "_name_or_path": "meta-llama/Llama-3.1-8B"}, folder="x")
    assert read_hf_config(p).name == "Llama-3.1-8B"
    assert read_hf_config(p.parent).name == "Llama-3.1-8B"  # a folder holding config.json


def test_name_from_hugging_face_cache_snapshot(tmp_path):
    folder = "models--meta-llama--Llama-3.1-8B/snapshots/" + "0123456789abcdef" * 2 + "01234567"
    p = write_config(tmp_path, LLAMA_31_8B, folder=folder)
    assert read_hf_config(p).name == "Llama-3.1-8B"


def test_defaults_when_keys_are_absent():
    minimal = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
               "intermediate_size": 5632, "vocab_size": 32000, "max_position_embeddings": 2048}
    arch = from_hf_config(minimal, name="tiny")
    assert arch.num_kv_heads == 16 and arch.attention_kind == "MHA"  # no num_key_value_heads: MHA
    assert arch.head_dim == 128  # hidden_size // num_attention_heads
    assert arch.tie_word_embeddings is False  # LlamaConfig's default
    assert arch.sliding_window == 0 and not arch.is_moe
    gemma = from_hf_config({**minimal, "model_type": "gemma"})
    assert gemma.tie_word_embeddings is True  # GemmaConfig's default
    qwen = from_hf_config({**minimal, "model_type": "qwen2"})
    assert qwen.qkv_bias is True
    assert from_hf_config({**minimal, "tie_word_embeddings": True}).tie_word_embeddings is True


def test_sliding_window_variants():
    base = {**LLAMA_31_8B, "model_type": "mistral", "max_position_embeddings": 32768, "vocab_size": 32000}
    all_layers = from_hf_config({**base, "sliding_window": 4096})  # Mistral 7B v0.1
    assert (all_layers.sliding_window, all_layers.sliding_window_layers) == (4096, 32)
    typed = from_hf_config({**base, "sliding_window": 512,
                            "layer_types": ["sliding_attention"] * 24 + ["full_attention"] * 8})
    assert typed.sliding_window_layers == 24
    pattern = from_hf_config({**base, "sliding_window": 512, "sliding_window_pattern": 4})
    assert pattern.sliding_window_layers == 24
    too_wide = from_hf_config({**base, "sliding_window": 262144})  # Phi-3 128k: no effect
    assert too_wide.sliding_window == 0 and too_wide.sliding_window_layers == 0


def test_qwen3_moe_config():
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
           "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
           "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_attention_heads": 32,
           "num_key_value_heads": 4, "vocab_size": 151936, "max_position_embeddings": 40960,
           "tie_word_embeddings": False, "sliding_window": None, "use_sliding_window": False,
           "decoder_sparse_step": 1, "mlp_only_layers": []}
    assert shape(from_hf_config(cfg)) == shape(get_model("qwen3-30b-a3b"))


def test_missing_field_is_named():
    cfg = {k: v for k, v in LLAMA_31_8B.items() if k != "num_hidden_layers"}
    with pytest.raises(VazaoError, match="config.json: missing field 'num_hidden_layers'"):
        from_hf_config(cfg)
    cfg = {k: v for k, v in cfg.items() if k != "hidden_size"}
    with pytest.raises(VazaoError, match="missing fields 'hidden_size', 'num_hidden_layers'"):
        from_hf_config(cfg)
    nested = {**GEMMA3_4B_IT, "text_config": {"model_type": "llama", "hidden_size": 2560}}
    with pytest.raises(VazaoError, match="text_config: missing field.*num_hidden_layers"):
        from_hf_config(nested)


def test_bad_values_and_bad_files(tmp_path):
    with pytest.raises(VazaoError, match="hidden_size"):
        from_hf_config({**LLAMA_31_8B, "hidden_size": "wide"})
    with pytest.raises(VazaoError, match="num_attention_heads"):
        from_hf_config({**LLAMA_31_8B, "num_attention_heads": 0})
    with pytest.raises(VazaoError, match="JSON object"):
        from_hf_config([1, 2, 3])  # type: ignore[arg-type]
    bad = tmp_path / "config.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(VazaoError, match="not valid JSON"):
        read_hf_config(bad)
    listed = tmp_path / "list" / "config.json"
    listed.parent.mkdir()
    listed.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(VazaoError, match="JSON object"):
        read_hf_config(listed)
    with pytest.raises(VazaoError, match="does not exist"):
        read_hf_config(tmp_path / "absent" / "config.json")


# ---- load_model ----------------------------------------------------------------------------------
def test_load_model_from_catalog():
    loaded = load_model("meta-llama/Llama-3.1-70B-Instruct")
    assert isinstance(loaded, LoadedModel)
    assert loaded.arch.name == "llama-3.1-70b"
    assert (loaded.weight_format, loaded.weights_bytes, loaded.origin) == (None, None, "catalog")
    with pytest.raises(NotFoundError):
        load_model("no-such-model-9b")


def test_load_model_from_config_folder_and_quantization(tmp_path):
    p = write_config(tmp_path, GPT_OSS_20B, folder="gpt-oss-20b")
    index = {"metadata": {"total_size": 13_761_264_768}, "weight_map": {}}
    (p.parent / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    for spec in (str(p), str(p.parent)):
        loaded = load_model(spec)
        assert loaded.arch.name == "gpt-oss-20b"
        assert loaded.weight_format == "mxfp4"
        assert loaded.weights_bytes == 13_761_264_768
        assert "config.json" in loaded.origin
    ds = load_model(str(write_config(tmp_path, DEEPSEEK_V3, folder="ds")))
    assert ds.weight_format == "fp8" and ds.weights_bytes is None
    plain = load_model(str(write_config(tmp_path, LLAMA_31_8B, folder="plain")))
    assert plain.weight_format is None


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4-gptq"),
        ({"quant_method": "awq", "bits": 4, "version": "gemm"}, "int4-awq"),
        ({"quant_method": "gptq", "bits": 8}, None),
        ({"quant_method": "fp8"}, "fp8"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, None),
    ],
)
def test_quantization_config_maps_to_format(tmp_path, quant, expected):
    p = write_config(tmp_path, {**LLAMA_31_8B, "quantization_config": quant})
    assert load_model(str(p)).weight_format == expected


def test_load_model_missing_json_path(tmp_path):
    with pytest.raises(VazaoError, match="does not exist"):
        load_model(str(tmp_path / "nope.json"))
