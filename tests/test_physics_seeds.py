"""The seeds' worked numbers, reproduced by the physics (each test names its seed file).

Seeds live in ../shared/seeds/: 000_9652c48a9e6fbd49.txt (the velocity equation),
003_238014a8b1bd80f0.txt (formats by silicon generation), 004_9706bef9153e5571.txt (inference economics).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from vazao.analytic import crossover_batch, decode_cost, estimate, latency_floor_s
from vazao.catalog.formats import get_format
from vazao.catalog.hardware import get_accelerator
from vazao.catalog.models import get_model
from vazao.physics.deployment import make_deployment
from vazao.physics.memory import fit, weights_bytes
from vazao.units import GB, MB, GiB


@pytest.fixture(scope="module")
def llama70():
    return get_model("llama-3.1-70b")


def test_kv_bytes_per_token_and_full_context_seed004(llama70):
    # seed 004: 2 × 80 × 8 × 128 × 2 bytes = 327,680 bytes/token; 128,000 tokens ≈ 43 GB ≈ 40 GiB.
    assert llama70.kv_bytes_per_token(2) == 327_680
    full = llama70.kv_bytes_per_sequence(128_000, 2)
    assert round(full / GB, 1) == 41.9 or round(full / GB) == 42  # 41.94 GB: the seed says "cerca de 43"
    assert round(full / GiB) == 39 or round(full / GiB) == 40
    assert full == pytest.approx(42.9 * GB, rel=0.03)


def test_without_gqa_seed004(llama70):
    # seed 004: with one KV pair per query head (64) ≈ 2.6 MB per token and ≈ 340 GB at 128k.
    from dataclasses import replace

    mha = replace(llama70, num_kv_heads=64)
    assert mha.kv_bytes_per_token(2) == pytest.approx(2.6 * MB, rel=0.01)
    assert mha.kv_bytes_per_sequence(128_000, 2) == pytest.approx(340 * GB, rel=0.02)


def test_h100_70b_roofline_seed004(llama70):
    # seed 004: H100 SXM 3.35 TB/s, 989 dense BF16 TFLOP/s; 70B at 16 bits:
    # ≈ 24 steps/s bandwidth-bound, ≈ 7,000 tokens/s compute ceiling, crossover ≈ 300 (295).
    # "Imagine por um instante que uma única GPU guardasse o modelo inteiro": an H100 with room for it.
    roomy = replace(get_accelerator("h100-sxm"), memory_bytes=400 * GB)
    dep = make_deployment(llama70, roomy, "bf16", ideal=True)
    one = decode_cost(dep, 1, 0)
    assert 1 / one.time_s == pytest.approx(24, rel=0.03)
    assert one.bound == "memory"
    big = decode_cost(dep, 100_000, 0)
    assert 100_000 / big.compute_s == pytest.approx(7_000, rel=0.03)
    assert crossover_batch(dep, 0) == pytest.approx(295, abs=3)


def test_eight_gpu_latency_floor_seed004(llama70):
    # seed 004: 8 GPUs with 17.5 GB of weights each ≈ 5 ms per step; 500 tokens ≥ 2.5 s.
    dep = make_deployment(llama70, "h100-sxm", "bf16", count=8, ideal=True)
    f = fit(dep, 8192)
    assert f.weights_bytes_per_gpu == pytest.approx(17.5 * GB, rel=0.02)
    floor = latency_floor_s(dep)
    assert floor == pytest.approx(5e-3, rel=0.06)
    assert 500 * floor >= 2.5


def test_kv_capacity_on_eight_80gb_seed004(llama70):
    # seed 004: "oito GPUs de 80 GB", 140 GB of weights, "uns 500 GB para caches": ≈ 185 conversations of
    # 8,000 tokens, ≈ 11 of 128,000. The seed's illustrative node counts 80e9 bytes a GPU.
    decimal = replace(get_accelerator("h100-sxm"), memory_bytes=80 * GB)
    dep = make_deployment(llama70, decimal, "bf16", count=8, ideal=True)
    assert fit(dep, 8192).max_concurrent_sequences == pytest.approx(185, abs=2)
    assert fit(dep, 128_000).max_concurrent_sequences == 11
    assert fit(dep, 8192).free_bytes_for_kv == pytest.approx(500 * GB, rel=0.01)


def test_kv_capacity_on_eight_real_h100s(llama70):
    # A real H100's 80 is GiB (nvidia-smi 81559 MiB, NVIDIA/nccl issue #1264): 8 × 85.9 GB − 141.1 GB of
    # weights leaves 546 GB: 203 conversations of 8,192 tokens at 2.68 GB each, 13 of 128,000 at 41.9 GB.
    dep = make_deployment(llama70, "h100-sxm", "bf16", count=8, ideal=True)
    f = fit(dep, 8192)
    assert f.free_bytes_for_kv == pytest.approx(8 * 80 * GiB - weights_bytes(llama70, get_format("bf16")))
    assert f.free_bytes_for_kv == pytest.approx(546 * GB, rel=0.002)
    assert f.max_concurrent_sequences == 203
    assert fit(dep, 128_000).max_concurrent_sequences == 13


def test_7b_fp16_on_a100_seed000():
    # seed 000: 7B in FP16 = 14 GB; A100 at 2 TB/s → ≈ 7 ms per token, ≈ 140 tokens/s.
    m = get_model("mistral-7b")
    dep = make_deployment(m, "a100-sxm-80gb", "fp16", ideal=True)
    assert round(weights_bytes(m, get_format("fp16")) / GB) == 14
    step = decode_cost(dep, 1, 0)
    assert step.time_s == pytest.approx(7e-3, rel=0.05)
    assert 1 / step.time_s == pytest.approx(140, rel=0.05)


def test_70b_fp16_does_not_fit_one_a100_but_int4_does_seed000(llama70):
    # seed 000 claims one 80 GB A100 holds 70B in FP16 "com folga"; 141 GB of weights cannot, not even in
    # its 80 GiB = 85.9 GB (nvidia-smi 81920 MiB: modal-labs/modal-client PR #2797): 55 GB spill.
    fp16 = fit(make_deployment(llama70, "a100-sxm-80gb", "fp16", ideal=True), 4096)
    assert not fp16.weights_fit and not fp16.fits
    assert fp16.offload_bytes_per_gpu == pytest.approx(141.1 * GB - 80 * GiB, rel=0.01)
    int4 = fit(make_deployment(llama70, "a100-sxm-80gb", "int4-awq"), 4096)
    assert int4.fits and int4.max_concurrent_sequences >= 1
    forty = fit(make_deployment(llama70, "a100-sxm-40gb", "fp16", ideal=True), 4096)
    assert not forty.fits


def test_offload_costs_an_order_of_magnitude_seed000():
    # seed 000: when weights spill to host memory each token crosses PCIe: 5–10× slower or worse.
    m = get_model("llama-3.1-8b")
    fits = make_deployment(m, "rtx-4090", "bf16")
    spills = make_deployment(m, "rtx-3060", "bf16", strict=False)
    assert fit(spills, 2048).offload_bytes_per_gpu > 0
    ratio = decode_cost(spills, 1, 1024).time_s / decode_cost(fits, 1, 1024).time_s
    assert ratio > 5


def test_four_bit_gives_two_to_four_times_seed000():
    # seed 000: "4-bit pode dar 2-4x mais tokens por segundo do que 16-bit" on a memory-bound GPU.
    m = get_model("llama-3.1-8b")
    t16 = decode_cost(make_deployment(m, "rtx-4090", "fp16"), 1, 512).time_s
    t4 = decode_cost(make_deployment(m, "rtx-4090", "int4-awq"), 1, 512).time_s
    assert 2.0 <= t16 / t4 <= 4.0


@pytest.mark.parametrize("small,big", [("llama-2-7b", "llama-2-13b"), ("qwen2.5-7b", "qwen2.5-14b"),
                                       ("qwen2.5-14b", "qwen2.5-32b")])
def test_doubling_parameters_more_than_1_5x_latency_seed000(small, big):
    # seed 000: doubling parameters multiplies latency by more than 1.5× within a family.
    ts = decode_cost(make_deployment(get_model(small), "a100-sxm-80gb", "bf16"), 1, 512).time_s
    tb = decode_cost(make_deployment(get_model(big), "a100-sxm-80gb", "bf16"), 1, 512).time_s
    assert tb / ts > 1.5


def test_estimate_rows_and_bounds():
    m = get_model("llama-3.1-8b")
    est = estimate(make_deployment(m, "rtx-3060", "int4-awq"), [1, 8, 32], 1024, 256)
    assert [r.batch for r in est.rows] == [1, 8, 32]
    assert est.rows[0].bound == "memory"
    assert est.rows[0].prefill_bound == "compute"
    tps = [r.tokens_per_s_total for r in est.rows]
    assert tps == sorted(tps)
    per_req = [r.tokens_per_s_per_request for r in est.rows]
    assert per_req == sorted(per_req, reverse=True)
    assert est.latency_floor_s < est.rows[0].decode_step_s
