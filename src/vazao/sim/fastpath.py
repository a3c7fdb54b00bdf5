"""Decode-only stretches in closed form: exact to the step-by-step loop.

At low load most engine steps repeat the same decode batch with each context one token longer:
nothing waits, no prompt is in progress, and the next event (an arrival, a failed KV block
allocation, a timeline sample) is many steps away. `advance` runs such a stretch at once. The step
times are `roofline` over arrays of (batch, context) (the same operations in the same order as the
scalar path, so the same doubles); step ends are a running sum (numpy's accumulate adds in order, as
the loop does); the KV blocks the members grow into are taken in one allocation per run of steps
(the pool's anonymous allocations add up exactly: same evictions, same free count).

Completions do not end a stretch: who finishes when is known from the cohort's heap, so the batch and
context of every step are known ahead. The step at which members finish is applied by the engine's
own `end_step` (records, freed blocks, the runner's callbacks), and the stretch goes on unless that
changed anything the loop would act on (a request waiting, an event sooner than planned, an idle
engine). The stretch stops one step before anything else the loop would do differently, and the loop
takes over from there.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import reduce
from itertools import repeat
from operator import add, mul, sub

import numpy as np

from vazao.physics.step import step_cost

MIN_STEPS = 8  # below this the arrays cost more than the steps they replace
MAX_STEPS = 4096  # bounds the arrays (memory stays flat with run length)
_INF = float("inf")


def eligible(e) -> bool:
    """The step in flight decodes the whole cohort one token each, and the next one will too."""
    if e.spec is not None or e.chunks or e.joined_ready or e.waiting or e.prefilling or e.step_a != 1:
        return False
    if e.scheduler.cost is not step_cost or e.scheduler.timer is None:
        return False
    if not e.cohort.n or e.step_decoding != e.cohort.n:
        return False
    s = e.dep.consts.shard
    return not (s.window and s.kv_bytes_per_token_window)  # sliding windows take the scalar path's min()


def _finishing(cohort, upto: int) -> list[tuple[int, int]]:
    """(A at which it finishes, base) of the members that finish by A = `upto`, in finishing order;
    stale heap entries (a member that left and came back) are the ones cohort.advance skips."""
    return sorted((fin, seq.base) for fin, _, seq in cohort.heap
                  if fin <= upto and seq.in_cohort and seq.fin == fin)


def _segments(cohort, a0: int, r: int, moe: bool) -> tuple[int, list[int], list[int], list[int]]:
    """(rounds, segments) of the next `r` steps: step j + 1 is planned at A = a0 + 1 + j with the
    members that have not finished by then, so the batch only changes where members finish. Segment m
    covers steps j + 1 for j from starts[m] to the next start, with ns[m] members whose bases sum to
    sums[m]. A step after which no member is left is not planned (the loop idles the engine); routed
    experts keep one batch (the expert terms are costed per batch size), so they stop at the first
    completion."""
    n, sb = cohort.n, cohort.sum_base
    done = _finishing(cohort, a0 + r)
    if not done:
        return r, [0], [n], [sb]
    if moe or len(done) >= n:
        # the first completion (moe), or the one that empties the cohort: the last step planned is the
        # one whose end reaches it
        r = min(r, (done[0][0] if moe else done[n - 1][0]) - a0 - 1)
        if moe:
            return r, [0], [n], [sb]
    starts, ns, sums = [0], [n], [sb]
    k, m = 0, len(done)
    while k < m:
        fin = done[k][0]
        j = fin - a0 - 1  # the first step planned without the members finishing at A = fin
        if j >= r:
            break
        while k < m and done[k][0] == fin:
            n -= 1
            sb -= done[k][1]
            k += 1
        if j == starts[-1]:
            ns[-1], sums[-1] = n, sb
        else:
            starts.append(j)
            ns.append(n)
            sums.append(sb)
    return r, starts, ns, sums


def advance(e, end: float, top: float, next_sample: float) -> tuple[float, float | None] | None:
    """Finish the step in flight (ending at `end`) and the decode steps after it, as the loop would
    with no event before `top` and no sample before `next_sample`. Returns (the last finished step's
    end, the end of the step now in flight — None when the loop is to plan the next step itself), or
    None to leave it all to the loop."""
    if end >= next_sample:
        return None
    cohort = e.cohort
    if eligible(e):
        last, a0, i0 = end - e.step_start, cohort.A, 0
    elif _completes_prompts(e):
        # the step in flight ends the prompts it computes and leaves a decode batch: the engine applies
        # it, the next step is planned here as the scheduler would, and the stretch starts after it
        last = min(cohort.gaps[-2:], default=end - e.step_start)  # the mixed step's own length overstates
        e.sink.now = end  # the runner's clock, as the loop sets it before a step ends (callbacks read it)
        e.end_step(end)
        heap = e.sink.heap
        if heap and heap[0][0] < top:
            top = heap[0][0]
        if not cohort.n or e.waiting or e.chunks or e.joined_ready or e.prefilling or not _plan_decode(e, end):
            return end, None
        a0, i0 = cohort.A - 1, 1
    else:
        return None
    stop_t = top if top < next_sample else next_sample
    r = MAX_STEPS if stop_t == _INF or last <= 0 else min(MAX_STEPS, int((stop_t - end) / last) + 2 + i0)
    if r >= MIN_STEPS:
        r, starts, ns, sums = _segments(cohort, a0, r, bool(e.dep.consts.shard.num_experts))
    if r < MIN_STEPS:
        return (end, end + e.scheduler._cost()) if i0 else None
    # the scheduler's shape per step: BatchShape(n, n, ctx, ctx + n + 0.0, n), ctx = Σ base + n·A
    timer = e.scheduler.timer
    ends = np.empty(r + 1)
    stops = starts[1:] + [r]
    for j0, j1, n, sb in zip(starts, stops, ns, sums, strict=True):
        c0 = sb + n * (a0 + 1 + j0) + n  # the first step's context + n
        timer.decode_times(n, np.arange(c0, c0 + n * (j1 - j0), n, dtype=np.int64), ends[1 + j0:1 + j1])
    ends[0] = end
    ends.cumsum(out=ends)  # ends[j]: when step j ends (0: the one in flight); accumulate adds in order
    out = _walk(e, ends, starts, ns, a0, i0, top, next_sample)
    return out if out is not None or not i0 else (end, float(ends[1]))


def _completes_prompts(e) -> bool:
    """The step in flight computes the last chunk of every prompt in progress, with nobody waiting."""
    if e.spec is not None or not e.chunks or e.waiting or e.joined_ready or e.step_a != 1 or e.role != "both":
        return False
    if e.scheduler.cost is not step_cost or e.scheduler.timer is None or len(e.chunks) != len(e.prefilling):
        return False
    if any(seq.computed + n != seq.target for seq, n in e.chunks):
        return False
    s = e.dep.consts.shard
    return not (s.window and s.kv_bytes_per_token_window)


def _plan_decode(e, now: float) -> bool:
    """Scheduler.plan for a batch that only decodes: the members' new blocks, then the step is in
    flight. False (and nothing changed) when the blocks are short: the loop's plan preempts."""
    cohort = e.cohort
    if e.grow and not e.pool.try_allocate_anonymous(cohort.cnt[(-cohort.A) % e.bs]):
        return False
    e.step_a = 1
    e.step_decoding = cohort.n
    e.busy = True
    e.step_start = now
    return True


def _limit(ends: np.ndarray, top: float, next_sample: float) -> int:
    """Steps that may finish: those ending before the next sample and no later than the next event
    (a step end goes before an event at the same instant), and not the last (what follows it is not
    computed). Of the two counts the smaller is the one of the sooner bound."""
    head = ends[:-1]
    if top < next_sample:
        return int(head.searchsorted(top, "right"))
    return int(head.searchsorted(next_sample, "left"))


def _walk(e, ends: np.ndarray, starts: list[int], ns: list[int], a0: int, i: int, top: float,
          next_sample: float) -> tuple[float, float | None] | None:
    """Apply the stretch: runs of plain steps at once, each step at which members finish through the
    engine's own end_step. Step j ends at ends[j], is planned at A = a0 + j and finishing it makes
    A = a0 + j + 1; the batch of step j + 1 is ns[m] for the last starts[m] <= j. Step i is in flight."""
    cohort, pool, runner_heap = e.cohort, e.pool, e.sink.heap
    i0 = i
    limit = _limit(ends, top, next_sample)
    el = ends.tolist()
    size = len(el)
    while True:
        head = cohort.heap[0][0] if cohort.heap else None
        c = size if head is None else min(size, head - a0 - 1)  # the step whose end completes someone
        k = min(c, limit)
        blocks = _blocks(cohort, a0 + 1 + i, k - i, e.bs) if k > i and e.grow else 0
        if blocks > pool.num_free:  # short of blocks on the way: the steps that fit
            grown = a0 + 1 + np.arange(i, k, dtype=np.int64)
            need = np.asarray(cohort.cnt, dtype=np.int64)[(-grown) % e.bs].cumsum()
            k = i + int(need.searchsorted(pool.num_free, "right"))
            blocks = int(need[k - i - 1]) if k > i else 0
        if k > i:
            _apply(e, el, i, k, blocks)
            i = k
        if i < c or i >= limit:
            break  # a KV allocation, an event or a sample comes first, or the steps computed ran out
        # step i ends with completions: the engine applies it (records, freed blocks, callbacks)
        e.step_decoding = cohort.n
        e.sink.now = t = el[i]
        e.end_step(t)
        i += 1
        if (not cohort.n or e.waiting or e.chunks or e.joined_ready
                or cohort.n != ns[bisect_right(starts, i - 1) - 1]):
            return t, None  # the loop plans what comes next
        if runner_heap and runner_heap[0][0] < top:  # a callback scheduled an event (a next turn)
            top = runner_heap[0][0]
            limit = min(limit, _limit(ends, top, next_sample))
        if i >= limit or not _plan_decode(e, t):
            return t, None
    if i == i0:
        return None
    e.step_decoding = cohort.n
    return el[i - 1], el[i]


def _blocks(cohort, g: int, steps: int, bs: int) -> int:
    """New blocks the members take when `steps` steps are planned from A = g on: a member takes one
    whenever its length reaches a multiple of the block size, so every bs steps take one per member."""
    cnt = cohort.cnt
    total = (steps // bs) * cohort.n
    for a in range(g + steps - steps % bs, g + steps):
        total += cnt[(-a) % bs]
    return total


def _apply(e, el: list[float], i: int, k: int, blocks: int) -> None:
    """The state after steps i … k − 1 finished (none of them completing anyone) and steps i + 1 … k
    were planned: end_step's `now - step_start` and its sums one step at a time, in order (reduce adds
    left to right, as end_step does), and the blocks taken at once."""
    stats, cohort = e.stats, e.cohort
    span = el[i:k]
    durs = list(map(sub, span, [e.step_start, *el[i:k - 1]]))
    stats.steps += k - i
    stats.busy_s = reduce(add, durs, stats.busy_s)
    stats.seq_s = reduce(add, map(mul, durs, repeat(cohort.n, k - i)), stats.seq_s)
    if len(e.running) > stats.peak_running:
        stats.peak_running = len(e.running)
    cohort.gaps.extend(durs)
    cohort.A += k - i
    if blocks and not e.pool.try_allocate_anonymous(blocks):
        raise RuntimeError(f"closed-form decode: the KV pool refused {blocks} blocks it counted as free")
    e.last_step_end = e.step_start = span[-1]
