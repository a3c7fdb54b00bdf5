"""The closed-form decode advance (sim/fastpath.py) is exact: every record, gap and summary equals the
step-by-step loop's, across the scheduler's features. Each case also checks that the closed form ran."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vazao.catalog.models import get_model
from vazao.physics.deployment import make_deployment
from vazao.physics.profiles import get_engine
from vazao.sim import SimConfig, SpecConfig, fastpath, simulate
from vazao.sim.loop import Runner
from vazao.workload import load_workload


def _run(dep, w, cfg, closed_form: bool, monkeypatch) -> tuple:
    advanced = []
    real = fastpath.advance

    def counting(e, end, top, next_sample):
        a0 = e.cohort.A
        out = real(e, end, top, next_sample)
        if out is not None:
            advanced.append(e.cohort.A - a0)
        return out

    monkeypatch.setattr(Runner, "closed_form", closed_form)
    monkeypatch.setattr(fastpath, "advance", counting)
    r = simulate(dep, w, cfg)
    sim = {k: v for k, v in r.to_json().items() if k != "wall_s"}
    recs = [(x.request_id, x.arrival_s, x.first_token_s, x.end_s, tuple(x.itl_s), x.cached_prompt_tokens, x.error,
             dict(x.extra)) for x in r.records(include_warmup=True)]
    return sim, r.summary, recs, sum(advanced)


H100 = ("llama-3.1-8b", "h100-sxm")
CASES = {
    # name: (model, gpu, workload, overrides of the workload, SimConfig overrides[, make_deployment keywords])
    "chat-own-rate": (*H100, "chat", {"requests": 400}, {}),
    "chat-closed-loop": (*H100, "chat", {"requests": 400, "concurrency": 32}, {}),
    "agent-prefix-cache": (*H100, "agent", {"requests": 300}, {}),
    "rag-chunked-small-budget": (*H100, "rag", {"requests": 200}, {"max_num_batched_tokens": 512}),
    "rag-whole-prefills": (*H100, "rag", {"requests": 200}, {"chunked_prefill": False}),
    "support-reserved": (*H100, "support", {"requests": 200}, {"kv_layout": "reserved", "max_context": 16384}),
    "chat-static": (*H100, "chat", {"requests": 300, "concurrency": 16}, {"scheduler": "static"}),
    "chat-guaranteed": (*H100, "chat", {"requests": 300}, {"admission": "guaranteed"}),
    "chat-spec": (*H100, "chat", {"requests": 200}, {"spec": SpecConfig(4, 0.7)}),
    "chat-block-64": (*H100, "chat", {"requests": 300}, {"block_size": 64, "max_num_seqs": 8}),
    # 384 at once overflow an L4's 24 GiB of KV (256 preempt too, but never settle into a stretch)
    "batch-preemption": ("llama-3.1-8b", "l4", "batch", {"requests": 400, "concurrency": 384}, {}),
    "moe-tp2-trtllm": ("mixtral-8x7b", "h100-sxm", "chat", {"requests": 200}, {},
                       {"count": 2, "tp": 2, "engine": "trtllm"}),
    "moe-sglang": ("qwen3-30b-a3b", "h100-sxm", "agent", {"requests": 200}, {}, {"engine": "sglang"}),
    # sliding windows: steps whose mean context is under the window take the scalar min(), the rest the arrays
    "sliding-window": ("gemma-2-9b", "h100-sxm", "chat", {"requests": 200}, {}),
    # gpt-oss: a 128-token window on half its layers, routed experts, a closed loop past the window
    "sliding-window-moe-closed-loop": ("gpt-oss-120b", "h200-sxm", "chat", {"requests": 160, "concurrency": 16},
                                       {}, {"engine": "trtllm", "count": 2, "tp": 2}),
    # a completion inside a stretch sends the next request through the runner's ENQUEUE event
    "closed-loop-request-overhead": (*H100, "chat", {"requests": 300, "concurrency": 8}, {},
                                     {"engine": get_engine("vllm").overridden(request_overhead_s=0.004)}),
    # conversations: a finished turn parks its next one behind a think time (an event inside the stretch)
    "support-turns-own-rate": (*H100, "support", {"requests": 300}, {}),
    # a closed loop where some requests are refused on arrival (longer than max_context): the refusal
    # sends the next one at once, stamped with the runner's clock, from inside a stretch
    "closed-loop-refusals": (*H100, "chat", {"requests": 300, "concurrency": 8}, {"max_context": 700}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_closed_form_equals_step_by_step(name, monkeypatch):
    model, gpu, wname, wover, over, *dep_kw = CASES[name]
    dep = make_deployment(get_model(model), gpu, "bf16", **(dep_kw[0] if dep_kw else {}))
    w = load_workload(wname, **wover)
    cfg = replace(SimConfig.from_engine(dep.engine), **over)
    slow = _run(dep, w, cfg, False, monkeypatch)
    fast = _run(dep, w, cfg, True, monkeypatch)
    assert slow[3] == 0
    assert fast[:3] == slow[:3]
    # speculative steps draw their advance at random: step by step
    if over.get("spec") is None:
        assert fast[3] > 0, "the closed form never ran: the case tests nothing"
    if name == "batch-preemption":
        assert slow[0]["preemptions"] > 0
