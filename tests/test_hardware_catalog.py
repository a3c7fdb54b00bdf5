"""The accelerator catalog (src/vazao/catalog/data/hardware.yaml).

Published figures come from ../shared/data/published-gpus.csv (36 rows, each citing its source, e.g.
stas00/ml-engineering compute/accelerator/README.md @744d01e18b79512572f64a6bbd8b5f4a725203a7 for the
datacenter parts): every row mapped to a catalog entry must agree with it on memory, bandwidth and dense
BF16 within 1%. The H100 SXM figures are the ones seed 004_9706bef9153e5571.txt reasons with.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from vazao.catalog._load import norm
from vazao.catalog.hardware import DTYPES, accelerators, generations, get_accelerator
from vazao.units import GB, TFLOPS, GiB

CSV_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-gpus.csv"

# published-gpus.csv `gpu` label -> catalog id.
CSV_TO_ID = {
    "A100-SXM4-80GB": "a100-sxm-80gb",
    "A100-PCIe-80GB": "a100-pcie-80gb",
    "H100-SXM-80GB": "h100-sxm",
    "H100-SXM-80GB (listed as '8xH100')": "h100-sxm",
    "H100-PCIe-80GB": "h100-pcie",
    "H100-NVL-94GB": "h100-nvl",
    "H200-SXM-141GB": "h200",
    "H200-SXM-141GB-CTS(1000W)": "h200",
    "GH200-96GB": "gh200-96gb",
    "GH200-144GB": "gh200-144gb",
    "B200-180GB": "b200",
    "GB200-192GB(per GPU)": "gb200",
    "L40S": "l40s",
    "MI300X-192GB": "mi300x",
    "RTX-PRO-6000-Blackwell-Server": "rtx-pro-6000-blackwell",
    "A40": "a40",
    "RTX-A6000": "rtx-a6000",
    "RTX-6000-Ada": "rtx-6000-ada",
    "RTX-5000-Ada": "rtx-5000-ada",
    "RTX-4000-Ada": "rtx-4000-ada",
    "RTX-4090": "rtx-4090",
    "RTX-4080": "rtx-4080",
    "RTX-4070-Ti": "rtx-4070-ti",
    "RTX-3090": "rtx-3090",
    "RTX-3080-Ti": "rtx-3080-ti",
    "RTX-3080-10GB": "rtx-3080",
    "RTX-3070": "rtx-3070",
    "Apple-M1-7coreGPU": "m1",
    "Apple-M1-Max-24coreGPU": "m1-max-24c",
    "Apple-M1-Max-32coreGPU": "m1-max",
    "Apple-M2-Ultra-76coreGPU": "m2-ultra",
    "Apple-M3-10coreGPU": "m3",
    "Apple-M3-Max-40coreGPU": "m3-max",
}

# Rows deliberately not mapped: the form factor (hence bandwidth) is unknown, or no entry exists.
UNMAPPED = {
    "A100-80GB (form factor not stated)",
    "H100-80GB (form factor not stated)",
    "GB10 (DGX Spark)",
}

# Apple rows whose CSV memory is the tested machine's configuration; the catalog lists the largest one.
MEMORY_IS_TEST_MACHINE = {
    "Apple-M1-7coreGPU",
    "Apple-M1-Max-24coreGPU",
    "Apple-M3-10coreGPU",
    "Apple-M3-Max-40coreGPU",
}

REQUIRED_ALIASES = {
    "H100-SXM-80GB": "h100-sxm",
    "h100": "h100-sxm",
    "A100-SXM4-80GB": "a100-sxm-80gb",
    "a100": "a100-sxm-80gb",
    "RTX-4090": "rtx-4090",
    "H200-SXM-141GB": "h200",
    "B200-180GB": "b200",
    "GB200-192GB": "gb200",
    "MI300X-192GB": "mi300x",
    "L40S": "l40s",
    "A10G": "a10g",
    "RTX-3090": "rtx-3090",
    "T4": "t4",
    "V100": "v100",
    "P40": "p40",
    "rtx-3060": "rtx-3060",
    "p40": "p40",
    "b200": "b200",
    "m4-max": "m4-max",
    "Apple-M2-Ultra-76coreGPU": "m2-ultra",
    "H100-NVL-94GB": "h100-nvl",
    "GH200-96GB": "gh200-96gb",
}

REQUIRED_IDS = {
    "p40", "v100", "t4", "a10", "a10g", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-40gb",
    "a100-pcie-80gb", "a40", "l4", "l40s", "h100-sxm", "h100-pcie", "h100-nvl", "h200", "gh200-96gb",
    "gh200-144gb", "b200", "gb200", "rtx-2080-ti", "rtx-3060", "rtx-3090", "rtx-4060-ti-16gb",
    "rtx-4090", "rtx-5090", "mi250x", "mi300x", "mi325x", "m2-ultra", "m3-max", "m4-max",
}  # fmt: skip


def _csv_rows() -> list[dict[str, str]]:
    if not CSV_PATH.is_file():
        pytest.skip(f"{CSV_PATH} not present")
    with CSV_PATH.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _num(cell: str) -> float | None:
    """A CSV cell as a number; '48-64' reads as its upper end; blank or text as None."""
    cell = cell.strip()
    if not cell:
        return None
    try:
        return float(cell.split("-")[-1])
    except ValueError:
        return None


def test_catalog_size_and_required_ids():
    accs = accelerators()
    assert len(accs) >= 38
    assert set(accs) >= REQUIRED_IDS


@pytest.mark.parametrize("acc_id", sorted(accelerators()))
def test_every_entry_is_complete(acc_id):
    acc = accelerators()[acc_id]
    assert acc.source.strip() and acc.as_of.strip()
    assert acc.memory_bytes > 0 and acc.memory_bandwidth_bytes_per_s > 0
    assert acc.interconnect_bytes_per_s > 0 and acc.host_link_bytes_per_s > 0  # divisors in physics/step
    assert acc.price_source and acc.price_as_of  # even a null price says why
    assert acc.usd_per_hour is None or acc.usd_per_hour > 0
    assert acc.kind in {"gpu", "apple", "cpu"}
    assert acc.vendor in {"nvidia", "amd", "apple", "intel"}
    assert acc.generation in generations()
    assert set(acc.peak_flops) <= set(DTYPES)
    assert acc.peak("fp32") > 0
    assert acc.peak_16bit[1] > 0
    assert (acc.compute_capability is not None) == (acc.vendor == "nvidia")


def test_aliases_unique_across_entries():
    owner: dict[str, str] = {}
    for acc in accelerators().values():
        for label in {acc.id, acc.name, *acc.aliases}:
            key = norm(label)
            assert owner.setdefault(key, acc.id) == acc.id, f"{label!r} names {owner[key]} and {acc.id}"


@pytest.mark.parametrize(("label", "acc_id"), sorted(REQUIRED_ALIASES.items()))
def test_required_aliases_resolve(label, acc_id):
    assert get_accelerator(label).id == acc_id


@pytest.mark.parametrize(("label", "acc_id"), sorted(CSV_TO_ID.items()))
def test_csv_labels_resolve(label, acc_id):
    assert get_accelerator(label).id == acc_id


def test_every_csv_row_is_mapped_or_listed():
    labels = {row["gpu"] for row in _csv_rows()}
    assert labels == set(CSV_TO_ID) | UNMAPPED


def test_mapped_rows_match_published_gpus_csv():
    """Memory, bandwidth (GB/s) and dense BF16 (TFLOP/s) agree with published-gpus.csv within 1%. The CSV's
    vram_gb is the vendor's capacity figure ('80' for an H100), which for these parts counts GiB (see
    test_memory_is_binary_and_matches_the_csv)."""
    checked = 0
    for row in _csv_rows():
        label = row["gpu"]
        if label not in CSV_TO_ID:
            continue
        acc = get_accelerator(label)
        mem, bw, bf16 = _num(row["vram_gb"]), _num(row["mem_bw_gbps"]), _num(row["bf16_tflops_dense"])
        if mem is not None:
            if label in MEMORY_IS_TEST_MACHINE:
                assert acc.memory_bytes / GiB >= mem, label
            else:
                assert math.isclose(acc.memory_bytes / GiB, mem, rel_tol=0.01), label
                checked += 1
        if bw is not None:
            assert math.isclose(acc.memory_bandwidth_bytes_per_s / GB, bw, rel_tol=0.01), label
            checked += 1
        if bf16 is not None:
            assert math.isclose(acc.peak("bf16") / TFLOPS, bf16, rel_tol=0.01), label
            checked += 1
        for col, dtype in (
            ("fp8_tflops_dense", "fp8"),
            ("fp4_tflops_dense", "fp4"),
            ("int8_tops_dense", "int8"),
        ):
            value = _num(row[col])
            if value is not None:
                assert math.isclose(acc.peak(dtype) / TFLOPS, value, rel_tol=0.01), (label, dtype)
        cc = row["compute_capability"].strip()
        if cc[:1].isdigit():
            assert acc.compute_capability == cc, label
    assert checked >= 60


def test_h100_sxm_seed004():
    # seed 004_9706bef9153e5571.txt: "cerca de 3,35 terabytes por segundo de largura de banda ...
    # cerca de 989 teraflops de cálculo BF16 denso"
    h100 = get_accelerator("H100-SXM-80GB")
    assert h100.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12, rel=1e-3)
    assert h100.peak("bf16") == pytest.approx(989e12, rel=1e-3)
    # 80 GiB of HBM3: nvidia-smi shows 81559 MiB (NVIDIA/nccl issue #1264), above 80e9 bytes and below 80 GiB
    assert h100.memory_bytes == 80 * GiB


def test_generation_facts_from_seed003():
    # seed 003_238014a8b1bd80f0.txt: Pascal has no tensor cores; the RTX 3060 cluster is Ampere, no FP8.
    p40 = get_accelerator("P40")
    assert not p40.tensor_cores and p40.peak_16bit[0] == "fp32"
    assert p40.peak("fp16") < p40.peak("fp32") / 32
    r3060 = get_accelerator("rtx-3060")
    assert r3060.generation == "ampere" and r3060.compute_capability == "8.6"
    assert not r3060.native("fp8") and r3060.native("bf16")
    assert r3060.memory_bytes == 12 * GiB and r3060.memory_bandwidth_bytes_per_s == 360 * GB  # 6 x 16 Gbit GDDR6


def test_dense_ratios_are_sane():
    """Sparse figures halved: FP8 never exceeds 2x BF16 and 16-bit never exceeds 32x FP32."""
    for acc in accelerators().values():
        bf16 = acc.peak("bf16") or acc.peak("fp16")
        if acc.peak("fp8"):
            assert acc.peak("fp8") <= 2.05 * bf16, acc.id  # L40S: 733 vs 362
        if bf16:
            assert bf16 <= 32 * acc.peak("fp32"), acc.id


def test_fp16_accumulate_speedup_only_on_geforce_cards():
    """GeForce cards list FP32-accumulate tensor rates and run FP16-accumulate GEMMs at twice them
    (NVIDIA Ampere GA102 whitepaper: RTX 3090 142 vs 71 dense FP16 TFLOPS; Ada whitepaper: RTX 4090 330.3 vs
    165.2). The professional Ada cards (RTX 6000/5000/4000 Ada) and the data-centre parts run FP32
    accumulate at full rate, so their listed rate is the only one (RTX 6000 Ada datasheet)."""
    from vazao.catalog.hardware import accelerators, get_accelerator

    assert get_accelerator("rtx-3090").fp16_accumulate_speedup == 2.0
    assert get_accelerator("rtx-4090").fp16_accumulate_speedup == 2.0
    for pro in ("rtx-6000-ada", "rtx-5000-ada", "rtx-4000-ada", "rtx-a6000", "l40s", "a100-sxm-80gb", "h100-sxm",
                "rtx-pro-6000-blackwell"):
        assert get_accelerator(pro).fp16_accumulate_speedup == 1.0, pro
    doubled = {a.id for a in accelerators().values() if a.fp16_accumulate_speedup != 1.0}
    assert doubled and all(a.startswith("rtx-") and not a.endswith("-ada") for a in doubled)


def test_fp16_accumulate_speedup_is_checked():
    from vazao.catalog.hardware import _accelerator
    from vazao.errors import VazaoError

    entry = {"id": "x", "name": "x", "vendor": "nvidia", "generation": "ada", "memory_gib": 24,
             "memory_source": "s", "memory_as_of": "2026", "bandwidth_gb_s": 1000,
             "peak_tflops": {"fp16": 100}, "interconnect": "pcie4", "interconnect_gb_s": 32, "host_link_gb_s": 32,
             "source": "s", "as_of": "2026", "fp16_accumulate_speedup": 9}
    with pytest.raises(VazaoError, match="fp16_accumulate_speedup"):
        _accelerator(entry)


def _raw_entries() -> list[dict]:
    from vazao.catalog._load import load_yaml

    return load_yaml("hardware.yaml")["accelerators"]


def test_memory_unit_is_stated_with_its_source():
    """Every entry states its memory in exactly one named unit (memory_gib or memory_gb), cites it, and
    memory_bytes is that figure times the unit: no bare 'memory' whose unit is a guess."""
    from vazao.catalog.hardware import MEMORY_KEYS

    for entry in _raw_entries():
        keys = [k for k in MEMORY_KEYS if k in entry]
        assert len(keys) == 1, entry["id"]
        assert str(entry.get("memory_source", "")).strip() and str(entry.get("memory_as_of", "")).strip(), entry["id"]
        acc = accelerators()[entry["id"]]
        unit, size = MEMORY_KEYS[keys[0]]
        assert acc.memory_unit == unit and acc.memory_bytes == entry[keys[0]] * size, entry["id"]
        assert acc.memory_source == entry["memory_source"]


def test_memory_is_binary_and_matches_the_csv():
    """published-gpus.csv's vram_gb is the vendor's capacity figure (80 for an H100, 141 for an H200); memory
    stacks and chips come in 2**30-byte multiples, so each mapped row's figure is GiB, exactly."""
    checked = 0
    for row in _csv_rows():
        label, mem = row["gpu"], _num(row["vram_gb"])
        if label not in CSV_TO_ID or mem is None or label in MEMORY_IS_TEST_MACHINE:
            continue
        acc = get_accelerator(label)
        assert acc.memory_unit == "GiB", label
        assert acc.memory_bytes == mem * GiB, (label, acc.memory_bytes, mem)
        checked += 1
    assert checked >= 25


# What the driver reports as total memory, a little under the physical capacity (it keeps some back;
# ECC on GDDR datacenter cards keeps 1/16) and above the decimal reading of the vendor's figure.
DRIVER_TOTAL_MIB = {
    "h100-sxm": (81559, "nvidia-smi, NVIDIA/nccl issue #1264 and modal-labs/modal-client PR #2797"),
    "a100-sxm-80gb": (81920, "nvidia-smi, modal-labs/modal-client PR #2797"),
    "a100-sxm-40gb": (40960, "nvidia-smi, modal-labs/modal-client PR #2797"),
    "h100-nvl": (95830, "nvidia-smi, NVIDIA/gpu-admin-tools issue #4"),
    "b200": (183359, "nvidia-smi, NVIDIA/TensorRT-LLM issue #10278"),
    "l40s": (46068, "nvidia-smi with ECC on, modal-labs/modal-client PR #2797"),
    "l4": (23034, "nvidia-smi with ECC on, modal-labs/modal-client PR #2797"),
    "a10": (23028, "nvidia-smi with ECC on, modal-labs/modal-client PR #2797"),
    "t4": (15360, "nvidia-smi with ECC on, modal-labs/modal-client PR #2797"),
    "a40": (46068, "nvidia-smi with ECC on, thamada/nvidia-smi nvsim/A40x10_smi.py"),
    "rtx-6000-ada": (49140, "nvidia-smi, thamada/nvidia-smi gls/RTX6000Ada_x8_smi.py"),
    "rtx-4000-ada": (20475, "nvidia-smi, thamada/nvidia-smi gls/RTX4000Ada_smi.py"),
    "rtx-4060-ti-16gb": (16380, "nvidia-smi, thamada/nvidia-smi nvsim/RTX4060Ti_smi.py"),
    "rtx-4090": (24564, "nvidia-smi, RLinf/RLinf issue #255"),
    "rtx-3090": (24576, "nvidia-smi, noonghunna/club-3090 issue #1128"),
    "rtx-5090": (32607, "nvidia-smi, noonghunna/club-3090 issue #1261"),
    "p100": (16384, "nvidia-smi, wookayin/gpustat issue #130"),
    "mi300x": (206141652992 / 2**20, "rocm-smi 'VRAM Total Memory (B)', ROCm/legacy-rocm-build issue #4750"),
}


@pytest.mark.parametrize("acc_id", sorted(DRIVER_TOTAL_MIB))
def test_driver_totals_sit_just_under_the_binary_capacity(acc_id):
    reported = DRIVER_TOTAL_MIB[acc_id][0] * 2**20
    acc = get_accelerator(acc_id)
    assert reported <= acc.memory_bytes
    assert reported >= 0.93 * acc.memory_bytes  # ECC keeps 1/16 and a few MiB more (23028 of 24576 MiB on an A10)
    vendor_figure = acc.memory_bytes / GiB
    assert reported > vendor_figure * GB  # a decimal reading of "80 GB" would be less than the driver shows


@pytest.mark.parametrize(("change", "needle"), [
    ({"memory_gib": None}, "exactly one of memory_gib"),  # neither key
    ({"memory_gb": 24}, "exactly one of memory_gib"),  # both keys
    ({"memory_gib": "24"}, "positive number"),
    ({"memory_gib": -1}, "positive number"),
    ({"memory_source": ""}, "memory_source"),
])
def test_memory_without_a_stated_unit_or_source_is_refused(change, needle):
    from vazao.catalog.hardware import _accelerator
    from vazao.errors import VazaoError

    entry = {"id": "x", "name": "x", "vendor": "nvidia", "generation": "ada", "memory_gib": 24,
             "memory_source": "s", "memory_as_of": "2026", "bandwidth_gb_s": 1000, "peak_tflops": {"fp16": 100},
             "interconnect": "pcie4", "interconnect_gb_s": 32, "host_link_gb_s": 32, "source": "s", "as_of": "2026"}
    entry.update(change)
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(VazaoError, match=needle):
        _accelerator(entry)
    ok = {k: v for k, v in entry.items() if k not in change} | {"memory_gib": 24, "memory_source": "s"}
    assert _accelerator(ok).memory_bytes == 24 * GiB
