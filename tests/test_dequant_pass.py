"""llama.cpp's CUDA backend (the measurement file's May 2024 builds) multiplied a batch of more than 32 tokens
(MMQ_MAX_BATCH_SIZE) by a weight-only GGUF tensor through cuBLAS: one kernel dequantizes the tensor into an
F16 copy (reading the packed bytes, writing 2 bytes a weight), then the F16 GEMM reads the copy
(ggml-cuda.cu, ggml_cuda_op_mul_mat_cublas with to_fp16_cuda). Up to 32 tokens, MMQ/MMVQ multiply the packed
blocks with integer dot products. Metal and the CPU unpack inside their kernels."""

from __future__ import annotations

import dataclasses

import pytest

from vazao.physics.deployment import make_deployment
from vazao.physics.prompt import prompt_prefill
from vazao.physics.step import BatchShape, step_cost


def test_the_pass_reads_the_packed_layers_and_writes_two_bytes_a_weight():
    dep = make_deployment("llama-3-8b", "rtx-4090", "q4_k_m", engine="llama.cpp")
    s, layers = dep.consts.shard, dep.model.shared_layer_params
    assert dep.engine.dequant_pass_tokens == 32  # Ada: one of the CUDA backend's tensor-core generations
    assert make_deployment("llama-3-8b", "apple-m2-ultra", "q4_k_m", engine="llama.cpp").engine.dequant_pass_tokens == 0
    # the pass reads the packed layers (b bytes a weight) and writes an F16 copy (2); the GEMMs then read the
    # copy (2) instead of the packed bytes (b): (b + 2) + (2 - b) = 4 bytes a weight in all
    assert s.dequant_pass_bytes + s.dequant_pass_gemm_extra_bytes == pytest.approx(4 * layers, rel=1e-12)
    packed = (s.dequant_pass_bytes - s.dequant_pass_gemm_extra_bytes) / 2 / layers
    assert 4.5 / 8 < packed < 5.0 / 8  # Q4_K_M's 4.84 bits a weight, scaled to the GGUF file's own bytes


def test_a_step_of_33_tokens_unpacks_and_one_of_32_does_not():
    dep = make_deployment("llama-3-8b", "rtx-4090", "q4_k_m", engine="llama.cpp")
    s, c = dep.consts.shard, dep.consts
    at32, at33 = step_cost(dep, BatchShape.prefill(1, 32)), step_cost(dep, BatchShape.prefill(1, 33))
    pass_s = s.dequant_pass_bytes / (c.bandwidth * c.memory_eff)
    # the pass runs before the GEMMs, overlapped with nothing: at least its own time more than 32 tokens take
    assert at33.time_s - at32.time_s > pass_s
    assert at33.memory_s >= pass_s  # reported as memory time
    assert at33.bytes - at32.bytes >= s.dequant_pass_gemm_extra_bytes  # the GEMMs read the F16 copy


@pytest.mark.parametrize(("gpu", "fmt", "engine"), [
    ("apple-m2-ultra", "q4_k_m", "llama.cpp"),  # Metal's mul_mm unpacks tiles in threadgroup memory
    ("rtx-4090", "f16", "llama.cpp"),  # nothing to unpack
    ("rtx-4090", "int4-awq", "vllm"),  # Marlin unpacks inside the GEMM
])
def test_no_pass_where_the_kernels_unpack_as_they_go(gpu, fmt, engine):
    s = make_deployment("llama-3-8b", gpu, fmt, engine=engine).consts.shard
    assert s.dequant_pass_tokens == 0 and s.dequant_pass_bytes == 0.0


def test_a_build_without_the_pass_is_one_setting():
    """A build that runs MMQ at any batch (llama.cpp since PR #8075, 2024-06) sets dequant_pass_tokens: 0."""
    dep = make_deployment("llama-3-8b", "rtx-4090", "q4_k_m", engine="llama.cpp")
    mmq = make_deployment("llama-3-8b", "rtx-4090", "q4_k_m",
                          engine=dataclasses.replace(dep.engine, dequant_pass_tokens=0))
    assert mmq.consts.shard.dequant_pass_bytes == 0.0
    assert prompt_prefill(mmq, 512).time_s < prompt_prefill(dep, 512).time_s
    assert dep.engine.idealized().dequant_pass_tokens == 0  # --ideal: the fused kernel's limit


def test_the_pass_runs_only_on_the_generations_listed():
    """A profile that names no generation has no pass anywhere (an empty list is not "everywhere")."""
    eng = make_deployment("llama-3-8b", "rtx-4090", "q4_k_m", engine="llama.cpp").engine
    assert "ada" in eng.dequant_pass_generations and "apple-m" not in eng.dequant_pass_generations
    none = dataclasses.replace(eng, dequant_pass_tokens=32, dequant_pass_generations=())
    assert make_deployment("llama-3-8b", "rtx-4090", "q4_k_m", engine=none).consts.shard.dequant_pass_bytes == 0.0


# Llama 3 8B, llama-bench pp512 tok/s on one GPU, (Q4_K_M, F16): XiongjieDai/GPU-Benchmarks-on-LLM-Inference
# (May 2024), rows of shared/data/published-measurements.csv
PP512 = {
    "rtx-4090": (7138.99, 9382.00),  # lcpp-xj-0035, 0039
    "rtx-4080": (5389.74, 7246.97),  # lcpp-xj-0019, 0023
    "a100-pcie-80gb": (5981.04, 7741.34),  # lcpp-xj-0143, 0147
    "h100-pcie": (8125.45, 10815.51),  # lcpp-xj-0167, 0171
    "a40": (3324.98, 4203.75),  # lcpp-xj-0115, 0119
}


@pytest.mark.parametrize("gpu", sorted(PP512))
def test_q4_prefill_costs_what_llama_bench_measured_against_f16(gpu):
    """A Q4_K_M prompt of 512 tokens runs at ~0.75 of F16's speed on CUDA whatever the GPU's FP32 rate: the
    pass costs bandwidth. Charged as unpacking FLOPs at the FP32 rate (before), the RTX 4090 and 4080 came out
    at 0.91 and 0.89."""
    q = make_deployment("llama-3-8b", gpu, "q4_k_m", engine="llama.cpp")
    f = make_deployment("llama-3-8b", gpu, "f16", engine="llama.cpp")
    predicted = prompt_prefill(f, 512).time_s / prompt_prefill(q, 512).time_s
    q4, f16 = PP512[gpu]
    assert predicted == pytest.approx(q4 / f16, abs=0.1)


def test_estimate_names_the_kernel_paths_a_newer_build_may_not_take():
    """The llama.cpp profile describes its calibrated May 2024 builds: `estimate` says which of their kernel
    paths it charged, and the setting that predicts a build without them; an engine with neither says nothing."""
    from vazao.analytic import Estimate, estimate

    est = estimate(make_deployment("llama-3-8b", "rtx-4090", "q4_k_m", engine="llama.cpp"), [1], 512, 64)
    assert len(est.kernel_notes) == 2
    assert "dequant_pass_tokens: 0" in est.kernel_notes[0] and "attention_score_bytes: 0" in est.kernel_notes[1]
    assert Estimate.from_json(est.to_json()) == est  # --json's document reads back whole
    metal = estimate(make_deployment("llama-3-8b", "apple-m2-ultra", "q4_k_m", engine="llama.cpp"), [1], 512, 64)
    assert len(metal.kernel_notes) == 1 and "attention_score_bytes" in metal.kernel_notes[0]  # no pass on Metal
    assert estimate(make_deployment("llama-3-8b", "h100-sxm", engine="vllm"), [1], 512, 64).kernel_notes == ()
