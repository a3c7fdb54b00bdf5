"""The seeds' serving claims, reproduced by the simulator on explicit workloads (with tolerances).

Seed 000 (000_9652c48a9e6fbd49.txt): continuous batching, "um ganho de até 23x em throughput sobre
batching ingênuo" (Anyscale). Seed 004 (004_9706bef9153e5571.txt): PagedAttention "melhorou a vazão
de 2 a 4 vezes com a mesma latência" (Kwon et al., SOSP 2023); speculative decoding "acelerações de
duas a três vezes" (Leviathan et al.); a 6,000-token system prompt over 8 turns of 300 in / 250 out;
"cerca de 11 conversas de 128.000 tokens" on eight 80 GB GPUs.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from vazao.catalog.hardware import get_accelerator
from vazao.catalog.models import get_model
from vazao.physics.deployment import make_deployment
from vazao.physics.memory import fit
from vazao.physics.step import BatchShape, step_cost
from vazao.sim import SimConfig, SpecConfig, compare, simulate
from vazao.sim.speculative import expected_tokens
from vazao.units import GB
from vazao.workload import load_workload, workload_from_dict


@pytest.fixture(scope="module")
def h100_8b():
    return make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")


# ---- seed 000: continuous vs static batching --------------------------------------------------
def test_continuous_batching_multiplies_throughput_on_widely_varying_outputs(h100_8b):
    w = workload_from_dict({
        "arrival": {"kind": "concurrency", "concurrency": 1024},  # a full queue: throughput is what counts
        "prompt": {"dist": "lognormal", "median": 300, "sigma": 0.6, "max": 2000},
        "output": {"dist": "lognormal", "median": 100, "sigma": 1.2, "max": 2048},  # a long tail
        "requests": 1500, "warmup": 300, "seed": 1})
    cfg = SimConfig.from_engine(h100_8b.engine, max_context=4096)
    static, cont = compare(h100_8b, w, cfg, [("batching", ["static", "continuous"])])
    # the scheduler alone, everything else equal: a static batch idles while its longest member runs
    assert cont.throughput_ratio >= 2.5, cont.throughput_ratio
    assert static.result.mean_batch < 0.5 * cont.result.mean_batch
    # the whole naive stack (static batches, max-length reservation, eager kernels) against vLLM:
    # the seed's "up to 23×" is of this kind; here it is a multiple of the same order or more
    naive, vllm = compare(h100_8b, w, cfg, [("engine", ["naive", "vllm"])])
    assert vllm.throughput_ratio >= 10, vllm.throughput_ratio


# ---- seed 004: PagedAttention vs max-length reservation ---------------------------------------
@pytest.fixture(scope="module")
def a100_13b():
    # the vLLM paper's setting: a 13B model on one A100-40GB, sequences up to 2,048 tokens
    return make_deployment(get_model("llama-2-13b"), "a100-sxm-40gb", "fp16")


SHAREGPT_LIKE = {"prompt": {"dist": "lognormal", "median": 250, "sigma": 0.8, "max": 1024},
                 "output": {"dist": "lognormal", "median": 200, "sigma": 0.8, "max": 1024}, "seed": 3}


def test_paged_kv_holds_more_sequences_and_serves_2_to_4x(a100_13b):
    w = workload_from_dict({**SHAREGPT_LIKE, "arrival": {"kind": "concurrency", "concurrency": 300},
                            "requests": 1200, "warmup": 200})
    cfg = SimConfig.from_engine(a100_13b.engine, max_context=2048)
    reserved, paged = compare(a100_13b, w, cfg, [("kv", ["reserved", "paged"])])
    # 40 GiB (nvidia-smi 40960 MiB: modal-labs/modal-client PR #2797) × 0.9 − 26.0 GB of weights − 1.8 GB of
    # runtime leave 10.8 GB: six 2,048-token reservations of 1.68 GB
    assert reserved.result.peak_running == fit(a100_13b, 2048).max_concurrent_sequences == 6
    assert paged.result.mean_batch >= 2 * reserved.result.mean_batch
    assert 2.0 <= paged.throughput_ratio <= 4.0, paged.throughput_ratio


def test_paged_kv_sustains_a_higher_rate_at_the_same_latency(a100_13b):
    cfg = SimConfig.from_engine(a100_13b.engine, max_context=2048)

    def normalized_latency(layout: str, rate: float) -> float:  # the vLLM paper's s/token
        w = workload_from_dict({**SHAREGPT_LIKE, "arrival": {"kind": "poisson", "rate": rate},
                                "requests": 300, "warmup": 50})
        s = simulate(a100_13b, w, SimConfig(**{**cfg.__dict__, "kv_layout": layout})).summary
        return s.e2e_s.mean / (s.output_tokens / s.requests)

    floor = normalized_latency("paged", 0.1)
    limit = 2 * floor
    rates = (0.5, 0.7, 1.0, 1.4)
    sustained = {layout: max((r for r in rates if normalized_latency(layout, r) <= limit), default=0.0)
                 for layout in ("reserved", "paged")}
    assert sustained["reserved"] == 0.7 and sustained["paged"] == 1.4  # six reservations of 40 GiB, not four
    assert 2 <= sustained["paged"] / sustained["reserved"] <= 4


# ---- seed 004: a 6,000-token system prompt, 8 turns ----------------------------------------------
def support_cached_tokens(block: int = 16) -> list[int]:
    """Prompt tokens a warm prefix cache serves per turn: the previous turn's prompt and reply, in
    whole blocks (its last token never entered the cache), and turn 1 the shared prefix."""
    out, prev_kv = [], 0
    for turn in range(1, 9):
        prompt = 6000 + 300 * turn + 250 * (turn - 1)
        cached = 6000 if turn == 1 else prev_kv // block * block
        out.append(min(cached, (prompt - 1) // block * block))
        prev_kv = prompt + 250 - 1
    return out


def test_prefix_cache_turns_the_system_prompt_into_a_rounding_error(h100_8b):
    w = load_workload("support", concurrency=1, requests=40)  # 5 conversations one after another
    on = simulate(h100_8b, w)
    off = simulate(h100_8b, w, SimConfig.from_engine(h100_8b.engine, prefix_caching=False))
    recs_on = on.records()
    assert [r.prompt_tokens for r in recs_on[:8]] == [6300, 6850, 7400, 7950, 8500, 9050, 9600, 10150]
    assert sum(r.prompt_tokens for r in recs_on[:8]) == 65_800  # seed 004
    # conversations 2..5 find the prefix warm: exactly the blocks of the repeated text are served
    expected = support_cached_tokens()
    for c in range(1, 5):
        assert [r.cached_prompt_tokens for r in recs_on[8 * c: 8 * c + 8]] == expected
    share = on.cache_hit_share
    assert share > 0.94  # 1 − 300 new tokens per turn, less the first conversation's cold prefix
    # prefill work drops by exactly the cached share
    assert off.prefill_tokens == off.prompt_tokens
    assert on.prefill_tokens == on.prompt_tokens - on.cached_prompt_tokens
    # TTFT: each turn's prefill now covers only the new user message (one step, priced by step_cost)
    for r in recs_on[8:]:
        shape = BatchShape.from_sequences([(r.prompt_tokens - r.cached_prompt_tokens, r.cached_prompt_tokens)])
        expected = step_cost(h100_8b, shape).time_s + h100_8b.engine.request_overhead_s  # + the per-request cost
        assert r.ttft_s == pytest.approx(expected, rel=1e-9)
    drop = on.summary.ttft_s.mean / off.summary.ttft_s.mean
    # no lower than the uncached share: a small prefill still reads all the weights once
    assert 1 - share <= drop <= 0.15, drop


def test_prefix_only_cache_matches_the_seed_arithmetic(h100_8b, tmp_path):
    """Seed 004 caches only the 6,000-token prefix: with a warm cache, 8 × 6,000 of the 65,800 input
    tokens are reads (the seed's first turn writes it: 7 × 6,000)."""
    rows = ["timestamp,prompt_tokens,output_tokens"]
    for c in range(4):
        for turn in range(1, 9):
            rows.append(f"{c * 100 + turn * 10},{300 * turn + 250 * (turn - 1)},250")
    trace = tmp_path / "support-trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    w = workload_from_dict({"arrival": {"kind": "trace", "file": str(trace)}, "prompt": 1, "output": 1,
                            "prefixes": [{"id": "support-policy", "tokens": 6000, "share": 1.0}]})
    r = simulate(h100_8b, w)
    recs = r.records()
    assert sum(x.prompt_tokens for x in recs[:8]) == 65_800
    first = recs[:8]
    assert [x.cached_prompt_tokens for x in first] == [0] + [6000] * 7  # the first turn writes it
    warm = recs[8:16]
    assert sum(x.cached_prompt_tokens for x in warm) / sum(x.prompt_tokens for x in warm) == \
        pytest.approx(48_000 / 65_800)


# ---- seed 004: speculative decoding ------------------------------------------------------------
def test_leviathan_expected_tokens():
    assert expected_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2) == pytest.approx(3.3616)
    assert expected_tokens(1.0, 4) == 5 and expected_tokens(0.0, 4) == 1


@pytest.mark.parametrize("draft", [None, "llama-3.2-1b"])
def test_speculative_decoding_2_to_3x_at_batch_1_shrinking_with_batch(h100_8b, draft):
    spec = SpecConfig(4, 0.8, get_model(draft) if draft else None)

    def tpot(concurrency: int, with_spec: bool) -> float:
        w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": concurrency},
                                "prompt": 500, "output": 300, "requests": 2 * concurrency})
        cfg = SimConfig.from_engine(h100_8b.engine, spec=spec if with_spec else None)
        return simulate(h100_8b, w, cfg).summary.tpot_s.mean

    gains = {b: tpot(b, False) / tpot(b, True) for b in (1, 32, 256)}
    assert 2.0 <= gains[1] <= 3.0, gains  # Leviathan et al.'s 2-3x (seed 004), at batch 1
    assert gains[1] > gains[32] > gains[256], gains
    # verifying 5 tokens × 256 sequences is compute-bound where one token each is not, so the gain falls out of
    # the seed's 2-3x: what speculation buys at batch 1 it does not at a full batch
    verify = step_cost(h100_8b, BatchShape.from_sequences([(5, 650)] * 256))
    plain = step_cost(h100_8b, BatchShape.from_sequences([(1, 650)] * 256))
    assert verify.bound == "compute" and plain.bound == "memory"
    assert gains[256] < 2.0, gains


# ---- seed 004: the KV cache sets the batch ceiling ----------------------------------------------
@pytest.mark.parametrize("model,count", [("llama-3.1-8b", 1), ("llama-3.1-70b", 8)])
def test_128k_conversations_stall_at_the_fit_capacity(model, count):
    dep = make_deployment(get_model(model), "h100-sxm", "bf16", count=count)
    capacity = fit(dep, 128_000).max_concurrent_sequences
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": capacity + 4},
                            "prompt": 127_000, "output": 1000, "requests": capacity + 4})
    r = simulate(dep, w)
    assert r.peak_running == capacity
    assert max(p.waiting for p in r.timeline) > 0  # the rest queue: admission stalls
    assert r.errors == 0 and r.completed == capacity + 4


def test_seed_004_eleven_128k_conversations_on_eight_gpus():
    # the seed's illustrative "oito GPUs de 80 GB" count 80e9 bytes each: "cerca de 11 conversas"
    decimal = replace(get_accelerator("h100-sxm"), memory_bytes=80 * GB)
    dep = make_deployment(get_model("llama-3.1-70b"), decimal, "bf16", count=8, ideal=True)
    assert fit(dep, 128_000).max_concurrent_sequences == 11
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 14}, "prompt": 127_000,
                            "output": 1000, "requests": 14})
    assert simulate(dep, w).peak_running == 11
    # a real H100's 80 is GiB (nvidia-smi 81559 MiB, NVIDIA/nccl issue #1264): 546 GB hold 13 of 41.9 GB
    real = make_deployment(get_model("llama-3.1-70b"), "h100-sxm", "bf16", count=8, ideal=True)
    assert fit(real, 128_000).max_concurrent_sequences == 13
    assert simulate(real, w).peak_running == 13
