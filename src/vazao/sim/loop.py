"""The event loop: a heap of (time_s, seq_no, kind, payload). Events are request releases (an arrival,
a closed-loop slot freeing, a conversation's next turn after its think time), engine step ends, and
KV transfers between disaggregated pools. Engines run steps back to back while they have work; an
idle engine starts on the first release after every event at that instant has been applied (so a
burst at t = 0 is scheduled as one batch). With a single engine its step ends are kept beside the
heap rather than in it (the same order: a step end goes before releases at the same instant), and
runs of decode-only steps between events are advanced at once (fastpath.py).

The plan is read as RequestSpecs (NamedTuples, read by field name) as sessions start.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

from vazao.limits import MAX_SIM_REQUESTS
from vazao.sim import fastpath
from vazao.sim.disagg import KVLink
from vazao.sim.engine import Engine
from vazao.sim.sequence import Seq
from vazao.workload import RequestSpec, Workload

if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from vazao.sim.stats import Stats

    # An event's payload, by kind: (row, plan index, root) for RELEASE, the Engine for STEP, (source, destination,
    # seq) for TRANSFER, (engine, seq) for ENQUEUE.
    Payload: TypeAlias = tuple[RequestSpec, int, bool] | Engine | tuple[Engine, Engine, Seq] | tuple[Engine, Seq]
    # (time_s, seq_no, kind, payload). The payload's type follows `kind`, which mypy cannot tie to it, and
    # narrowing the union would cost an isinstance per event: Any.
    Event: TypeAlias = tuple[float, int, int, Any]

RELEASE, STEP, TRANSFER, ENQUEUE = 0, 1, 2, 3
_REACTION_SALT = 0x6A17  # keeps the reaction times' draws apart from the workload's own (workload/specs.py)
_INF = float("inf")


class Runner:
    # Decode-only stretches of a single engine run in closed form (fastpath.py, exact); False forces
    # step by step, for the test that compares the two.
    closed_form = True

    def __init__(self, workload: Workload, engines: list[Engine], decode_engines: list[Engine] | None,
                 stats: Stats, link: KVLink | None, max_waiting: int, request_overhead_s: float = 0.0,
                 client_reaction_s: float = 0.0) -> None:
        self.w = workload
        self.engines = engines  # where requests go first (prefill pool when disaggregated)
        self.decoders = decode_engines or []
        self.all_engines = engines + self.decoders
        self.stats = stats
        self.link = link
        self.max_waiting = max_waiting
        # HTTP, tokenization and queue hand-off before the engine sees a request (engine profile)
        self.overhead_s = request_overhead_s
        # a client's reply to a completion comes U(0, client_reaction_s) later (SimConfig), drawn from the
        # workload's seed on a stream of its own
        self.reaction_s = client_reaction_s
        self._draw = random.Random(_REACTION_SALT + workload.seed).random
        self.heap: list[Event] = []
        self._n = 0
        self._stream: Iterator[RequestSpec] = workload.iter_specs()
        self._peek: RequestSpec | None = None
        self._index = 0
        self.parked: dict[str, tuple[RequestSpec, int]] = {}  # previous turn's id → (next turn's row, plan index)
        # A task's further roots (sub-agents' first calls), released with its first: root id → [(row, plan index)]
        self.siblings: dict[str, list[tuple[RequestSpec, int]]] = {}
        self.pending: dict[str, int] = {}  # a request waiting on several (a merge) → how many have not ended
        self.task_of: dict[str, str] = {}  # a task's requests in flight → task id
        self.branches: dict[str, int] = {}  # a task → its chains still running (its closed-loop slot frees at 0)
        # every planned request of a task → its task, and each task's planned size (results.summarize_tasks)
        self.task_ids: dict[str, str] = {}
        self.task_sizes: dict[str, int] = {}
        self.affinity: dict[str, Engine] = {}
        self.kick: list[Engine] = []
        self.stopped: str | None = None  # why new arrivals stopped (an overload bound)
        self.unsent = 0  # planned requests never served: refused turns' successors, arrivals past the bound
        self.now = 0.0
        self.closed = workload.closed_loop
        self.deadline = workload.duration_s
        self.warmup = workload.warmup
        for e in self.all_engines:
            e.sink = self

    # ---- the plan ------------------------------------------------------------------------------
    def _next_root(self) -> tuple[RequestSpec, int] | None:
        """The next session's first request; its later turns are parked until their turn comes."""
        if self._index >= MAX_SIM_REQUESTS:  # a closed loop with only a duration: a bound on memory
            self.stopped = self.stopped or (f"arrivals stopped after {MAX_SIM_REQUESTS:,} requests, the most "
                                            "the simulator runs")
            return None
        row = self._peek if self._peek is not None else next(self._stream, None)
        self._peek = None
        if row is None:
            return None
        item = (row, self._index)
        self._index += 1
        task = row.task_id
        while True:
            if row.task_id is not None:
                self.task_ids[row.request_id] = row.task_id
                self.task_sizes[row.task_id] = self.task_sizes.get(row.task_id, 0) + 1
            nxt = next(self._stream, None)
            if nxt is not None and nxt.after is None and task is not None and nxt.task_id == task:
                # another root of the same task (a sub-agent's first call): released with this one
                self.siblings.setdefault(item[0].request_id, []).append((nxt, self._index))
            elif nxt is None or nxt.after is None:
                self._peek = nxt
                return item
            else:
                for before in (nxt.after, *nxt.join):
                    self.parked[before] = (nxt, self._index)
                if nxt.join:
                    self.pending[nxt.request_id] = 1 + len(nxt.join)
            self._index += 1
            row = nxt

    def push(self, t: float, kind: int, payload: Payload) -> None:
        self._n += 1
        heapq.heappush(self.heap, (t, self._n, kind, payload))

    def _release_root(self, t: float) -> None:
        """Schedule the next session's first request (open loop: at its arrival time)."""
        if self.stopped or (self.deadline is not None and t >= self.deadline):
            return
        item = self._next_root()
        if item is not None:
            row = item[0]
            self.push(t if row.arrival_s is None else row.arrival_s, RELEASE, (row, item[1], True))

    def _release_now(self, t: float) -> None:
        """Closed loop: a freed slot sends the next session's first request, after the client's reaction."""
        if self.stopped or (self.deadline is not None and t >= self.deadline):
            return
        item = self._next_root()
        if item is not None:
            if self.reaction_s:
                self.push(t + self._reaction(), RELEASE, (item[0], item[1], True))
            else:
                self._submit(item[0], item[1], t)

    def _reaction(self) -> float:
        return self.reaction_s * self._draw() if self.reaction_s else 0.0

    # ---- running ----------------------------------------------------------------------------------
    def run(self) -> None:
        if self.closed:
            assert self.w.concurrency is not None  # a closed loop has one
            for _ in range(self.w.concurrency):  # the clients start together, each within its reaction time
                self._release_root(self._reaction())
        else:
            self._release_root(0.0)
        if len(self.all_engines) == 1:
            self._run_one(self.all_engines[0])
        else:
            self._run_many()
        self.stats.sample(self.now, self.all_engines)

    def _on_release(self, payload: tuple[RequestSpec, int, bool], t: float) -> None:
        row, i, root = payload
        if root and not self.closed:
            self._release_root(t)
        self._submit(row, i, t)

    def _run_many(self) -> None:
        heap, stats, engines = self.heap, self.stats, self.all_engines
        pop, push = heapq.heappop, self.push
        while heap:
            t, _, kind, payload = pop(heap)
            self.now = t
            if kind == STEP:
                payload.end_step(t)
                if t >= stats.next_sample:
                    stats.sample(t, engines)
                dur = payload.begin_step(t)
                if dur is not None:
                    push(t + dur, STEP, payload)
            elif kind == RELEASE:
                self._on_release(payload, t)
            elif kind == ENQUEUE:
                enqueued: tuple[Engine, Seq] = payload
                self._enqueue(*enqueued, t)
            else:
                self._transfer_done(*payload)
            if self.kick and (not heap or heap[0][0] > t):
                for e in self.kick:
                    if not e.busy:
                        dur = e.begin_step(t)
                        if dur is not None:
                            push(t + dur, STEP, e)
                self.kick.clear()

    def _run_one(self, e: Engine) -> None:
        heap, stats, engines = self.heap, self.stats, self.all_engines
        pop, begin, finish = heapq.heappop, e.scheduler.schedule_step, e.end_step
        fast = fastpath.advance if self.closed_form else None
        end: float | None = None  # when the step in flight ends
        while heap or end is not None:
            if end is not None and (not heap or end <= heap[0][0]):
                if fast is not None and not e.waiting:  # a request waiting: the scheduler admits it
                    done = fast(e, end, heap[0][0] if heap else _INF, stats.next_sample)
                    if done is not None:
                        self.now, end = done
                        if end is None:  # it finished a step at which requests completed: plan the next
                            t = self.now
                            if t >= stats.next_sample:
                                stats.sample(t, engines)
                            dur = begin(t)
                            end = None if dur is None else t + dur
                        continue
                t = self.now = end
                finish(t)
                if t >= stats.next_sample:
                    stats.sample(t, engines)
                dur = begin(t)
                end = None if dur is None else t + dur
                continue
            t, _, kind, payload = pop(heap)
            self.now = t
            if kind == ENQUEUE:
                enqueued: tuple[Engine, Seq] = payload
                self._enqueue(*enqueued, t)
            else:
                self._on_release(payload, t)
            if self.kick and (not heap or heap[0][0] > t):
                self.kick.clear()
                if end is None:
                    dur = e.begin_step(t)
                    end = None if dur is None else t + dur

    def _route(self, conv: str | None) -> Engine:
        if conv is not None and conv in self.affinity:
            return self.affinity[conv]
        e = min(self.engines, key=Engine.outstanding) if len(self.engines) > 1 else self.engines[0]
        if conv is not None:
            self.affinity[conv] = e
        return e

    def _submit(self, row: RequestSpec, index: int, t: float) -> None:
        task = row.task_id
        together = None
        if task is not None:
            self.task_of[row.request_id] = task
            if task not in self.branches:  # the task's first root: every root of the task starts now
                together = self.siblings.pop(row.request_id, None)
                self.branches[task] = 1 + (len(together) if together else 0)
        self._submit_one(row, index, t)
        for sib, i in together or ():
            self._submit(sib, i, t)

    def _submit_one(self, row: RequestSpec, index: int, t: float) -> None:
        seq = Seq(row.request_id, index, t, row.prompt_tokens, row.output_tokens, row.prefix_id, row.prefix_tokens,
                  row.conversation_id, index >= self.warmup)
        e = self._route(row.conversation_id)
        reason = e.reject_reason(seq.prompt, seq.output)
        if reason is None and self.decoders:
            reason = self.decoders[0].reject_reason(seq.prompt, seq.output)
        if reason is not None:
            self.stats.record(seq, None, reason)
            self._end_chain(seq)
            return
        if self.overhead_s:
            self.push(t + self.overhead_s, ENQUEUE, (e, seq))
        else:
            self._enqueue(e, seq, t)

    def _enqueue(self, e: Engine, seq: Seq, t: float) -> None:
        if len(e.waiting) >= self.max_waiting:
            # Overload: stop taking arrivals, serve what is in flight, report what was measured.
            if not self.stopped:
                self.stopped = (f"arrivals stopped at t = {t:,.1f} s with {len(e.waiting):,} requests waiting "
                                f"on one replica (the arrival rate is far above what it serves)")
                self.unsent += self._count_rest()
            self.unsent += 1
            self._end_chain(seq)
            return
        e.waiting.append(seq)
        if not e.busy:
            self.kick.append(e)

    def _count_rest(self) -> int:
        """Planned requests not yet read (a bounded plan is counted; an endless one is not)."""
        if self.w.requests is not None:
            return self.w.requests - self._index
        if not self.w.bounded:
            return 0
        rest = (1 if self._peek is not None else 0) + sum(1 for _ in self._stream)
        self._peek = None
        return rest

    # ---- engine callbacks -------------------------------------------------------------------------
    def on_finish(self, engine: Engine, seq: Seq, now: float) -> None:
        self.stats.record(seq, now)
        nxt = self.parked.pop(seq.rid, None)
        if nxt is not None:
            row, i = nxt
            left = self.pending.get(row.request_id, 0) - 1 if row.join else 0
            if left == 0:  # its last predecessor: it goes after the think time (a tool's latency)
                self.pending.pop(row.request_id, None)
                self.task_of.pop(seq.rid, None)
                self.push(now + row.think_time_s + self._reaction(), RELEASE, (row, i, False))
                return
            if left > 0:  # a merge still waiting on other agents: this branch ends here
                self.pending[row.request_id] = left
        self._branch_over(seq, now)

    def _branch_over(self, seq: Seq, now: float) -> None:
        """A chain of requests ended (its last request, or one that joins a merge still waiting, or one
        not served): its affinity goes; in a closed loop its slot frees, a task's once all its chains end."""
        self.affinity.pop(seq.stream, None)
        task = self.task_of.pop(seq.rid, None)
        if task is not None:
            left = self.branches.get(task, 1) - 1
            if left > 0:
                self.branches[task] = left
                return
            self.branches.pop(task, None)
        if self.closed:
            self._release_now(now)

    def _end_chain(self, seq: Seq) -> None:
        """A request that is not served ends its conversation: later turns are never sent (a merge waiting on
        it neither: the other agents' chains then end at their last calls)."""
        rid = seq.rid
        while rid in self.parked:
            row, _ = self.parked.pop(rid)
            if row.join and self.pending.pop(row.request_id, None) is None:
                break  # a merge already given up by another of its predecessors: counted then
            rid = row.request_id
            self.unsent += 1
        self._branch_over(seq, self.now)

    def on_handoff(self, engine: Engine, seq: Seq, now: float) -> None:
        dst = min(self.decoders, key=Engine.outstanding)
        assert self.link is not None  # a prefill engine hands off only when disaggregated, which has a link
        self.push(now + self.link.transfer_s(seq.target), TRANSFER, (engine, dst, seq))

    def _transfer_done(self, src: Engine, dst: Engine, seq: Seq) -> None:
        src.release(seq, seq.nblocks)
        if not src.busy and src.waiting:
            self.kick.append(src)
        seq.kv_ready = True
        seq.computed = seq.target
        dst.waiting.append(seq)
        if not dst.busy:
            self.kick.append(dst)
