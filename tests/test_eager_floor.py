"""TensorRT-LLM's PyTorch executor (releases 1.x) replays decode-only steps from CUDA graphs and launches every
other step's kernels from Python, layer by layer. A step that carries prompt tokens therefore lasts at least
its layers' launches, however little work the GPU has (EngineProfile.eager_step_layer_s a dense layer,
eager_moe_layer_s a MoE layer).

The serving file shows it: TensorRT-LLM 1.0.0rc3 serving Qwen3-235B-A22B FP8 on 8 H100 (expert parallel 8) at
4 clients measured a TTFT of 169–174 ms for a 512-token prompt and 171–175 ms for a 1,024-token one
(shared/data/published-serving.csv rows aic-00747 … aic-00757, aiconfigurator's silicon sample): the prompt's
length does not show, where its GEMMs alone would take tens of milliseconds. The same release's dense models show
the same floor per layer (Qwen3-32B's 64 layers, Llama-3.1-8B's 32)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vazao.physics.deployment import make_deployment
from vazao.physics.profiles import get_engine, load_profiles
from vazao.physics.step import BatchShape, StepTimer, step_cost

SERVING = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-serving.csv"


def _trt(release: tuple[int, ...] | None = (1, 0)):
    return get_engine("trtllm").at_version(release)


def _qwen235(engine):
    return make_deployment("qwen3-235b-a22b", "h100-sxm", "fp8", count=8, engine=engine, expert_parallel=8)


def _off(eng):
    return dataclasses.replace(eng, eager_step_layer_s=0.0, eager_moe_layer_s=0.0)


def test_a_short_prompt_step_lasts_its_layers_launches():
    eng = _trt()
    assert eng.eager_moe_layer_s > 0
    dep = _qwen235(eng)
    floor = eng.eager_moe_layer_s * dep.model.num_layers  # one pipeline stage: every (MoE) layer on every GPU
    cost = step_cost(dep, BatchShape.prefill(1, 128))
    assert cost.time_s == pytest.approx(floor, rel=1e-12)
    assert cost.bound == "overhead"  # the host's launches, not the GPU's work
    # the same prompt without the floor: well under it (what the simulator charged before)
    plain = step_cost(_qwen235(_off(eng)), BatchShape.prefill(1, 128))
    assert plain.time_s < 0.5 * floor


def test_decode_steps_replay_a_graph_and_long_prompts_outlast_the_floor():
    eng = _trt()
    dep = _qwen235(eng)
    floor = eng.eager_moe_layer_s * dep.model.num_layers
    assert step_cost(dep, BatchShape.decode(16, 1024)).time_s < floor  # one token a sequence: no floor
    plain = _off(eng)
    long_prompt = BatchShape.prefill(4, 8192)
    assert step_cost(_qwen235(plain), long_prompt).time_s > floor  # the GPU's work hides the launches
    assert step_cost(dep, long_prompt).time_s == step_cost(_qwen235(plain), long_prompt).time_s


def test_a_speculative_verification_replays_its_graph():
    """Verifying a few drafted tokens a sequence (MTP, EAGLE) is a generation step TensorRT-LLM captures in a CUDA
    graph like a decode: only a sequence with a prompt chunk (more than DECODE_QUERY_TOKENS tokens) makes the
    step eager."""
    from vazao.physics.step import DECODE_QUERY_TOKENS

    eng = _trt()
    dep = _qwen235(eng)
    floor = eng.eager_moe_layer_s * dep.model.num_layers
    q, n, ctx = 4, 16, 1024
    assert q <= DECODE_QUERY_TOKENS
    verify = BatchShape.from_sequences([(q, ctx, True)] * n)
    assert verify.new_tokens == q * n and verify.decode_pairs == verify.attention_pairs
    assert step_cost(dep, verify).time_s < floor
    chunk = BatchShape.from_sequences([(q, ctx, True)] * n + [(DECODE_QUERY_TOKENS + 1, 0, False)])
    assert step_cost(dep, chunk).time_s == pytest.approx(floor, rel=1e-12)


def test_a_pipeline_stage_launches_its_own_layers_only():
    eng = dataclasses.replace(_trt(), eager_step_layer_s=0.002)
    one = make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=2, tp=2, engine=eng)
    two = make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=2, tp=1, pp=2, engine=eng)
    assert one.consts.eager_floor_s == pytest.approx(0.002 * 80)
    assert two.consts.eager_floor_s == pytest.approx(0.002 * 40)


def test_the_simulators_timer_charges_the_same_floor():
    dep = _qwen235(_trt())
    timer = StepTimer(dep.consts)
    for n, new, ctx in ((1, 128, 0), (4, 4 * 512 + 12, 9000), (16, 16, 16 * 700), (2, 2 * 8192, 0)):
        shape = BatchShape(n, new, ctx, float(new * 10), n)
        assert timer.time(n, new, ctx, float(new * 10), n) == step_cost(dep, shape).time_s


@pytest.mark.parametrize("release", [(0, 14), (0, 17)])
def test_the_cpp_runtime_releases_have_no_floor(release):
    """0.14 and 0.17 ran TensorRT engines from the C++ executor: no Python between a step's kernels."""
    assert _trt(release).eager_step_layer_s == 0.0 and _trt(release).eager_moe_layer_s == 0.0


def test_a_fitted_profile_never_gives_the_cpp_releases_a_floor(tmp_path):
    """A profile written by a fit holds entries for the releases it saw and takes the base for the others: an
    older release than the executor's (engines.yaml eager_since_version) keeps no floor whatever the base has."""
    p = tmp_path / "fit.yaml"
    p.write_text("engines:\n  trtllm:\n    eager_step_layer_s: 0.002\n    versions:\n"
                 "    - {min_version: '1.0', max_version: 1.0.9999, compute_efficiency: 0.5}\n")
    eng = load_profiles(str(p))["trtllm"]
    assert eng.at_version((0, 14)).eager_step_layer_s == 0.0
    assert eng.at_version((0, 17)).eager_step_layer_s == 0.0
    assert eng.at_version((1, 0)).eager_step_layer_s == 0.002
    assert eng.at_version(None).eager_step_layer_s == 0.002  # a release not stated: the newest's


def test_a_malformed_first_eager_release_is_refused(tmp_path):
    from vazao.errors import VazaoError

    p = tmp_path / "p.yaml"
    p.write_text("engines:\n  trtllm:\n    eager_since_version: one point oh\n")
    with pytest.raises(VazaoError, match="eager_since_version"):
        load_profiles(str(p))


def test_the_physical_limit_and_the_other_engines_have_none():
    assert _trt().idealized().eager_step_layer_s == 0.0 and _trt().idealized().eager_moe_layer_s == 0.0
    for name in ("vllm", "sglang", "llama.cpp"):
        assert get_engine(name).eager_step_layer_s == 0.0 and get_engine(name).eager_moe_layer_s == 0.0


@pytest.mark.skipif(not SERVING.exists(), reason="shared/data is not beside this checkout")
def test_the_validator_no_longer_predicts_a_short_prompt_below_the_floor():
    """aic-00747: TensorRT-LLM 1.0.0rc3, Qwen3-235B-A22B FP8, 8 × H100, 512/128 tokens, 4 clients, TTFT 168.9 ms
    measured; without the floor the simulator gave 77 ms (−54%)."""
    from vazao.validate.predict import predict
    from vazao.validate.rows import read_rows

    rows, _ = read_rows(SERVING)
    row = next(r for r in rows if r.id == "aic-00747")
    assert row.metric == "ttft_ms" and row.value == pytest.approx(168.9, abs=0.1)
    got = predict(row).value
    assert abs(got - row.value) / row.value < 0.4
    assert got > 1.3 * 77


def test_the_estimate_names_the_floor_and_the_setting_without_it():
    from vazao.analytic import estimate

    est = estimate(_qwen235(_trt()), [1], 1024, 64)
    assert any("eager_moe_layer_s: 0" in n and "94 MoE layers" in n for n in est.kernel_notes)
    dense = make_deployment("llama-3.1-8b", "h100-sxm", engine=_trt())
    assert any("32 layers ×" in n for n in estimate(dense, [1], 1024, 64).kernel_notes)
    cpp = make_deployment("llama-3.1-8b", "h100-sxm", engine=_trt((0, 17)))
    assert not any("eager" in n for n in estimate(cpp, [1], 1024, 64).kernel_notes)


def test_each_release_entry_with_rows_carries_its_own_floor():
    """One floor per release entry and layer kind the serving file has rows for (bench/eager_floor_scan.py chooses
    each on its fitting-half rows): 1.1 (DeepSeek-R1/V3 on 8 H200, the experts split 8 ways: in
    published-serving.csv a TTFT of 455-973 ms at 1,024 prompt tokens and 4-64 clients, aic-02485, -02503, -02495,
    -02491, -02475, and 596 ms for 8,192 prompt tokens at 4 clients, aic-02489) has a MoE floor of its own, above
    1.0's and the base's; 1.2 and later, with no entry, run with the base's."""
    f10, f11, base = (_trt(r).eager_moe_layer_s for r in ((1, 0), (1, 1, 0), (1, 2, 0)))
    assert f11 > 2 * max(f10, base) and min(f10, base) > 0
    assert _trt((1, 1, 0)).eager_moe_layer_s == _trt((1, 1, 9)).eager_moe_layer_s
    assert _trt((1, 3, 0)).eager_moe_layer_s == base == _trt(None).eager_moe_layer_s
    # the 1.1 entry keeps every other value the base had when its floor was chosen: only the floor is its own
    # (serving_fit.py --release base writes an inheriting entry the values it ran with)
    assert _trt((1, 1, 0)).compute_efficiency > 0.5


def test_a_dense_layer_and_a_moe_layer_have_floors_of_their_own():
    """A MoE layer launches its router, top-k, token permutation, expert GEMMs and finalize besides what a dense
    layer launches: each kind has its own floor. DeepSeek-V3 has 3 dense layers and 58 MoE ones."""
    eng = dataclasses.replace(_trt(), eager_step_layer_s=0.001, eager_moe_layer_s=0.003)
    ds = make_deployment("deepseek-v3", "h200-sxm", "fp8", count=8, engine=eng, expert_parallel=8)
    assert ds.model.num_layers - ds.model.moe_layers == 3
    assert ds.consts.eager_floor_s == pytest.approx(0.001 * 3 + 0.003 * 58)
    dense = make_deployment("llama-3.1-70b", "h200-sxm", "fp8", count=8, tp=8, engine=eng)
    assert dense.consts.eager_floor_s == pytest.approx(0.001 * 80)
    assert _qwen235(eng).consts.eager_floor_s == pytest.approx(0.003 * 94)


def test_the_base_floors_a_moe_layer_and_not_a_dense_one():
    """The base's rows (releases without an entry of their own) ask for no dense floor and a MoE one
    (bench/results/eager_floor_scan.json): TensorRT-LLM serving Llama-3.1-70B FP8 on 8 H200 measured a TTFT of
    68.7 ms at 4 clients of 1,024 prompt tokens (published-serving.csv aic-04335), under the 80 layers' launches at
    any floor above 0.86 ms a layer, where gpt-oss-120b's MoE rows ask for 1.4 ms."""
    base = _trt(None)
    assert base.eager_step_layer_s * 80 < 0.0687 and base.eager_moe_layer_s > 0.001
