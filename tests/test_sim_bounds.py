"""Bounds and bad configurations: say so instead of hanging; flat memory; every strategy combination
finishes every request and gives back every block."""

from __future__ import annotations

import gc
import itertools

import pytest

from vazao.catalog.models import get_model
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.sim import DisaggConfig, SimConfig, SpecConfig, simulate
from vazao.sim.scheduler import Scheduler
from vazao.sim.sequence import Seq
from vazao.workload import load_workload, workload_from_dict


@pytest.fixture(scope="module")
def h100_8b():
    return make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")


def test_reserved_layout_that_cannot_hold_one_request_says_so():
    dep = make_deployment(get_model("llama-3.1-8b"), "l4", "bf16")
    with pytest.raises(VazaoError, match="not even one request fits; lower max_context"):
        simulate(dep, load_workload("chat", requests=5),
                 SimConfig.from_engine(dep.engine, kv_layout="reserved", max_context=131072))
    r = simulate(dep, load_workload("chat", requests=20),
                 SimConfig.from_engine(dep.engine, kv_layout="reserved", max_context=8192))
    assert r.completed == 20


def test_weights_that_do_not_fit_say_so():
    dep = make_deployment(get_model("llama-3.1-70b"), "h100-sxm", "bf16")
    with pytest.raises(VazaoError, match="weights need .* GB per GPU"):
        simulate(dep, load_workload("chat", requests=5))


def test_requests_too_large_for_the_kv_cache_fail_alone_under_a_context_the_cache_holds():
    """One L4 holds ~40k tokens of Llama-3.1-8B's KV. Set to the workload's longest request (60k), the engine would
    not start (vLLM: vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory), so neither does the run; set to
    a context the cache holds, the longer requests fail alone, as an engine answers them (HTTP 400)."""
    dep = make_deployment(get_model("llama-3.1-8b"), "l4", "bf16")
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 2},
                            "prompt": {"dist": "empirical", "values": [100, 60_000]}, "output": 10, "requests": 40})
    with pytest.raises(VazaoError, match="would not start: one sequence of max_context = 60,160 tokens"):
        simulate(dep, w)
    r = simulate(dep, w, SimConfig.from_engine(dep.engine, max_context=32_768))
    assert r.errors > 0 and r.completed + r.errors == 40
    bad = [x for x in r.records() if x.error]
    assert all(x.prompt_tokens == 60_000 and not x.ok and "exceeds the max context" in x.error for x in bad)


def test_a_failed_turn_ends_its_conversation(h100_8b):
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 1}, "prompt": 3000, "output": 500,
                            "conversation": {"turns": 5}, "requests": 10})
    r = simulate(h100_8b, w, SimConfig.from_engine(h100_8b.engine, max_context=8192))
    # turns: 3,000 / 6,500 / 10,000 tokens: the third is refused, the rest of the conversation never sent
    assert (r.completed, r.errors) == (4, 2) and r.unfinished == 4
    assert all("exceeds the max context of 8,192" in x.error for x in r.records() if x.error)


def test_an_arrival_rate_far_above_capacity_stops_at_a_bound(h100_8b):
    w = load_workload("chat", requests=5000, rate=10_000)
    r = simulate(h100_8b, w, SimConfig.from_engine(h100_8b.engine, max_waiting=300))
    assert any("far above what it serves" in x for x in r.warnings)
    assert r.unfinished > 0 and r.completed + r.unfinished == 5000
    assert r.summary.requests == r.completed  # the summary covers what was measured


def test_closed_loop_with_a_duration_stops_sending(h100_8b):
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 4}, "prompt": 200, "output": 100,
                            "duration_s": 5})
    r = simulate(h100_8b, w)
    assert r.completed > 4 and max(x.arrival_s for x in r.records()) < 5


def test_memory_stays_flat(h100_8b):
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 64}, "prompt": 100,
                            "output": 2000, "requests": 256})
    r = simulate(h100_8b, w)
    stats = r._stats
    tokens = sum(x.output_tokens for x in r.records())
    held = sum(len(t) for t in stats.tracks)
    assert held <= r.steps + r.preemptions  # one gap per decode step, shared by its batch, not one per token
    assert held * 50 < tokens
    assert all(len(x.itl_s.windows) <= 3 * (1 + 2 * x.extra.get("preemptions", 0)) for x in r.records())
    assert len(r.timeline) <= 2 * 256 + 1
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, Seq)]  # no request outlives the run


def test_replicas_share_the_load_and_keep_conversations_together():
    one = make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")
    two = make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16", count=2, tp=1)
    w = load_workload("support", requests=160, rate=0.5)
    r1, r2 = simulate(one, w), simulate(two, w)
    assert r2.completed == r1.completed == 160
    assert r2.cache_hit_share == pytest.approx(r1.cache_hit_share, abs=0.02)  # turns follow their history
    busy = load_workload("chat", requests=3000, concurrency=1000)
    s1, s2 = simulate(one, busy).summary, simulate(two, busy).summary
    assert 1.6 < s2.output_tokens_per_s / s1.output_tokens_per_s <= 2.02  # two engines (less their drain tails)


@pytest.mark.parametrize("batching,kv,spec,prefix", list(itertools.product(
    ["static", "continuous"], ["paged", "reserved"], [None, SpecConfig(3, 0.7)], [True, False])))
def test_every_strategy_finishes_every_request_and_frees_every_block(h100_8b, batching, kv, spec, prefix):
    w = load_workload("agent", requests=60, rate=4)
    cfg = SimConfig.from_engine(h100_8b.engine, scheduler=batching, kv_layout=kv, spec=spec, prefix_caching=prefix,
                                max_context=32_768, block_size=16)
    r = simulate(h100_8b, w, cfg)
    assert (r.completed, r.errors, r.unfinished) == (60, 0, 0)
    assert r.kv_blocks_in_use_at_end == 0
    assert r.summary.output_tokens == sum(x.output_tokens for x in r.records())


def test_preemption_under_memory_pressure_still_finishes_everything():
    dep = make_deployment(get_model("llama-2-13b"), "a100-sxm-40gb", "fp16")
    w = load_workload("chat", requests=300, concurrency=200)
    r = simulate(dep, w, SimConfig.from_engine(dep.engine, max_context=4096))
    assert r.preemptions > 0 and r.completed + r.errors == 300 and r.kv_blocks_in_use_at_end == 0
    assert all("exceeds the max context of 4,096" in x.error for x in r.records() if x.error)
    assert any(p.preemptions for p in r.timeline)
    assert sum(x.extra.get("preemptions", 0) for x in r.records()) == r.preemptions


def test_disaggregated_run_moves_every_request(h100_8b):
    two = make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16", count=3, tp=1)
    cfg = SimConfig.from_engine(two.engine, disagg=DisaggConfig(1, 2, link_bytes_per_s=10e9))
    r = simulate(two, load_workload("rag", requests=80, rate=2), cfg)
    assert r.completed == 80 and r.kv_blocks_in_use_at_end == 0
    fast = simulate(two, load_workload("rag", requests=80, rate=2),
                    SimConfig.from_engine(two.engine, disagg=DisaggConfig(1, 2, link_bytes_per_s=1e12)))
    # a slower link delays each request's second token by its transfer: prompt × KV bytes per token / link
    recs = r.records()
    transfer = sum(x.prompt_tokens * 131_072 / 10e9 for x in recs) / len(recs)  # Llama-3.1-8B: 128 KiB/token
    assert r.summary.e2e_s.mean - fast.summary.e2e_s.mean == pytest.approx(transfer, rel=0.25)
    assert r.summary.ttft_s.p50 == pytest.approx(fast.summary.ttft_s.p50, rel=1e-9)  # the first token is not delayed


def test_a_waiting_requests_remembered_lookup_changes_nothing(monkeypatch):
    """A preempted lone request that waits for memory looks its own blocks up once (Scheduler._hits
    memoizes the lookup on the request, Engine.admit drops it); after evictions its run of hits is cut at the
    first block they took (the pool's eviction log: here 7,242 times). The same closed loop with every lookup
    made afresh gives every record the same."""
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 256}, "prompt": 2000,
                            "output": 1500, "requests": 300})
    dep = make_deployment(get_model("llama-3.1-8b"), "l4", "bf16")
    cfg = SimConfig.from_engine(dep.engine, max_context=4096)
    memo = simulate(dep, w, cfg)
    assert memo.preemptions > 0

    def afresh(self, seq, target):  # _hits without memos (this workload has no shared prefix)
        pool, bs = self.e.pool, self.e.bs
        limit = min(seq.keyable_blocks(target, bs), (target - 1) // bs)
        return pool.match(seq.keys(limit, bs)) if limit > 0 else []

    monkeypatch.setattr(Scheduler, "_hits", afresh)
    plain = simulate(dep, w, cfg)
    assert plain.summary == memo.summary and plain.preemptions == memo.preemptions
    assert [(x.request_id, x.ttft_s, x.e2e_s) for x in plain.records()] == [
        (x.request_id, x.ttft_s, x.e2e_s) for x in memo.records()]
