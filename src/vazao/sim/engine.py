"""One engine replica: its queue, its running requests, its KV pool, and what a finished step does.

What the next step computes is the scheduler's decision (scheduler.py); how long it takes is
`step_cost` (physics/step.py). This module applies a finished step: prompt chunks advance
`computed`, a completed prompt emits its first token and joins the decode cohort, the cohort
advances and hands back the requests that finished.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol, cast

from vazao.sim.cohort import DecodeCohort
from vazao.sim.config import SimConfig
from vazao.sim.kv_pool import BlockPool
from vazao.sim.scheduler import Scheduler
from vazao.sim.sequence import Seq
from vazao.sim.speculative import SpecModel

if TYPE_CHECKING:
    from collections.abc import Sequence

    from vazao.physics.deployment import Deployment
    from vazao.sim.stats import Stats


class Sink(Protocol):
    """What an engine calls back, and what the closed-form stretches (fastpath.py) read and set, of the
    runner (sim/loop.py): a Protocol, not the class, because loop.py imports this module and a type-only
    import back would close a loop (tests/test_layering.py). A Runner is one."""

    now: float  # the runner's clock

    @property
    def heap(self) -> Sequence[tuple[float, int, int, object]]: ...  # its events: (time_s, seq_no, kind, payload)
    def on_finish(self, engine: Engine, seq: Seq, now: float) -> None: ...
    def on_handoff(self, engine: Engine, seq: Seq, now: float) -> None: ...


class Engine:
    def __init__(self, dep: Deployment, cfg: SimConfig, num_blocks: int, max_context: int, stats: Stats,
                 sink: Sink | None, *, index: int = 0, role: str = "both") -> None:
        self.dep = dep
        self.cfg = cfg
        self.index = index
        self.role = role  # both | prefill | decode
        self.stats = stats
        # the runner: on_finish(engine, seq, now), on_handoff(engine, seq, now); None until the Runner that takes
        # the engine sets itself (Runner.__init__), before any step
        self.sink = cast("Sink", sink)
        self.bs = cfg.block_size
        self.paged = cfg.kv_layout == "paged"
        self.pool = BlockPool(num_blocks, self.bs, caching=cfg.prefix_caching and self.paged)
        self.max_context = max_context
        self.reserve_blocks = 0 if self.paged else -(-max_context // self.bs)
        # guaranteed admission (TensorRT-LLM's GUARANTEED_NO_EVICT): a request takes the blocks of its
        # whole prompt + output when admitted, so the running ones never grow into a full cache
        self.guaranteed = self.paged and cfg.admission == "guaranteed"
        self.grow = self.paged and not self.guaranteed
        self.overshoot = cfg.spec.k if cfg.spec else 0
        self.waiting: deque[Seq] = deque()
        self.running: dict[Seq, None] = {}  # admission order; preemption takes the last
        self.prefilling: deque[Seq] = deque()  # running requests whose prompt is not all computed
        self.track = stats.new_track()
        self.cohort = DecodeCohort(self.bs, self.track, stats.tracks[self.track])
        self.spec = SpecModel(cfg.spec, dep) if (cfg.spec and role != "prefill") else None
        self.scheduler = Scheduler(self)
        self.busy = False
        self.step_start = 0.0
        self.last_step_end = 0.0
        self.order = 0
        # the step in flight
        self.chunks: list[tuple[Seq, int]] = []
        self.step_a = 1
        self.step_decoding = 0
        self.joined_ready: list[Seq] = []
        self.paused_s = 0.0  # time the decode cohort has waited since its last step (prefill priority)

    # ---- capacity --------------------------------------------------------------------------------
    def outstanding(self) -> int:
        return len(self.running) + len(self.waiting)

    def reject_reason(self, prompt: int, output: int) -> str | None:
        """Why a request can never be served here (checked on arrival, like an HTTP 400)."""
        total = prompt + output
        if total > self.max_context:
            return f"prompt + output = {total:,} tokens exceeds the max context of {self.max_context:,}"
        overshoot = self.cfg.spec.k if self.cfg.spec else 0  # a last speculative step may overrun
        need = self.reserve_blocks if not self.paged else -(-(total + overshoot) // self.bs)
        if need > self.pool.num_blocks:
            held = self.pool.num_blocks * self.bs
            return (f"needs {need * self.bs:,} tokens of KV cache but a replica holds {held:,}"
                    if self.paged else
                    f"reserves {need * self.bs:,} tokens of KV cache per sequence but a replica holds {held:,}")
        return None

    def blocks_for(self, seq: Seq) -> int:
        """Blocks a request takes when it is admitted with `seq.target` tokens to compute."""
        if self.guaranteed:
            return -(-(seq.prompt + seq.output + self.overshoot) // self.bs)
        return -(-seq.target // self.bs) if self.paged else self.reserve_blocks

    def blocks_held(self, seq: Seq) -> int:
        if self.grow and seq.in_cohort:
            return -(-(seq.base + self.cohort.A) // self.bs)
        return seq.nblocks

    def kv_tokens(self) -> int:
        """Tokens whose KV the running requests hold (not counting reservations or cache)."""
        return self.cohort.context_sum() + sum(s.computed for s in self.prefilling)

    # ---- blocks ----------------------------------------------------------------------------------
    def release(self, seq: Seq, total_blocks: int, key_tokens: int = 0) -> None:
        """Give back a request's blocks; first key the full blocks that later requests may hit."""
        pool, bs = self.pool, self.bs
        if pool.caching and key_tokens:
            have = len(seq.blocks)
            want = min(seq.keyable_blocks(key_tokens, bs), total_blocks)
            if want > have:
                ids = pool.identify(want - have)
                for j, bid in enumerate(ids, start=have):
                    pool.commit(bid, seq.block_key(j, bs))
                seq.blocks.extend(ids)
        pool.free_anonymous(total_blocks - len(seq.blocks))
        pool.free(reversed(seq.blocks))
        seq.blocks = []
        seq.nblocks = 0

    def commit_computed(self, seq: Seq) -> None:
        """Key the prompt blocks a chunk completed (so a concurrent request can hit them)."""
        have = len(seq.blocks)
        want = seq.keyable_blocks(seq.computed, self.bs)
        if want > have:
            ids = self.pool.identify(want - have)
            for j, bid in enumerate(ids, start=have):
                self.pool.commit(bid, seq.block_key(j, self.bs))
            seq.blocks.extend(ids)

    def preempt(self, seq: Seq) -> None:
        """Preemption by recompute: free everything, requeue at the front, recompute prompt + output."""
        total = self.blocks_held(seq)
        if seq.in_cohort:
            kv = self.cohort.kv_len(seq)
            self.cohort.leave(seq)
            seq.emitted += kv - seq.target  # the cohort counts tokens; settle them on the request
            seq.last_s = self.last_step_end
        else:
            kv = seq.computed
            self.prefilling.remove(seq)
        seq.make_reusable()  # its own blocks are worth finding again
        self.release(seq, total, key_tokens=kv)
        del self.running[seq]
        seq.computed = 0
        seq.target = seq.prompt + seq.emitted
        seq.kv_ready = False
        seq.preemptions += 1
        self.stats.preemptions += 1
        self.waiting.appendleft(seq)

    # ---- steps -----------------------------------------------------------------------------------
    def begin_step(self, now: float) -> float | None:
        """Schedule and cost the next step; None when there is nothing to run (the engine idles)."""
        return self.scheduler.schedule_step(now)

    def end_step(self, now: float) -> None:
        stats = self.stats
        dur = now - self.step_start
        self.last_step_end = now
        cohort = self.cohort
        stats.steps += 1
        stats.busy_s += dur
        stats.seq_s += dur * (self.step_decoding + len(self.chunks))
        if len(self.running) > stats.peak_running:
            stats.peak_running = len(self.running)
        if self.step_decoding:
            # every member's gap this step, and any prompt-only steps it waited through (prefill priority)
            cohort.gaps.append(dur + self.paused_s)
            self.paused_s = 0.0
            if self.joined_ready:
                for seq in self.joined_ready:  # first decode after a KV transfer: the gap spans the wait
                    seq.seg_start += 1
                    stats.own_gap(seq, now - seq.last_s)
                self.joined_ready.clear()
            cohort.A += self.step_a
            if cohort.heap and cohort.heap[0][0] <= cohort.A:
                self.finish_decoded(now)
        elif cohort.n:
            self.paused_s += dur  # a prompt-only step the decoders waited through
        if self.chunks:
            self._apply_chunks(now)

    def finish_decoded(self, now: float) -> None:
        """The members the cohort's last advance finished: their records, blocks and callbacks."""
        cohort = self.cohort
        for seq in cohort.advance(0):
            total = -(-(seq.base + cohort.A) // self.bs) if self.grow else seq.nblocks
            seq.emitted = seq.output
            self._finish(seq, now, total)

    def _apply_chunks(self, now: float) -> None:
        stats, cohort, prefilling = self.stats, self.cohort, self.prefilling
        caching, bs = self.pool.caching, self.bs
        for seq, n in self.chunks:
            seq.computed += n
            stats.prefill_tokens += n
            if caching and seq.keyable_blocks(seq.computed, bs) > len(seq.blocks):
                self.commit_computed(seq)
            if seq.computed < seq.target:
                continue
            prefilling.popleft()
            seq.emitted += 1
            if seq.emitted == 1:
                seq.first_s = now
            else:  # the first token after a recompute
                stats.own_gap(seq, now - seq.last_s)
            seq.last_s = now
            if seq.emitted >= seq.output:
                self._finish(seq, now, seq.nblocks)
            elif self.role == "prefill":
                del self.running[seq]
                self.sink.on_handoff(self, seq, now)
            else:
                cohort.join(seq, seq.target, seq.output - seq.emitted)
                if self.paused_s:  # the cohort's next gap spans prompt steps before this one: its own gap
                    self.joined_ready.append(seq)
        self.chunks.clear()

    def _finish(self, seq: Seq, now: float, total_blocks: int) -> None:
        key = seq.prompt + seq.output - 1 if seq.in_conversation else 0
        self.release(seq, total_blocks, key_tokens=key)
        del self.running[seq]
        self.sink.on_finish(self, seq, now)

    def admit(self, seq: Seq) -> None:
        self.order += 1
        seq.order = self.order
        seq.hit_memo = None  # running, it commits blocks: a lookup made while it waited no longer holds
        self.running[seq] = None
