"""B300 and GB300 (Blackwell Ultra) and the MI355X (CDNA 4): the accelerators users serve on that the shared
files do not hold. Each expected number is the figure the entry cites (hardware.yaml `source`)."""

from __future__ import annotations

import pytest

from vazao.catalog.engine_support import lifecycle
from vazao.catalog.formats import get_format, support
from vazao.catalog.hardware import get_accelerator
from vazao.catalog.ownership import power_of
from vazao.units import GB, TFLOPS, GiB


@pytest.mark.parametrize("label, acc_id", [
    ("NVIDIA B300 SXM6 AC", "b300"),  # torch.cuda.get_device_name() on an HGX B300
    ("B300", "b300"), ("HGX-B300", "b300"),
    ("GB300", "gb300"), ("NVIDIA GB300", "gb300"), ("GB300-NVL72", "gb300"),
    ("MI355X", "mi355x"), ("AMD Instinct MI355X", "mi355x"),
])
def test_names_people_use_resolve(label, acc_id):
    assert get_accelerator(label).id == acc_id


def test_b300_memory_is_nvidias_decimal_288_gb_and_the_driver_sees_it():
    b300 = get_accelerator("b300")
    assert b300.memory_unit == "GB" and b300.memory_bytes == 288 * GB
    # nvidia-smi on 'NVIDIA B300 SXM6 AC': 275040MiB, within 0.2% of the decimal 288 GB (not 288 GiB)
    driver_bytes = 275040 * 2**20
    assert driver_bytes == pytest.approx(b300.memory_bytes, rel=0.002)
    assert driver_bytes < 0.95 * 288 * GiB


def test_blackwell_ultra_rates():
    b300, gb300, b200 = get_accelerator("b300"), get_accelerator("gb300"), get_accelerator("b200")
    # HGX B300: 108 PF dense FP4 over 8 GPUs; FP8 and 16-bit as B200's (72 and 36 PF sparse over 8)
    assert b300.peak("fp4") == 13500 * TFLOPS and b300.peak("fp8") == b200.peak("fp8")
    assert b300.peak("bf16") == b200.peak("bf16") == 2250 * TFLOPS
    # GB300 NVL72: 1.1 EF dense FP4 and 360 PF FP8 over 72 GPUs; 8 TB/s each (576 TB/s over 72)
    assert gb300.peak("fp4") == 15000 * TFLOPS and gb300.peak("fp8") == 5000 * TFLOPS
    assert gb300.memory_bandwidth_bytes_per_s == b300.memory_bandwidth_bytes_per_s == 8000 * GB
    assert b300.compute_capability == gb300.compute_capability == "10.3"
    assert gb300.gpus_per_node == 72 and b300.gpus_per_node == 8


def test_blackwell_ultra_runs_nvfp4_natively_and_not_int8():
    """HGX B300 cut INT8 to 2 POPS (sparse) for 8 GPUs: W8A8-INT8 has no tensor rate to run at there."""
    b300 = get_accelerator("b300")
    assert support(get_format("nvfp4"), b300).status == "native"
    assert support(get_format("fp8"), b300).status == "native"
    assert b300.peak("int8") == 0
    assert support(get_format("w8a8-int8"), b300).status != "native"
    assert support(get_format("w8a8-int8"), get_accelerator("b200")).status == "native"


def test_mi355x_cdna4():
    mi = get_accelerator("mi355x")
    assert mi.generation == "cdna4" and mi.memory_bytes == 288 * GiB  # ROCm gpu-specs: VRAM 288 GiB
    # 256 CUs x 8,192 FP8 FLOPs per CU per clock x 2.4 GHz (ISSCC 2026; Hot Chips 2025)
    assert mi.peak("fp8") == pytest.approx(256 * 8192 * 2.4e9, rel=1e-4)
    assert mi.peak("bf16") == pytest.approx(mi.peak("fp8") / 2, rel=1e-4)
    assert mi.peak("fp4") == pytest.approx(2 * mi.peak("fp8"), rel=1e-4)
    assert support(get_format("fp8"), mi).status == "native"
    assert support(get_format("mxfp4"), mi).status == "native"
    assert support(get_format("fp8"), get_accelerator("mi300x")).status == "native"
    assert support(get_format("mxfp4"), get_accelerator("mi300x")).status != "native"  # CDNA 3: no FP4 units


def test_power_and_gfx_target():
    assert power_of("b300").tdp_w == 1100  # nvidia-smi power cap on 'NVIDIA B300 SXM6 AC'
    assert power_of("gb300").tdp_w == 1400
    assert power_of("mi355x").tdp_w == 1400
    # vLLM's ROCm row names gfx950 (MI350): the MI355X is a supported target, not an unknown card
    answer = lifecycle("vllm", get_accelerator("mi355x"))
    assert answer.status == "supported" and answer.arch == "gfx950", answer



@pytest.mark.parametrize("label, acc_id", [
    ("H20", "h20"), ("NVIDIA H20", "h20"),
    ("H100 80GB HBM3", "h100-sxm"),  # nvidia-smi's name without the vendor: HBM3 80 GB is the SXM part
    ("MI300X OAM", "mi300x"), ("MI355X OAM", "mi355x"),
])
def test_more_names_people_use(label, acc_id):
    assert get_accelerator(label).id == acc_id


def test_h20_is_hopper_with_a_sixth_of_the_math():
    """NVIDIA H20: 96 GB HBM3 at 4.0 TB/s, FP16 148 and FP8 296 dense TFLOPS (willitrunai.com/gpus/h20-96gb)."""
    h20, h100 = get_accelerator("h20"), get_accelerator("h100-sxm")
    assert h20.memory_bytes == 96 * GiB and h20.memory_bandwidth_bytes_per_s == 4000 * GB
    assert h20.peak("fp8") == 296 * TFLOPS and h20.peak("bf16") == 148 * TFLOPS
    assert h20.peak("bf16") / h100.peak("bf16") == pytest.approx(0.15, abs=0.005)
    assert support(get_format("fp8"), h20).status == "native"
    assert power_of("h20").tdp_w == 400
