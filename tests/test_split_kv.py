"""Decode attention without split-KV (EngineProfile.split_kv false): a step's KV reads go at the share of the
bandwidth that sequences × KV heads thread blocks cover of the accelerator's multiprocessors.

Expected numbers: the H200's 132 SMs (NVIDIA H100 Tensor Core GPU architecture whitepaper, the SXM5 part H200
shares); Llama-3.1-8B's 8 KV heads (its HF config.json, num_key_value_heads 8). The lent H200's timing this
models (docs/accuracy.md, bench/results/gpu/h200_llama_torch.json): one sequence's cache read at about 0.2 TB/s,
sixteen sequences' at 3.2 TB/s."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import vazao
from vazao.catalog.formats import get_format, get_kv_format
from vazao.catalog.hardware import _sm, get_accelerator
from vazao.catalog.models import get_model
from vazao.errors import VazaoError
from vazao.physics.deployment import Deployment
from vazao.physics.grid import sweep
from vazao.physics.profiles import get_engine
from vazao.physics.step import BatchShape, StepConstants, StepTimer, kv_occupancy, step_cost

H200_SMS = 132
LLAMA8_KV_HEADS = 8


def _dep(engine: str = "naive", gpu: str = "h200", split: bool | None = None, tp: int = 1):
    eng = get_engine(engine)
    if split is not None:
        eng = replace(eng, split_kv=split)
    return vazao.deployment_for("llama-3.1-8b", gpu, "bf16", engine=eng, count=tp, tp=tp)


def test_catalog_states_multiprocessors_with_a_source():
    h200 = get_accelerator("h200")
    assert h200.sm_count == H200_SMS and h200.sm_source and h200.sm_as_of
    assert get_accelerator("h100-pcie").sm_count == 114  # the same whitepaper: the PCIe part has 114
    assert get_accelerator("gb200").sm_count is None  # no source states it: no limit is charged there


@pytest.mark.parametrize("spec, message", [
    ({"count": True, "source": "s", "as_of": "2026"}, "whole number"),
    ({"count": 0, "source": "s", "as_of": "2026"}, "whole number"),
    ({"count": "132", "source": "s", "as_of": "2026"}, "whole number"),
    ({"count": 10**6, "source": "s", "as_of": "2026"}, "whole number"),
    ({"count": 132, "as_of": "2026"}, "source"),
    (132, "mapping"),
])
def test_catalog_refuses_a_bad_sm_entry(spec, message):
    with pytest.raises(VazaoError, match=message):
        _sm({"id": "x", "sm": spec})


def test_one_sequence_reads_its_cache_at_its_blocks_share():
    """memory_s without split-KV minus with it = the KV bytes over the cache's rate × (132/8 − 1)."""
    shape = BatchShape.decode(1, 8192)
    limited, split = step_cost(_dep(), shape), step_cost(_dep(split=True), shape)
    c = _dep().consts
    kv_bytes = c.shard.kv_bytes_per_token_full * (8192 + 1)
    full_rate_s = kv_bytes / (c.bandwidth * c.kv_memory_eff)
    assert kv_occupancy(c, 1) == pytest.approx(LLAMA8_KV_HEADS / H200_SMS)
    assert limited.memory_s - split.memory_s == pytest.approx(full_rate_s * (H200_SMS / LLAMA8_KV_HEADS - 1))
    # the rate that implies: naive's 0.6 of 4.8 TB/s × 8/132 = 0.17 TB/s (0.2 TB/s timed on the H200)
    rate = kv_bytes / (limited.memory_s - split.memory_s + full_rate_s)
    assert rate == pytest.approx(4.8e12 * 0.6 * LLAMA8_KV_HEADS / H200_SMS, rel=1e-9)


def test_enough_sequences_fill_the_gpu():
    """17 sequences × 8 heads = 136 blocks ≥ 132 SMs: the same time as with split-KV; 16 (128 blocks) not."""
    for n, same in ((17, True), (64, True), (16, False)):
        shape = BatchShape.decode(n, 4096)
        a, b = step_cost(_dep(), shape).time_s, step_cost(_dep(split=True), shape).time_s
        assert (a == b) is same, n


def test_tensor_parallel_ranks_hold_fewer_heads():
    """At tp 4 a rank keeps 2 of the 8 KV heads: one sequence gives 2 blocks, 2/132 of the rate."""
    c = _dep(tp=4).consts
    assert c.shard.kv_heads == 2
    assert kv_occupancy(c, 1) == pytest.approx(2 / H200_SMS)


def test_prompt_steps_and_split_engines_are_unchanged():
    shape = BatchShape.prefill(1, 2048)
    assert step_cost(_dep(), shape).time_s == step_cost(_dep(split=True), shape).time_s
    for engine in ("vllm", "sglang", "trtllm", "llama.cpp"):
        assert get_engine(engine).split_kv, engine
        assert not _dep(engine).consts.kv_limited
    # an accelerator whose multiprocessors the catalog does not state: no limit, even without split-KV
    assert not _dep(gpu="gb200").consts.kv_limited


def test_the_simulator_times_such_steps_with_step_cost():
    assert not StepTimer.usable(_dep().consts)  # its decode fast paths assume KV reads at one rate
    assert StepTimer.usable(_dep(gpu="gb200").consts)
    assert StepTimer.usable(_dep("vllm").consts)


def test_grid_sweep_matches_step_cost():
    """physics/grid.py's arrays (0 multiprocessors where unknown) give step_cost's time on every accelerator."""
    accs = [get_accelerator(g) for g in ("h200", "gb200", "l40s", "rtx-4090")]
    model, fmt, kv = get_model("llama-3.1-8b"), get_format("bf16"), get_kv_format("fp16")
    eng = get_engine("naive")
    shapes = (BatchShape.decode(1, 8192), BatchShape.decode(8, 2048), BatchShape.decode(64, 1024),
              BatchShape.prefill(1, 1024))
    (cell,) = sweep([model], accs, [fmt], (1,), eng, kv, shapes, context=8192)
    for i, acc in enumerate(accs):
        dep = Deployment(model=model, weight_format=fmt, kv_format=kv, accelerator=acc, engine=eng, count=1, tp=1)
        for k, shape in enumerate(shapes):
            assert cell.step_time_s[k, i] == pytest.approx(step_cost(dep, shape).time_s, rel=1e-12)
    c = StepConstants.of(Deployment(model=model, weight_format=fmt, kv_format=kv, accelerator=accs[0], engine=eng,
                                    count=1, tp=1))
    assert isinstance(kv_occupancy(c, 1), float)
    assert np.isfinite(cell.step_time_s).all()


def test_a_profile_file_flag_must_be_a_bool():
    from vazao.physics.profiles import profile_from_dict

    base = {k: v for k, v in vars(get_engine("naive")).items() if k not in ("name",)}
    with pytest.raises(VazaoError, match="split_kv must be true or false"):
        profile_from_dict("naive", {**base, "split_kv": "no"})


def test_the_gpus_command_states_the_count_and_its_source():
    import json

    from typer.testing import CliRunner

    from vazao.cli import app

    out = CliRunner().invoke(app, ["gpus", "--json"])
    assert out.exit_code == 0, out.output
    gpus = {g["id"]: g for g in json.loads(out.stdout)["gpus"]}
    assert gpus["h200"]["sm_count"] == H200_SMS and "whitepaper" in gpus["h200"]["sm_source"]
    assert gpus["gb200"]["sm_count"] is None and gpus["gb200"]["sm_source"] is None

