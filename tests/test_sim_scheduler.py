"""Exact small tests of the scheduler and the decode cohort on an engine with a hand-sized KV pool."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vazao.catalog.models import get_model
from vazao.physics.deployment import make_deployment
from vazao.physics.step import BatchShape, step_cost
from vazao.sim.cohort import DecodeCohort
from vazao.sim.config import SimConfig
from vazao.sim.engine import Engine
from vazao.sim.sequence import Seq
from vazao.sim.stats import Stats


@pytest.fixture(scope="module")
def dep():
    return make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")


class Sink:
    def __init__(self):
        self.finished: list[tuple[str, float]] = []

    def on_finish(self, engine, seq, now):
        self.finished.append((seq.rid, now))

    def on_handoff(self, engine, seq, now):  # pragma: no cover - not disaggregated here
        raise AssertionError


def engine(dep, blocks: int, max_context: int = 4096, **cfg) -> Engine:
    return Engine(dep, SimConfig(**cfg), blocks, max_context, Stats(), Sink())


def seq(rid: str, prompt: int, output: int, prefix: tuple[str, int] | None = None) -> Seq:
    pid, ptok = prefix or (None, 0)
    return Seq(rid, int(rid), 0.0, prompt, output, pid, ptok, None, True)


def step(e: Engine, t: float) -> float | None:
    dur = e.begin_step(t)
    if dur is None:
        return None
    e.end_step(t + dur)
    return t + dur


def drain(e: Engine, t: float = 0.0) -> float:
    while (nxt := step(e, t)) is not None:
        t = nxt
    return t


def test_chunked_prefill_respects_the_token_budget_oldest_first(dep):
    e = engine(dep, 100, max_num_batched_tokens=100, block_size=16)
    a, b = seq("0", 150, 3), seq("1", 50, 3)
    e.waiting.extend([a, b])
    e.begin_step(0.0)
    assert [(s.rid, n) for s, n in e.chunks] == [("0", 100)]
    e.end_step(1.0)
    assert a.computed == 100 and a.emitted == 0
    e.begin_step(1.0)
    assert [(s.rid, n) for s, n in e.chunks] == [("0", 50), ("1", 50)]
    e.end_step(2.0)
    assert (a.emitted, b.emitted) == (1, 1) and a.first_s == 2.0
    e.begin_step(2.0)
    assert e.chunks == [] and e.cohort.n == 2  # both decode together
    assert drain(e, 2.0) > 2.0
    assert [rid for rid, _ in e.sink.finished] == ["0", "1"]
    assert e.pool.num_used == 0


def test_whole_prefills_without_chunking_wait_for_a_step_with_room(dep):
    # max_context 100: without chunking the step budget is at least the max context (vLLM's rule)
    e = engine(dep, 100, max_context=100, max_num_batched_tokens=100, chunked_prefill=False)
    e.waiting.extend([seq("0", 80, 2), seq("1", 60, 2)])
    e.begin_step(0.0)
    assert [(s.rid, n) for s, n in e.chunks] == [("0", 80)]  # 60 more would pass the budget
    e.end_step(1.0)
    e.begin_step(1.0)
    assert [(s.rid, n) for s, n in e.chunks] == [("1", 60)]


def test_max_num_seqs_holds_the_queue(dep):
    e = engine(dep, 100, max_num_seqs=2)
    e.waiting.extend([seq("0", 10, 2), seq("1", 10, 5), seq("2", 10, 2)])
    e.begin_step(0.0)
    assert [s.rid for s, _ in e.chunks] == ["0", "1"] and [s.rid for s in e.waiting] == ["2"]
    e.end_step(1.0)
    t = step(e, 1.0)  # decode: 0 emits its 2nd and last token; its slot frees at the step's end
    assert e.sink.finished[0][0] == "0" and [s.rid for s in e.waiting] == ["2"]
    e.begin_step(t)
    assert [s.rid for s, _ in e.chunks] == ["2"] and e.cohort.n == 1  # beside 1's decode


def test_paged_pool_preempts_the_last_admitted_and_recomputes(dep):
    # 6 blocks of 4 tokens; two requests of 8 prompt + 10 output tokens need 5 blocks each at the end
    e = engine(dep, 6, block_size=4)
    a, b = seq("0", 8, 10), seq("1", 8, 10)
    e.waiting.extend([a, b])
    t = step(e, 0.0)  # both prompts: 2 blocks each
    assert e.pool.num_used == 4 and e.cohort.n == 2
    t = step(e, t)  # KV 8 → 9: each takes a third block
    assert e.pool.num_used == 6
    for _ in range(3):  # KV 9 → 12 within the blocks they hold
        t = step(e, t)
    assert e.stats.preemptions == 0 and e.cohort.kv_len(a) == 12
    e.begin_step(t)  # both need a fourth block, none is free: b (admitted last) is preempted
    assert e.stats.preemptions == 1 and b.preemptions == 1
    assert list(e.waiting) == [b] and b.target == 8 + b.emitted == 13 and b.computed == 0
    assert e.cohort.n == 1 and e.pool.num_used == 4  # a's 3 blocks + the one it grows into
    e.end_step(t + 0.01)
    t = drain(e, t + 0.01)
    assert [rid for rid, _ in e.sink.finished] == ["0", "1"]
    assert b.emitted == 10 and e.pool.num_used == 0


def test_static_batching_waits_for_the_longest_member(dep):
    def run(scheduler):
        e = engine(dep, 100, max_num_seqs=2, scheduler=scheduler)
        reqs = [seq("0", 10, 2), seq("1", 10, 10), seq("2", 10, 3)]
        e.waiting.extend(reqs)
        drain(e)
        return {r.rid: r for r in reqs}, dict(e.sink.finished)

    static, end_s = run("static")
    assert static["2"].first_s > end_s["1"]  # the third request starts after the batch's longest ends
    cont, end_c = run("continuous")
    assert end_c["0"] < cont["2"].first_s < end_c["1"]  # continuous: it takes the freed slot at once


def test_reserved_layout_sets_aside_max_context(dep):
    e = engine(dep, 100, max_context=320, kv_layout="reserved", block_size=16)
    e.waiting.extend([seq(str(i), 10, 2) for i in range(6)])
    e.begin_step(0.0)
    assert len(e.running) == 5 and e.pool.num_used == 100  # 5 × 320 / 16 blocks
    assert e.reject_reason(300, 100) is not None  # longer than max_context


def test_prefix_hits_skip_the_cached_blocks(dep):
    e = engine(dep, 100, block_size=16)
    first = seq("0", 40, 2, prefix=("sys", 32))
    e.waiting.append(first)
    t = step(e, 0.0)
    second = seq("1", 50, 2, prefix=("sys", 32))
    e.waiting.append(second)
    e.begin_step(t)
    assert second.cached == 32 and [(s.rid, n) for s, n in e.chunks] == [("1", 18)]
    assert e.stats.cached_tokens == 32


def test_a_step_costs_what_step_cost_says(dep):
    e = engine(dep, 1000, block_size=16)
    e.waiting.extend([seq("0", 100, 5), seq("1", 300, 5)])
    dur = e.begin_step(0.0)
    assert dur == step_cost(dep, BatchShape.from_sequences([(100, 0, True), (300, 0, True)])).time_s
    e.end_step(dur)
    dur2 = e.begin_step(dur)
    assert dur2 == pytest.approx(step_cost(dep, BatchShape.from_sequences([(1, 100), (1, 300)])).time_s)


@given(st.lists(st.integers(1, 200), min_size=1, max_size=30), st.integers(0, 50),
       st.sampled_from([1, 4, 16]), st.integers(1, 6))
def test_cohort_block_growth_matches_per_member_counting(kv_lens, a_offset, bs, a):
    c = DecodeCohort(bs)
    c.A = a_offset
    members = []
    for i, kv in enumerate(kv_lens):
        s = Seq(str(i), i, 0.0, kv, 1000, None, 0, None, True)
        s.order = i
        c.join(s, kv, 1000)
        members.append(s)
    brute = sum(-(-(c.kv_len(s) + a) // bs) - -(-c.kv_len(s) // bs) for s in members)
    assert c.blocks_needed(a) == brute
    assert c.context_sum() == sum(kv_lens)


def test_cohort_finishes_members_in_order():
    c = DecodeCohort(16)
    seqs = []
    for i, remaining in enumerate([3, 1, 2]):
        s = Seq(str(i), i, 0.0, 10, 10, None, 0, None, True)
        s.order = i
        c.join(s, 10, remaining)
        seqs.append(s)
    assert [s.rid for s in c.advance(1)] == ["1"]
    assert [s.rid for s in c.advance(1)] == ["2"]
    c.leave(seqs[0])  # preempted: its heap entry is ignored
    assert c.advance(5) == [] and c.n == 0
