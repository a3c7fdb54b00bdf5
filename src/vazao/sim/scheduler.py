"""What the next engine step computes, and how long it takes.

There are no prefill and decode phases: each request has `computed` tokens and the scheduler decides
how many each advances this step (vLLM v1's rule). In order:

0. requests that arrive with their KV computed elsewhere (disaggregated decode) join the decoders;
1. every decoding request advances one token (k + 1 with speculative decoding). Under the paged
   layout the blocks they grow into are allocated now; when the pool is short, the most recently
   admitted running request is preempted (recompute) until the rest fit;
2. running requests whose prompt is not all computed get the next chunk, oldest first, within the
   per-step token budget (max_num_batched_tokens); without chunked prefill a prompt goes whole, and
   the budget is at least the max context (as vLLM requires when chunked prefill is off);
3. waiting requests are admitted first-come first-served while a sequence slot (max_num_seqs), token
   budget and KV blocks for their whole prompt remain (paged: the prompt's blocks, less any prefix
   cache hits; reserved: max_context tokens up front). The queue head that does not fit blocks
   the ones behind it.

With prefill priority (SGLang) a step that can carry prompt chunks carries only them (2 and 3 with the
whole budget), and the decoders wait for the first step that cannot; their gap spans the prompt steps.

Static batching admits only when nothing is running, then as many as fit at once with their whole
prompts in one step; the batch runs until its longest member finishes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from vazao.physics.step import DECODE_QUERY_TOKENS, BatchShape, StepTimer, step_cost

if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable

    from vazao.physics.deployment import Deployment
    from vazao.physics.step import StepCost
    from vazao.sim.cohort import DecodeCohort
    from vazao.sim.config import SimConfig
    from vazao.sim.kv_pool import BlockPool
    from vazao.sim.sequence import Seq
    from vazao.sim.speculative import SpecModel
    from vazao.sim.stats import Stats


class EngineState(Protocol):
    """What the scheduler reads and sets of its engine (sim/engine.py): a Protocol, not the class, because
    engine.py imports this module and a type-only import back would close a loop (tests/test_layering.py).
    An Engine is one. Plain attributes are the ones the scheduler sets; properties it only reads."""

    step_a: int
    step_decoding: int
    joined_ready: list[Seq]
    busy: bool
    step_start: float

    @property
    def cfg(self) -> SimConfig: ...
    @property
    def dep(self) -> Deployment: ...
    @property
    def max_context(self) -> int: ...
    @property
    def pool(self) -> BlockPool: ...
    @property
    def cohort(self) -> DecodeCohort: ...
    @property
    def running(self) -> dict[Seq, None]: ...
    @property
    def waiting(self) -> deque[Seq]: ...
    @property
    def prefilling(self) -> deque[Seq]: ...
    @property
    def chunks(self) -> list[tuple[Seq, int]]: ...
    @property
    def bs(self) -> int: ...
    @property
    def spec(self) -> SpecModel | None: ...
    @property
    def grow(self) -> bool: ...
    @property
    def stats(self) -> Stats: ...
    def blocks_for(self, seq: Seq) -> int: ...
    def admit(self, seq: Seq) -> None: ...
    def preempt(self, seq: Seq) -> None: ...


class Scheduler:
    def __init__(self, engine: EngineState) -> None:
        self.e = engine
        cfg = engine.cfg
        self.static = cfg.scheduler == "static"
        self.chunked = cfg.chunked_prefill and not self.static
        # Without chunked prefill a prompt must go whole in one step, so an engine's step budget is at
        # least its max context: vLLM refuses max_num_batched_tokens < max_model_len when chunked prefill
        # is off (vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len). With the 8,192 budget of
        # the chunked default a 16k prompt would wait until no sequence decodes.
        self.budget = (cfg.max_num_batched_tokens if self.chunked or self.static
                       else max(cfg.max_num_batched_tokens, engine.max_context))
        self.max_seqs = cfg.max_num_seqs
        self.prefill_first = cfg.prefill_priority and not self.static
        self.cost: Callable[[Deployment, BatchShape], StepCost] = step_cost
        self.dep = engine.dep
        # step_cost's time without its objects, for the simulator's scalar constants (a grid's are arrays)
        consts = engine.dep.consts
        self.timer = StepTimer(consts) if StepTimer.usable(consts) else None
        # (prefix id, blocks) → (pool.evictions when looked up, block ids)
        self.memo: dict[tuple[str | None, int], tuple[int, tuple[int, ...]]] = {}

    def _victim(self) -> Seq:
        return next(reversed(self.e.running))

    def schedule_step(self, now: float) -> float | None:
        """Admit, chunk and batch the next step at `now`; its duration, or None when nothing can run."""
        e = self.e
        pool, cohort, running, waiting, bs = e.pool, e.cohort, e.running, e.waiting, e.bs
        spec = e.spec
        max_seqs = self.max_seqs
        budget = self.budget

        # 0. KV-ready requests join the decoders
        while waiting and waiting[0].kv_ready and len(running) < max_seqs:
            seq = waiting[0]
            need = e.blocks_for(seq)
            if need > pool.num_free:
                break
            waiting.popleft()
            pool.allocate_anonymous(need)
            seq.nblocks = need
            seq.computed = seq.target
            e.admit(seq)
            cohort.join(seq, seq.target, seq.output - seq.emitted)
            e.joined_ready.append(seq)

        # prefill first (SGLang): prompts that can be scheduled run in a step of their own, the decoders
        # waiting; only when no prompt chunk can go does the decode batch run
        if self.prefill_first and (e.prefilling or waiting) and self._prefill_alone(now):
            return self._cost()

        # 1. decoders
        a = 1
        if cohort.n:
            a = spec.advance() if spec else 1
            if e.grow:
                need = cohort.cnt[(-cohort.A) % bs] if a == 1 else cohort.blocks_needed(a)
                while not pool.try_allocate_anonymous(need):
                    e.preempt(self._victim())
                    need = cohort.blocks_needed(a)
            budget -= cohort.n * (spec.k + 1 if spec else 1)
        e.step_a = a
        e.step_decoding = cohort.n
        if e.joined_ready:  # their first gap is recorded apart (it spans the KV transfer)
            e.joined_ready = [s for s in e.joined_ready if s.in_cohort]
        scheduled = cohort.n > 0

        # 2. prompts in progress
        chunks = e.chunks
        for seq in e.prefilling:
            if budget <= 0 and not self.static:
                break
            rem = seq.target - seq.computed
            if self.chunked:
                n = min(rem, budget)
            else:
                if scheduled and rem > budget and not self.static:
                    break
                n = rem
            chunks.append((seq, n))
            budget -= n
            scheduled = True

        # 3. admissions
        if waiting and len(running) < max_seqs and not (self.static and running):
            self._admit(budget, scheduled)

        if not chunks and not cohort.n:
            e.busy = False
            return None
        e.busy = True
        e.step_start = now
        return self._cost()

    def _prefill_alone(self, now: float) -> bool:
        """Schedule a step of prompt chunks only (the decode cohort waits); False when none can go."""
        e = self.e
        budget = self.budget
        for seq in e.prefilling:
            if budget <= 0:
                break
            rem = seq.target - seq.computed
            n = min(rem, budget) if self.chunked else rem
            if not self.chunked and e.chunks and rem > budget:
                break
            e.chunks.append((seq, n))
            budget -= n
        if e.waiting and len(e.running) < self.max_seqs:
            self._admit(budget, bool(e.chunks))
        if not e.chunks:
            return False
        e.step_a = 1
        e.step_decoding = 0
        e.busy = True
        e.step_start = now
        return True

    def _admit(self, budget: int, scheduled: bool) -> None:
        e = self.e
        pool, running, waiting, bs, chunks = e.pool, e.running, e.waiting, e.bs, e.chunks
        caching = pool.caching
        while waiting and len(running) < self.max_seqs:
            if budget <= 0 and not self.static:
                return
            seq = waiting[0]
            if seq.kv_ready:
                return
            target = seq.target
            hits = self._hits(seq, target) if caching else []
            cached = len(hits) * bs
            rem = target - cached
            if not self.chunked and scheduled and rem > budget and not self.static:
                return
            total = e.blocks_for(seq)
            need = total - len(hits)
            idle = pool.evictable_among(hits) if hits and pool.num_evictable else 0
            if idle:
                # some hits sit on the eviction list: taking them leaves fewer blocks to allocate from
                if need + idle > pool.num_free:
                    return
                pool.acquire(hits)
                pool.allocate_anonymous(need)
            else:
                if not pool.try_allocate_anonymous(need):
                    return
                if hits:
                    pool.acquire(hits)
            waiting.popleft()
            seq.blocks = hits
            seq.nblocks = total
            seq.computed = cached
            if seq.emitted == 0 and seq.preemptions == 0:
                seq.cached = cached
                e.stats.cached_tokens += cached
            e.admit(seq)
            e.prefilling.append(seq)
            n = min(rem, budget) if self.chunked else rem
            chunks.append((seq, n))
            budget -= n
            scheduled = True

    def _hits(self, seq: Seq, target: int) -> list[int]:
        """Cached blocks at the head of the prompt (at least its last token is always computed).
        A request that shares only a prefix reuses the last lookup of that prefix while nothing has
        been evicted since (evictions are the only way a cached block loses its key)."""
        pool, bs = self.e.pool, self.e.bs
        limit = min(seq.keyable_blocks(target, bs), (target - 1) // bs)
        if limit <= 0:
            return []
        if seq.key_cap == seq.prefix_tokens:
            memo = self.memo.get((seq.prefix_id, limit))
            if memo is not None and memo[0] == pool.evictions:
                return list(memo[1])
            hits = pool.match(seq.keys(limit, bs))
            if len(hits) == limit:
                self.memo[(seq.prefix_id, limit)] = (pool.evictions, tuple(hits))
            return hits
        if seq.prefix_id is None and not seq.in_conversation:
            # A lone (preempted) request's blocks carry keys no other request has, and it commits none while
            # it waits (Engine.admit drops the memo): between two tries to admit it, only an eviction can
            # change what it finds.
            mine = seq.hit_memo
            if mine is not None and mine[1] == limit:
                if mine[0] == pool.evictions:
                    return list(mine[2])
                # Evictions since: the run it found ends at the first of its blocks they took. An evicted key
                # is gone for good (only this request computes its keys) and the keys past the run stay
                # uncached, so this is what a new lookup finds, without keying hundreds of blocks at every
                # step of a cache that evicts at every step (a preemption storm).
                # (mine[3]: each block's place in the first lookup's run; a place past the run is cut off)
                place, n = mine[3], len(mine[2])
                cut = min((i for bid in pool.evicted_since(mine[0]) if (i := place.get(bid, n)) < n), default=n)
                seq.hit_memo = (pool.evictions, limit, mine[2][:cut], place)
                return list(mine[2][:cut])
            hits = pool.match(seq.keys(limit, bs))
            seq.hit_memo = (pool.evictions, limit, tuple(hits), {bid: i for i, bid in enumerate(hits)})
            return hits
        return pool.match(seq.keys(limit, bs))

    def _cost(self) -> float:
        e = self.e
        cohort, spec = e.cohort, e.spec
        n_dec = cohort.n
        ctx_dec = cohort.sum_base + n_dec * cohort.A  # cohort.context_sum()
        if not e.chunks and spec is None and self.timer is not None and self.cost is step_cost:
            return self.timer.decode_time(n_dec, ctx_dec)  # the shape below, decode only
        if spec is not None and n_dec:
            q = spec.k + 1
            nseq, new, ctx, pairs, logits = n_dec, n_dec * q, ctx_dec, q * ctx_dec + n_dec * q * (q + 1) / 2, n_dec * q
            dec = pairs if q <= DECODE_QUERY_TOKENS else 0.0
        else:
            nseq, new, ctx, pairs, logits = n_dec, n_dec, ctx_dec, ctx_dec + n_dec, n_dec
            dec = pairs
        p_n = p_new = p_ctx = p_logits = 0
        p_pairs = p_dec = 0.0
        for seq, m in e.chunks:
            c = seq.computed
            p_n += 1
            p_new += m
            p_ctx += c
            pp = m * (c + (m + 1) / 2.0)
            p_pairs += pp
            if m <= DECODE_QUERY_TOKENS:  # a chunk this short attends as a decode (BatchShape.from_sequences)
                p_dec += pp
            p_logits += c + m == seq.target
        if self.cost is step_cost and self.timer is not None:
            t = self.timer.time(nseq + p_n, new + p_new, ctx + p_ctx, pairs + p_pairs, logits + p_logits,
                                dec + p_dec)
        else:
            shape = BatchShape(nseq + p_n, new + p_new, ctx + p_ctx, pairs + p_pairs, logits + p_logits, dec + p_dec)
            t = self.cost(self.dep, shape).time_s
        if spec is not None:
            pre = BatchShape(p_n, p_new, p_ctx, p_pairs, p_logits, p_dec) if p_n else None
            t += spec.draft_s(n_dec, ctx_dec, pre)
        return t
