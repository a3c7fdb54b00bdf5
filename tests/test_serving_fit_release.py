"""bench/serving_fit.py --release: one release's values fitted on that release's rows alone. TensorRT-LLM's
serving rows come from several releases (1.0.0rc3 on H100; 1.1, 1.2, 1.3 and unstated ones on H200), and
the unstated ones were over-predicted in TTFT by a median +37% under one shared fit (docs/accuracy.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

BENCH = Path(__file__).resolve().parent.parent / "bench" / "serving_fit.py"


@pytest.fixture()
def sf():
    spec = importlib.util.spec_from_file_location("serving_fit_under_test", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def _row(version):
    return SimpleNamespace(version=version)


def test_a_release_takes_its_own_rows_and_the_base_every_release_without_an_entry(sf):
    entries = [(0, 14), (0, 17), (1, 0)]
    rows = {v: _row(v) for v in [(1, 0), (1, 0, 0), (1, 1, 0), (1, 3), None, (0, 17)]}
    own = [v for v, r in rows.items() if sf._in_release(r, (1, 0), entries)]
    base = [v for v, r in rows.items() if sf._in_release(r, (), entries)]
    assert own == [(1, 0), (1, 0, 0)]
    assert base == [(1, 1, 0), (1, 3), None]  # 0.17 has its own entry, so it is neither
    assert all(sf._in_release(r, None, entries) for r in rows.values())  # no --release: every row


def _entry(sf):
    return yaml.safe_load(sf.CALIBRATION.read_text())["engines"]["trtllm"]


def test_the_base_fit_leaves_every_release_entry_running_what_it_ran(sf):
    from vazao.physics.profiles import get_engine

    shipped, entry = _entry(sf), _entry(sf)
    before = {str(v["min_version"]): dict(v) for v in shipped["versions"]}
    sf._write_values(entry, "trtllm", {"request_overhead_s": 0.5, "memory_efficiency": 0.5}, (), [])
    assert entry["request_overhead_s"] == 0.5 and entry["memory_efficiency"] == 0.5
    base = get_engine("trtllm")
    for v in entry["versions"]:
        for name in ("request_overhead_s", "memory_efficiency"):  # its own value, or the old base it inherited
            assert v[name] == before[str(v["min_version"])].get(name, getattr(base, name)) != 0.5


def test_a_release_fit_writes_that_release_only(sf):
    shipped, entry = _entry(sf), _entry(sf)
    sf._write_values(entry, "trtllm", {"request_overhead_s": 0.5}, (1, 0), [])
    assert entry["request_overhead_s"] == shipped["request_overhead_s"]
    got = {str(v["min_version"]): v.get("request_overhead_s") for v in entry["versions"]}
    assert got["1.0"] == 0.5 and got["0.14"] != 0.5


def test_one_fit_for_every_release_writes_every_entry_its_rows_ran_with(sf):
    # a leave-one-GPU-out fold fits one set of values on all releases' rows: an entry it left alone would
    # predict the held-out GPU with values fitted on that GPU's rows
    entry = _entry(sf)
    sf._write_values(entry, "trtllm", {"request_overhead_s": 0.5}, None,
                     [SimpleNamespace(version=(1, 0, 0)), SimpleNamespace(version=None)])
    got = {str(v["min_version"]): v.get("request_overhead_s") for v in entry["versions"]}
    assert entry["request_overhead_s"] == 0.5 and got["1.0"] == 0.5 and got["0.14"] != 0.5


def test_the_efficiency_bounds_hold_the_achieved_rate_on_the_h200_where_a_ceiling_lowers_it(sf):
    """BOUNDS are what the lent H200 achieved (copies 0.88 of its bandwidth, bf16 GEMMs 0.81 of its peak). A
    profile whose stream ceiling lowers what its efficiency achieves (physics/step.py: 1 / (1 / eff + peak /
    ceiling)) may take a larger efficiency, up to the one achieving that rate, within the profile's limits."""
    from dataclasses import replace

    from vazao.catalog.local import resolve_accelerator
    from vazao.physics.profiles import CALIBRATED, get_engine

    acc = resolve_accelerator(sf.BOUND_GPU)
    bw, peak = acc.memory_bandwidth_bytes_per_s, acc.peak_16bit[1]
    plain = replace(get_engine("vllm"), stream_ceiling_bytes_per_s=0.0, compute_ceiling_flops=0.0)
    assert sf.bounds_for(plain) == sf.BOUNDS  # no ceiling: the achieved rate is the efficiency
    # a ceiling at 20 × the H200's bandwidth: 1 / (1 / 0.88 − 1 / 20) = 0.9204, the copy rate still 0.88
    capped = replace(plain, stream_ceiling_bytes_per_s=20 * bw, compute_ceiling_flops=20 * peak)
    (mlo, mhi), (clo, chi) = sf.bounds_for(capped)["memory_efficiency"], sf.bounds_for(capped)["compute_efficiency"]
    assert (mlo, clo) == (sf.BOUNDS["memory_efficiency"][0], sf.BOUNDS["compute_efficiency"][0])
    assert mhi == pytest.approx(1 / (1 / 0.88 - 1 / 20))
    assert chi == pytest.approx(1 / (1 / 0.81 - 1 / 20))
    assert 1 / (1 / mhi + 1 / 20) == pytest.approx(0.88)  # what it achieves on the H200
    # a low ceiling would need an efficiency above 1: the profile's own limit holds
    low = replace(plain, stream_ceiling_bytes_per_s=2 * bw)
    assert sf.bounds_for(low)["memory_efficiency"][1] == CALIBRATED["memory_efficiency"][1]
    below = replace(plain, stream_ceiling_bytes_per_s=0.5 * bw)  # no efficiency reaches 0.88 under it
    assert sf.bounds_for(below)["memory_efficiency"][1] == CALIBRATED["memory_efficiency"][1]
