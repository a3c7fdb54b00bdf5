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


def _serving_row(model, output_len, metric, value, clients=8, **kw):
    return SimpleNamespace(family="trtllm", version=(1, 0), model=model, gpu="H100-SXM-80GB", tp=1, pp=1, moe_tp=None,
                           moe_ep=None, attention_dp=None, weights="bf16", kv="fp16", input_len=1024,
                           output_len=output_len, condition=SimpleNamespace(kind="concurrency", value=clients),
                           metric=metric, value=value, **kw)


def _campaign(model, ttft_per_output_token_ms, clients=8, tpot_ms=8.0):
    """Rows at 128, 256 and 512 output tokens whose TTFT grows by the given ms per output token."""
    return [r for out in (128, 256, 512) for r in (
        _serving_row(model, out, "tpot_ms", tpot_ms, clients),
        _serving_row(model, out, "ttft_ms", 150.0 + ttft_per_output_token_ms * out, clients))]


def test_the_fits_leave_out_ttft_that_grows_by_one_completion_interval(sf):
    """A campaign whose new requests wait one completion interval (TTFT + output × TPOT / clients) is screened;
    one whose TTFT does not move with the output length, or grows by far more (a queue for KV memory), is not."""
    harness = _campaign("a", 8.0 / 8)  # + output × 8 ms / 8 clients: a slope of 1
    flat = _campaign("b", 0.0)
    kv_queue = _campaign("c", 8.0 * 20 / 8)  # twenty intervals
    slopes = sf.ttft_slopes(harness + flat + kv_queue)
    assert [round(slopes[("trtllm", (1, 0), m, "H100-SXM-80GB")], 6) for m in "abc"] == [1.0, 0.0, 20.0]
    kept = sf.screened(harness + flat + kv_queue)
    assert [r for r in harness + flat + kv_queue if r not in kept] == [r for r in harness if r.metric == "ttft_ms"]


def test_the_serving_files_fitting_half_screens_one_campaign(sf):
    """docs/accuracy.md: TensorRT-LLM 1.0.0rc3's Llama-3.1-8B TTFT rows (0.84-0.93 at 8-32 clients), nothing else."""
    from vazao.validate import read_rows

    rows, _ = read_rows(sf.SERVING)
    fitting = [r for r in rows if not sf.held_out(r)]
    gone = [r for r in fitting if r not in sf.screened(fitting)]
    assert gone and {(r.family, r.version[:2], r.model, r.metric) for r in gone} == {
        ("trtllm", (1, 0), "Llama-3.1-8B-Instruct", "ttft_ms")}
    assert len(gone) == sum(1 for r in fitting if r.family == "trtllm" and r.model == "Llama-3.1-8B-Instruct"
                            and r.metric == "ttft_ms")
