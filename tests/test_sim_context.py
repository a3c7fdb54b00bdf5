"""Issue 20, points 6 and 7: a slot's context is what the workload needs, and "chunked prefill off"
is what an engine does without chunking.

Point 6: llama.cpp reserved the model's 131,072 tokens per slot, so `vazao simulate llama-3.1-8b --gpu
rtx-3060 -f q4_k_m -e llama.cpp -w chat -c 4` exited 2 ("not even one request fits"). A reserved layout
is sized to the workload's longest request. Point 7: "off" kept the chunked default's 8,192-token step
budget below rag's 16k prompts, so a long prompt waited until nothing decoded (TTFT 67 s against 163
ms); vLLM requires max_num_batched_tokens >= max_model_len when chunked prefill is off
(vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len)."""

from __future__ import annotations

from vazao.physics.deployment import make_deployment
from vazao.sim import SimConfig, simulate
from vazao.sim.run import resolve_config
from vazao.workload import context_for, load_workload, longest_request


def test_support_needs_its_last_turn():
    # examples/support.yaml (seed 004): 6,000-token prefix and 8 turns of 300 in / 250 out; turn 8 ends at
    # 6,000 + 8 × 550 = 10,400 tokens, rounded up to 256 → 10,496.
    w = load_workload("support")
    assert longest_request(w) == 10_400
    assert context_for(w, 131_072) == 10_496
    assert context_for(w, 8_192) == 8_192  # never past the model's own context


def test_chat_on_one_rtx_3060_serves_four_users_with_llama_cpp():
    dep = make_deployment("llama-3.1-8b", "rtx-3060", "q4_k_m", engine="llama.cpp")
    w = load_workload("chat", concurrency=4, requests=200)
    cfg = resolve_config(dep, w)
    assert cfg.kv_layout == "reserved" and cfg.max_context == context_for(w, 131_072)
    assert cfg.max_context < 16_384  # chat's longest request (6,000-token prompt max + 200 + 2,000 answer max)
    r = simulate(dep, w)
    assert r.completed == 200 and r.errors == 0
    assert r.peak_running == 4  # the four users are served together, not one at a time
    assert "tokens per sequence" in r.config


def test_chunked_prefill_off_takes_long_prompts_whole_alongside_decodes():
    dep = make_deployment("llama-3.1-8b", "h100-sxm", "bf16")
    w = load_workload("rag", rate=4, requests=300)
    on = simulate(dep, w, SimConfig.from_engine(dep.engine, chunked_prefill=True))
    off = simulate(dep, w, SimConfig.from_engine(dep.engine, chunked_prefill=False))
    wide = simulate(dep, w, SimConfig.from_engine(dep.engine, chunked_prefill=False, max_num_batched_tokens=16384))
    # Before the fix "off" served 1.8 of the offered 3.7 req/s with a TTFT p95 of 144 s.
    assert off.summary.ttft_s.p95 < 3 * on.summary.ttft_s.p95
    assert off.summary.output_tokens_per_s > 0.9 * on.summary.output_tokens_per_s
    # the budget is raised to the max context either way, so naming a larger one changes nothing
    assert wide.summary.ttft_s.p95 == off.summary.ttft_s.p95
