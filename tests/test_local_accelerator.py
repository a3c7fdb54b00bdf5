"""`--gpu local`: this host probed as an accelerator, so a measured run on it has a prediction to sit beside."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.catalog.hardware import get_accelerator
from vazao.catalog.local import measure_bandwidth, measure_fp32_flops, resolve_accelerator
from vazao.cli import app
from vazao.errors import VazaoError


def test_local_probe_is_measured_and_sane():
    acc = resolve_accelerator("local")
    assert acc is resolve_accelerator("localhost")  # probed once per process
    assert resolve_accelerator("h100-sxm") is get_accelerator("h100-sxm")
    # the catalog itself never measures anything: 'local' is resolved where deployments are made
    with pytest.raises(VazaoError, match="this host"):
        get_accelerator("local")
    # Any machine that runs this suite streams more than 1 GB/s and computes more than 1 GFLOP/s in FP32,
    # and less than a datacenter GPU's HBM and tensor cores.
    assert 1e9 < acc.memory_bandwidth_bytes_per_s < 5e12
    assert 1e9 < acc.peak("fp32") < 1e14
    assert acc.memory_bytes > 1e9
    assert "measured" in acc.source and acc.as_of


def test_probe_functions_turn_their_best_time_into_a_rate(monkeypatch):
    """A copy reads and writes its bytes (2 x nbytes per copy); an n x n matmul is 2 n^3 FLOP. The timing
    itself is replaced: on a shared 2-core host a real copy of 32 MiB against 64 MiB differed 3.4x (cache
    residency on a 480 MiB L3, and a busy core), so a ratio of real timings is no test of the arithmetic.
    The real probes' plausibility is checked above (test_local_probe_is_measured_and_sane)."""
    import vazao.catalog.local as local

    seen = []

    def fake_best(fn, tries):
        fn()  # the probe's own work runs once, so a broken callable still fails here
        seen.append(tries)
        return 0.25

    monkeypatch.setattr(local, "_best", fake_best)
    assert measure_bandwidth(8 * 2**20, 3) == 2 * 8 * 2**20 / 0.25
    assert measure_fp32_flops(64, 2) == 2.0 * 64**3 / 0.25
    assert seen == [3, 2]


def test_estimate_on_local_uses_llama_cpp(gemma_gguf):
    res = CliRunner().invoke(app, ["estimate", str(gemma_gguf), "--gpu", "local", "--batch", "1", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["gpu"] == "local" and d["engine"] == "llama.cpp"
    assert d["rows"][0]["decode_step_s"] > 0 and d["fit"]["fits"]


def test_the_host_generation_is_read_from_the_vendor_and_zen_5_and_avx2_only_amd_from_their_flags(monkeypatch):
    import io

    from vazao.catalog import local

    def cpuinfo(vendor: str, flags: str):
        text = f"processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n"
        monkeypatch.setattr(local, "open", lambda *a, **k: io.StringIO(text), raising=False)
        return local.host_generation()

    assert cpuinfo("AuthenticAMD", "fpu avx2 avx512f avx512_vnni") == "cpu-amd"  # Zen 4
    assert cpuinfo("AuthenticAMD", "fpu avx2 avx512f avx512_vp2intersect") == "cpu-amd-zen5"
    assert cpuinfo("AuthenticAMD", "fpu avx2 fma vaes vpclmulqdq") == "cpu-amd-avx2"  # Zen 3: no AVX-512
    assert cpuinfo("GenuineIntel", "fpu avx2 avx512f avx512_vp2intersect") == "cpu-intel"  # Tiger Lake has it too
    assert cpuinfo("SomethingElse", "fpu") == "cpu-generic"
