"""Catalog additions: GPT-J 6B, Falcon-180B, Llama 4 names, the NVIDIA GB10 (DGX Spark), NVFP4 below Blackwell."""

from __future__ import annotations

import pytest

from vazao.catalog.formats import get_format, support
from vazao.catalog.hardware import get_accelerator
from vazao.catalog.models import get_model
from vazao.units import GB, TFLOPS, GiB


@pytest.mark.parametrize("name, published, rel", [
    # EleutherAI/gpt-j-6b model card: "n_parameters 6,053,381,344"; the 0.6M MLP/lm_head biases are not counted
    ("EleutherAI/gpt-j-6b", 6_053_381_344, 0.002),
    # tiiuae/falcon-180B model card: "Falcon-180B is a 180B parameters causal decoder-only model"
    ("tiiuae/falcon-180B", 180e9, 0.01),
])
def test_dense_totals_match_the_model_cards(name, published, rel):
    m = get_model(name)
    assert not m.is_moe and not m.gated_mlp  # GELU MLP of 4 × hidden: up and down projections only
    assert m.total_params == pytest.approx(published, rel=rel)


def test_gpt_j_shape_from_config():
    # config.json: n_embd 4096, n_layer 28, n_head 16 (head 256), n_inner null = 4 × 4096, untied lm_head
    m = get_model("gpt-j-6B")
    assert (m.num_layers, m.hidden_size, m.num_heads, m.head_dim, m.intermediate_size) == (28, 4096, 16, 256, 16384)
    assert m.attention_kind == "MHA" and not m.tie_word_embeddings
    assert m.kv_bytes_per_token(2) == 2 * 28 * 16 * 256 * 2  # 458,752 B at 16 bits
    assert m.active_params == m.total_params - m.embedding_params  # the row gather is no matmul


def test_falcon_180b_grouped_kv_from_config():
    # config.json: hidden 14848, 232 heads, num_kv_heads 8, 80 layers; head_dim 14848 / 232 = 64
    m = get_model("falcon-180b")
    assert m.head_dim * m.num_heads == m.hidden_size and m.num_kv_heads == 8
    assert m.attention_kind == "GQA"
    assert m.kv_bytes_per_token(2) == 2 * 80 * 8 * 64 * 2  # 163,840 B at 16 bits
    assert m.tie_word_embeddings and m.max_context == 2048


@pytest.mark.parametrize("label, name", [
    ("Llama-4-Scout-17B-16E", "llama-4-scout-17b-16e"),
    ("meta-llama/Llama-4-Scout-17B-16E", "llama-4-scout-17b-16e"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout-17b-16e"),
    ("Llama-4-Maverick-17B-128E", "llama-4-maverick-17b-128e"),
    ("meta-llama/Llama-4-Maverick-17B-128E", "llama-4-maverick-17b-128e"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "llama-4-maverick-17b-128e"),
])
def test_llama4_names_resolve(label, name):
    assert get_model(label).name == name


def test_maverick_interleaves_dense_and_moe_layers():
    # interleave_moe_layer_step 2: 24 MoE layers (128 experts of 8192, top-1 + one shared) and 24 dense
    # layers of intermediate_size_mlp 16384. One routed + one shared expert equals one dense layer's MLP,
    # so every layer reads the same MLP width per token, and active stays near Scout's (~17B).
    mav, scout = get_model("llama-4-maverick-17b-128e"), get_model("llama-4-scout-17b-16e")
    assert mav.moe_layers == mav.dense_mlp_layers == 24
    assert (1 + mav.num_shared_experts) * mav.moe_intermediate_size == mav.intermediate_size
    assert mav.active_params == pytest.approx(scout.active_params, rel=0.01)
    assert mav.total_params / 1e9 == pytest.approx(400, rel=0.03)  # model card: ~400B total


def test_gb10_unified_memory_and_bandwidth():
    # NVIDIA DGX Spark page: 128 GB LPDDR5x unified, 273 GB/s; compute capability 12.1 (sm_121). The 128 is GiB:
    # a Spark's /proc/meminfo shows MemTotal 127600748 kB (XuehaiPan/nvitop PR #208), above 128e9 bytes.
    for label in ("GB10", "DGX-Spark", "NVIDIA GB10"):
        assert get_accelerator(label).id == "gb10"
    g = get_accelerator("gb10")
    assert g.memory_bytes == 128 * GiB and g.memory_bandwidth_bytes_per_s == 273 * GB
    assert g.host_link_bytes_per_s == g.memory_bandwidth_bytes_per_s  # the CPU shares that memory
    assert g.generation == "blackwell" and g.compute_capability == "12.1"
    assert g.usd_per_hour is None and g.price_source  # bought, not rented: the null says why


def test_gb10_dense_peaks_halve_the_sparse_petaflop():
    # "1 PFLOP: theoretical FP4 TOPS using the sparsity feature" -> 500 dense; FP8 and BF16 one and two halvings below
    g = get_accelerator("gb10")
    assert g.peak("fp4") == 500 * TFLOPS
    assert g.peak("fp4") == 2 * g.peak("fp8") == 4 * g.peak("bf16")
    assert support(get_format("nvfp4"), g, "vllm").status == "native"


def status(fmt: str, gpu: str, engine: str | None = None) -> str:
    return support(get_format(fmt), get_accelerator(gpu), engine).status


def test_nvfp4_weight_only_on_hopper_and_ampere_under_vllm_and_sglang():
    for gpu in ("h100-sxm", "a100-sxm-80gb"):
        for engine in ("vllm", "sglang"):
            s = support(get_format("nvfp4"), get_accelerator(gpu), engine)
            assert s.status == "emulated", (gpu, engine)
            assert "Marlin" in s.reason and s.compute_dtype == "bf16"  # weights unpacked, BF16 GEMM


def test_nvfp4_floor_is_the_marlin_kernels_compute_capability():
    # vLLM is_fp4_marlin_supported: has_device_capability(75); Volta (7.0) and Pascal stay out
    assert status("nvfp4", "t4", "vllm") == "emulated"  # 7.5, computes in FP16 (no BF16 on Turing)
    assert support(get_format("nvfp4"), get_accelerator("t4"), "vllm").compute_dtype == "fp16"
    for gpu in ("v100", "p40"):
        s = support(get_format("nvfp4"), get_accelerator(gpu), "vllm")
        assert s.status == "unsupported" and "7.5" in s.reason, gpu


def test_nvfp4_native_on_blackwell_and_refused_where_no_engine_unpacks_it():
    assert status("nvfp4", "b200") == status("nvfp4", "b200", "vllm") == "native"
    assert status("nvfp4", "h100-sxm") == "unsupported"  # no engine named: the silicon has no FP4
    assert status("nvfp4", "h100-sxm", "trtllm") == "unsupported"
    assert "Blackwell" in support(get_format("nvfp4"), get_accelerator("h100-sxm"), "trtllm").reason
    assert status("nvfp4", "h100-sxm", "llama.cpp") == "unsupported"
    assert status("mxfp4", "h100-sxm", "trtllm") == "emulated"  # gpt-oss's MXFP4 does run on Hopper
