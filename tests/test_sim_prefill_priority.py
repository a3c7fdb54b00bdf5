"""Issue 21: SGLang runs a new prefill batch before the running decode batch whenever one can be formed
(python/sglang/srt/managers/scheduler.py, Scheduler.get_next_batch_to_run; --enable-mixed-chunk off by
default), so a closed loop of uniform requests stays in step: a round's prompts are all prefilled before
any of them decodes, and the whole round ends together. vLLM decodes first and fills the step budget with
prompt chunks, so the round's first prompts finish first. On the serving file this is what took SGLang's
TTFT from a median 69% under to 13% (bench/results/validate.json)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vazao.physics.deployment import make_deployment
from vazao.sim import SimConfig, simulate
from vazao.workload import workload_from_dict


def _round(concurrency: int, prompt: int, output: int, rounds: int):
    return workload_from_dict({"name": "closed", "arrival": {"kind": "concurrency", "concurrency": concurrency},
                               "prompt": prompt, "output": output, "requests": concurrency * rounds, "seed": 1})


@pytest.fixture(scope="module")
def dep():
    return make_deployment("llama-3.1-8b", "h100-sxm", "bf16", engine="sglang")


def test_sglang_profile_runs_prefill_first(dep):
    assert dep.engine.prefill_priority
    assert SimConfig.from_engine(dep.engine).prefill_priority
    assert not make_deployment("llama-3.1-8b", "h100-sxm", "bf16", engine="vllm").engine.prefill_priority


def test_a_round_is_prefilled_before_it_decodes_and_ends_together(dep):
    # 16 prompts of 4,096 tokens and an 8,192-token budget: 8 prompt-only steps, then one decode batch (the
    # clients sending at one instant: no reaction time, which would start the first prompt alone)
    w = _round(16, 4096, 64, 1)
    together = replace(SimConfig.from_engine(dep.engine), client_reaction_s=0.0)
    first = simulate(dep, w, together).records()
    ends = [r.end_s for r in first]
    firsts = sorted(r.first_token_s for r in first)
    assert max(ends) - min(ends) < 1e-9
    assert len({round(t, 12) for t in firsts}) == 8  # two prompts a step
    mixed = simulate(dep, w, replace(together, prefill_priority=False)).records()
    assert max(r.end_s for r in mixed) - min(r.end_s for r in mixed) > 1e-3


def test_decoders_gaps_span_the_prompt_steps_they_waited_through(dep):
    # every request's own gaps add up to its time from first to last token, whatever it waited through
    w = _round(12, 3000, 40, 3)
    recs = simulate(dep, w, SimConfig.from_engine(dep.engine)).records()
    assert len(recs) == 36
    for r in recs:
        gaps = list(r.itl_s)
        assert len(gaps) == r.output_tokens - 1
        assert sum(gaps) == pytest.approx(r.end_s - r.first_token_s, rel=1e-9, abs=1e-12)


def test_a_prompt_arriving_mid_decode_pauses_the_decoders(dep):
    # two clients out of phase: the second's prompts arrive while the first decodes, and with prefill
    # first the first's token gap around that moment is a whole prompt step long
    w = workload_from_dict({"name": "two", "arrival": {"kind": "poisson", "rate": 40.0}, "prompt": 8000,
                            "output": 200, "requests": 6, "seed": 3})
    on = simulate(dep, w, SimConfig.from_engine(dep.engine)).records()
    off = simulate(dep, w, replace(SimConfig.from_engine(dep.engine), prefill_priority=False)).records()
    assert max(max(r.itl_s) for r in on) > max(max(r.itl_s) for r in off)
    for r in on:
        assert sum(r.itl_s) == pytest.approx(r.end_s - r.first_token_s, rel=1e-9, abs=1e-12)
