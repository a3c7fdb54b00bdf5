"""An engine's one-shot all-reduce: each GPU reads its tp − 1 peers' whole messages, (tp − 1) × the bytes where
the ring (and the two-shot kernel) moves 2(tp − 1)/tp × them, so tp/2 times the bandwidth term.

Where each engine goes one-shot, from its own source:
- vLLM csrc/custom_all_reduce.cuh (SGLang runs the same kernels): cross_device_reduce_1stage when
  `(world_size <= 4 && bytes < 512 * 1024) || (world_size <= 8 && bytes < 256 * 1024)`, else 2stage;
- TensorRT-LLM before its PyTorch executor (plugins/ncclPlugin/allreducePlugin.cpp): ONESHOT below 1,000,000 bytes
  on 3-4 GPUs and 500,000 on 5-8;
- TensorRT-LLM's PyTorch executor (thop/allreduceOp.cpp, AUTO): MIN_LATENCY, a one-shot kernel, for a step of at
  most 128 tokens (ALLREDUCE_AUTO_HEURISTIC_MIN_LATENCY_THRESHOLD_TOKEN_NUM), NCCL above.

Message sizes: Llama-3.1-8B's hidden size is 4,096 and Llama-3.1-70B's 8,192 (their config.json files), two bytes an
activation (physics/memory.py ACT_BYTES), so a token is 8 KiB and 16 KiB of each all-reduce.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vazao.catalog.hardware import get_accelerator
from vazao.errors import VazaoError
from vazao.physics.deployment import Deployment, make_deployment
from vazao.physics.memory import ACT_BYTES
from vazao.physics.profiles import get_engine, load_profiles
from vazao.physics.step import CUSTOM_ALLREDUCE_HOPS, INTRA_NODE_HOP_LATENCY_S, BatchShape, step_cost


def _deps(engine, model: str, tp: int, acc: str = "h100-sxm"):
    """The deployment, and the same with the engine's one-shot rule off (the ring's bytes at every size)."""
    eng = get_engine(engine) if isinstance(engine, str) else engine
    ring = replace(eng, oneshot_allreduce_bytes=0.0, oneshot_allreduce_tokens=0)
    on = make_deployment(model, get_accelerator(acc), "bf16", count=tp, tp=tp, engine=eng)
    off = make_deployment(model, get_accelerator(acc), "bf16", count=tp, tp=tp, engine=ring)
    return on, off


def _extra_s(on, off, tokens: int) -> float:
    shape = BatchShape.decode(tokens, 1024)
    return step_cost(on, shape).comm_s - step_cost(off, shape).comm_s


def _oneshot_extra_s(dep, tokens: int) -> float:
    """(tp/2 − 1) × the ring's bandwidth term, for every all-reduce of the step."""
    act = tokens * dep.model.hidden_size * ACT_BYTES
    ring = dep.consts.allreduce_factor_s_per_byte * act
    return 2 * dep.model.num_layers * ring * (dep.tp / 2 - 1)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("tp,below,at", [(8, 31, 32), (4, 63, 64)])
def test_vllm_and_sglang_go_one_shot_below_their_byte_threshold(engine, tp, below, at):
    """Llama-3.1-8B, 8 KiB a token: on 8 GPUs 31 tokens (248 KiB) go one-shot and 32 (256 KiB, not below 256 KiB)
    two-shot; on 4 GPUs 63 (504 KiB) and 64 (512 KiB)."""
    on, off = _deps(engine, "llama-3.1-8b", tp)
    assert on.engine.oneshot_allreduce_bytes == 256 * 1024
    assert _extra_s(on, off, below) == pytest.approx(_oneshot_extra_s(on, below), rel=1e-9)
    assert _extra_s(on, off, below) > 0
    assert _extra_s(on, off, at) == 0


def test_two_gpus_move_the_same_bytes_either_way():
    """At tp 2 one-shot reads one peer's message, M, and the ring moves 2(2 − 1)/2 × M: no change."""
    on, off = _deps("vllm", "llama-3.1-8b", 2)
    assert _extra_s(on, off, 8) == 0


def test_trtllm_pytorch_executor_goes_one_shot_up_to_128_tokens_whatever_the_bytes():
    """Llama-3.1-70B on 8 H100s: a 128-sequence decode step all-reduces 2 MiB 160 times, one-shot (14 MiB read by
    each GPU each time instead of 3.5 MiB); 129 sequences go to NCCL's ring, which pays its 2(8 − 1) hops of
    1.9 µs (physics/step.py INTRA_NODE_HOP_LATENCY_S) instead of the engine kernel's two barriers."""
    on, off = _deps("trtllm", "llama-3.1-70b", 8)
    assert on.engine.oneshot_allreduce_tokens == 128
    extra = _extra_s(on, off, 128)
    assert extra == pytest.approx(_oneshot_extra_s(on, 128), rel=1e-9)
    # 160 × 3 × (2 × 7/8 × 2 MiB) / the link (450 GB/s × the profile's comm_efficiency): milliseconds a step
    assert extra > 1e-3
    hops = 2 * (8 - 1) - CUSTOM_ALLREDUCE_HOPS
    assert _extra_s(on, off, 129) == pytest.approx(2 * 80 * hops * INTRA_NODE_HOP_LATENCY_S, rel=1e-9)
    # the two kernels meet near the switch, as the engine's choice intends: one more sequence, about the same step
    t128 = step_cost(on, BatchShape.decode(128, 1024)).time_s
    t129 = step_cost(on, BatchShape.decode(129, 1024)).time_s
    assert abs(t129 / t128 - 1) < 0.05


def test_trtllm_before_1_0_chose_by_bytes():
    """Release 0.17 (the plugin): 30 tokens of Llama-3.1-70B (480 KiB = 491,520 bytes < 500,000) one-shot on 8
    GPUs, 31 (507,904 bytes) not; a 128-token step (2 MiB) two-shot, where 1.x takes it one-shot."""
    old = get_engine("trtllm").at_version((0, 17))
    assert old.oneshot_allreduce_tokens == 0 and old.oneshot_allreduce_bytes == 500_000
    on, off = _deps(old, "llama-3.1-70b", 8)
    assert _extra_s(on, off, 30) == pytest.approx(_oneshot_extra_s(on, 30), rel=1e-9)
    assert _extra_s(on, off, 31) == 0
    assert _extra_s(on, off, 128) == 0
    assert get_engine("trtllm").at_version((1, 0)).oneshot_allreduce_tokens == 128


def test_no_one_shot_without_the_engines_own_kernel():
    """Over PCIe (L40S) vLLM all-reduces through NCCL; past one node (tp 16 over two DGX H100) NCCL's ring too."""
    on, off = _deps("vllm", "llama-3.1-8b", 4, acc="l40s")
    assert _extra_s(on, off, 8) == 0
    two_nodes = make_deployment("llama-3.1-405b", get_accelerator("h100-sxm"), "bf16", count=16, tp=16,
                                engine="trtllm")
    assert two_nodes.consts.oneshot_mult == 1.0


def test_attention_data_parallelism_gathers_and_scatters_instead():
    """Under attention DP the MoE layers gather every rank's tokens and scatter them back (TensorRT-LLM
    enable_attention_dp, SGLang --enable-dp-attention): the ring's bytes, not the one-shot kernel's."""
    h100 = get_accelerator("h100-sxm")
    dp = make_deployment("qwen3-235b-a22b", h100, "fp8", count=8, tp=8, engine="trtllm", attention_dp=True)
    plain = make_deployment("qwen3-235b-a22b", h100, "fp8", count=8, tp=8, engine="trtllm")
    assert dp.consts.oneshot_mult == 1.0 and dp.consts.oneshot_max_tokens == 0
    assert plain.consts.oneshot_mult == 4.0 and plain.consts.oneshot_max_tokens == 128


def test_grid_sweep_charges_the_same_one_shot_bytes():
    """physics/grid.py's arrays over accelerators: a TensorRT-LLM decode of 64 (one-shot) and a prefill of 4,096
    tokens (ring) on H100, H200 and L40S (no NVLink: ring) match step_cost cell by cell."""
    from vazao.catalog.formats import get_format, get_kv_format
    from vazao.catalog.models import get_model
    from vazao.physics.grid import sweep

    accs = [get_accelerator(a) for a in ("h100-sxm", "h200", "l40s")]
    model, fmt, kv = get_model("llama-3.1-70b"), get_format("bf16"), get_kv_format("fp16")
    eng = get_engine("trtllm").on_generation("hopper")
    shapes = (BatchShape.decode(64, 2048), BatchShape.prefill(1, 4096))
    (cell,) = sweep([model], accs, [fmt], (8,), eng, kv, shapes, context=2048)
    for i, acc in enumerate(accs):
        dep = Deployment(model=model, weight_format=fmt, kv_format=kv, accelerator=acc, engine=eng, count=8, tp=8)
        for k, shape in enumerate(shapes):
            assert cell.step_time_s[k, i] == pytest.approx(step_cost(dep, shape).time_s, rel=1e-12)
    assert np.all(np.isfinite(cell.step_time_s))


@pytest.mark.parametrize("key,value,message", [
    ("oneshot_allreduce_bytes", '"x"', "oneshot_allreduce_bytes must be from 0 to"),
    ("oneshot_allreduce_bytes", "-1", "oneshot_allreduce_bytes must be from 0 to"),
    ("oneshot_allreduce_bytes", "1e300", "oneshot_allreduce_bytes must be from 0 to"),
    ("oneshot_allreduce_bytes", "true", "oneshot_allreduce_bytes must be from 0 to"),
    ("oneshot_allreduce_tokens", "12.5", "oneshot_allreduce_tokens must be a whole number from 0 to"),
    ("oneshot_allreduce_tokens", "-1", "oneshot_allreduce_tokens must be a whole number from 0 to"),
    ("oneshot_allreduce_tokens", "[128]", "oneshot_allreduce_tokens must be a whole number from 0 to"),
])
def test_a_profile_files_one_shot_thresholds_are_bounded(tmp_path, key, value, message):
    bad = tmp_path / "p.yaml"
    bad.write_text(f"engines:\n  vllm:\n    {key}: {value}\n")
    with pytest.raises(VazaoError, match=message):
        load_profiles(bad)
    bad.write_text(f"engines:\n  vllm:\n    {key}: 0\n")
    assert getattr(load_profiles(bad)["vllm"], key) == 0
