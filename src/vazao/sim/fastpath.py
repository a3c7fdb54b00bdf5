"""Decode-only stretches in closed form: exact to the step-by-step loop (sliding-window models included).

At low load most engine steps repeat the same decode batch with each context one token longer:
nothing waits, no prompt is in progress, and the next event (an arrival, a failed KV block
allocation, a timeline sample) is many steps away. `advance` runs such a stretch at once. The step
times are StepTimer's (physics/step.py: step_cost's operations in the same order, so the same doubles,
over arrays for long runs and one by one for short ones); step ends are a running sum (accumulate adds
in order, as the loop's clock does); the KV blocks the members grow into are taken in one allocation
per run of steps (the pool's anonymous allocations add up exactly: same evictions, same free count).

Completions do not end a stretch: who finishes when is known from the cohort's heap, so the batch and
context of every step are known ahead. The step at which members finish is applied as end_step
applies it (records, freed blocks, the runner's callbacks: Engine.finish_decoded), and the stretch goes
on unless that changed anything the loop would act on (a request waiting, an event sooner than
planned, an idle engine). The stretch stops one step before anything else the loop would do
differently, and the loop takes over from there; the engine's step sums are added at its end, one
step after another as end_step adds them.

At the chat workload's own rate a stretch ends at every arrival (one every ~31 steps), so what a
stretch costs to start is most of what a run costs: a new arrival's prompt step ends inside `advance`
(the `_completes_prompts` branch) and the next stretch starts from there.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate, chain
from operator import sub
from typing import TYPE_CHECKING

import numpy as np

from vazao.physics.step import step_cost

if TYPE_CHECKING:
    from vazao.sim.cohort import DecodeCohort
    from vazao.sim.engine import Engine

MIN_STEPS = 8  # below this the arrays cost more than the steps they replace
STRETCH_STEPS = 4096  # the most steps one stretch costs at once: bounds the arrays (memory flat with run length)
_INF = float("inf")


def eligible(e: Engine) -> bool:
    """The step in flight decodes the whole cohort one token each, and the next one will too."""
    if e.spec is not None or e.chunks or e.joined_ready or e.waiting or e.prefilling or e.step_a != 1:
        return False
    if e.paused_s:  # the next gap spans prompt-only steps (prefill priority): end_step adds them
        return False
    if e.scheduler.cost is not step_cost or e.scheduler.timer is None:
        return False
    return bool(e.cohort.n) and e.step_decoding == e.cohort.n


def _finishing(cohort: DecodeCohort, upto: int) -> list[tuple[int, int]]:
    """(A at which it finishes, base) of the members that finish by A = `upto`, in finishing order;
    stale heap entries (a member that left and came back) are the ones cohort.advance skips."""
    done = [(fin, seq.base) for fin, _, seq in cohort.heap if fin <= upto and seq.in_cohort and seq.fin == fin]
    done.sort()
    return done


def _segments(cohort: DecodeCohort, a0: int, r: int, moe: bool) -> tuple[int, list[int], list[int], list[int]]:
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


def advance(e: Engine, end: float, top: float, next_sample: float) -> tuple[float, float | None] | None:
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
        # the last decode gaps (the mixed step's own length overstates)
        gaps = cohort.gaps
        last = (gaps[-1] if len(gaps) < 2 else min(gaps[-2], gaps[-1])) if gaps else end - e.step_start
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
    r = STRETCH_STEPS if stop_t == _INF or last <= 0 else min(STRETCH_STEPS, int((stop_t - end) / last) + 2 + i0)
    timer = e.scheduler.timer
    assert timer is not None  # eligible and _completes_prompts checked it
    if r >= MIN_STEPS:
        r, starts, ns, sums = _segments(cohort, a0, r, bool(timer.s.num_experts))
    if r < MIN_STEPS:
        if not i0:  # one step, as the loop would take it: end_step, then plan the next decode step
            e.sink.now = end
            e.end_step(end)
            if not cohort.n or e.waiting or e.chunks or e.joined_ready or e.prefilling or not _plan_decode(e, end):
                return end, None
        return end, end + e.scheduler._cost()
    # the scheduler's shape per step: BatchShape(n, n, ctx, ctx + n + 0.0, n), ctx = Σ base + n·A
    if len(starts) == 1:
        times = timer.decode_list(ns[0], sums[0] + ns[0] * (a0 + 1) + ns[0], r)
    else:
        times = []
        for j0, j1, n, sb in zip(starts, [*starts[1:], r], ns, sums, strict=True):
            times += timer.decode_list(n, sb + n * (a0 + 1 + j0) + n, j1 - j0)  # the first step's context + n
    # ends[j]: when step j ends (0: the one in flight); accumulate adds in order, as the loop's clock does
    ends = list(accumulate(times, initial=end))
    out = _walk(e, ends, starts, ns, a0, i0, top, next_sample)
    return out if out is not None or not i0 else (end, ends[1])


def _completes_prompts(e: Engine) -> bool:
    """The step in flight computes the last chunk of every prompt in progress, with nobody waiting."""
    if e.spec is not None or not e.chunks or e.waiting or e.joined_ready or e.step_a != 1 or e.role != "both":
        return False
    if e.scheduler.cost is not step_cost or e.scheduler.timer is None or len(e.chunks) != len(e.prefilling):
        return False
    return all(seq.computed + n == seq.target for seq, n in e.chunks)


def _plan_decode(e: Engine, now: float) -> bool:
    """Scheduler.schedule_step for a batch that only decodes: the members' new blocks, then the step is in
    flight. False (and nothing changed) when the blocks are short: the loop's plan preempts."""
    cohort = e.cohort
    if e.grow and not e.pool.try_allocate_anonymous(cohort.cnt[(-cohort.A) % e.bs]):
        return False
    e.step_a = 1
    e.step_decoding = cohort.n
    e.busy = True
    e.step_start = now
    return True


def _limit(ends: list[float], top: float, next_sample: float) -> int:
    """Steps that may finish: those ending before the next sample and no later than the next event
    (a step end goes before an event at the same instant), and not the last (what follows it is not
    computed). Of the two counts the smaller is the one of the sooner bound."""
    if top < next_sample:
        return bisect_right(ends, top, 0, len(ends) - 1)
    return bisect_left(ends, next_sample, 0, len(ends) - 1)


def _walk(e: Engine, ends: list[float], starts: list[int], ns: list[int], a0: int, i: int, top: float,
          next_sample: float) -> tuple[float, float | None] | None:
    """Apply the stretch: runs of plain steps at once, then each step at which members finish as
    end_step would (records, freed blocks, the runner's callbacks). Step j ends at ends[j], is planned
    at A = a0 + j and finishing it makes A = a0 + j + 1; the batch of step j + 1 is ns[m] for the last
    starts[m] <= j. Step i is in flight.

    end_step's `now - step_start` per step, and its sums (busy and sequence time, steps) in the same
    order once the stretch is over: nothing the callbacks run reads them, and they are added one step
    after another, as end_step adds them. The step gaps are appended as the steps finish
    (a member that leaves reads how many there are)."""
    cohort, pool, runner_heap = e.cohort, e.pool, e.sink.heap
    members, gaps, cnt, bs, grow = cohort.heap, cohort.gaps, cohort.cnt, e.bs, e.grow
    i0 = i
    n0 = cohort.n  # the batch of the step in flight
    running = len(e.running)  # at the first step's end, the most the stretch has (none is admitted)
    limit = _limit(ends, top, next_sample)
    size = len(ends)
    durs = list(map(sub, ends[:limit + 1], chain((e.step_start,), ends)))
    out = None
    while True:
        c = size if not members else min(size, members[0][0] - a0 - 1)  # the step whose end completes someone
        k = c if c < limit else limit
        if k > i:  # steps i … k − 1 finish, none completing anyone, and steps i + 1 … k are planned
            blocks = 0
            if grow:
                # a member takes a block whenever its length reaches a multiple of the block size: every
                # bs steps one per member, and the last (k − i) % bs steps one per member of the residues
                # (−A) % bs they pass, which run up from that of the last step (cyclically)
                steps = k - i
                blocks = (steps // bs) * cohort.n
                rem = steps % bs
                if rem:
                    lo = (-a0 - k) % bs
                    blocks += sum(cnt[lo:lo + rem])
                    if lo + rem > bs:
                        blocks += sum(cnt[:lo + rem - bs])
                if blocks and not pool.try_allocate_anonymous(blocks):  # short on the way: the steps that fit
                    grown = a0 + 1 + np.arange(i, k, dtype=np.int64)
                    need = np.asarray(cnt, dtype=np.int64)[(-grown) % bs].cumsum()
                    k = i + int(need.searchsorted(pool.num_free, "right"))
                    blocks = int(need[k - i - 1]) if k > i else 0
                    if k > i and not pool.try_allocate_anonymous(blocks):
                        raise RuntimeError(f"closed-form decode: the KV pool refused {blocks} blocks it counted "
                                           "as free")
        if k > i:
            gaps.fromlist(durs[i:k])
            cohort.A += k - i
            e.last_step_end = e.step_start = ends[k - 1]
            i = k
        if i < c or i >= limit:
            break  # a KV allocation, an event or a sample comes first, or the steps computed ran out
        # step i ends with completions: end_step's decode part (paused_s is 0: see eligible)
        e.step_decoding = cohort.n
        e.sink.now = t = ends[i]
        e.last_step_end = t
        gaps.append(durs[i])
        cohort.A += 1
        e.finish_decoded(t)
        i += 1
        if (not cohort.n or e.waiting or e.chunks or e.joined_ready
                or cohort.n != ns[bisect_right(starts, i - 1) - 1]):
            out = t, None  # the loop plans what comes next
            break
        if runner_heap and runner_heap[0][0] < top:  # a callback scheduled an event (a next turn)
            top = runner_heap[0][0]
            limit = min(limit, _limit(ends, top, next_sample))
        if i >= limit or not _plan_decode(e, t):
            out = t, None
            break
    if i == i0:
        return None
    # end_step's sums over steps i0 … i − 1, in order: step 0 (in flight when the stretch began) had
    # n0 members, step j + 1 those planned at ns[m] for the segment m holding j
    stats = e.stats
    stats.steps += i - i0
    busy, seq = stats.busy_s, stats.seq_s
    j = i0
    if j == 0:
        d = durs[0]
        busy += d
        seq += d * n0
        j = 1
    for m in range(len(starts)):
        hi = starts[m + 1] + 1 if m + 1 < len(starts) else i
        if hi > i:
            hi = i
        if hi > j:
            n = ns[m]
            for d in durs[j:hi]:
                busy += d
                seq += d * n
            j = hi
    stats.busy_s, stats.seq_s = busy, seq
    if running > stats.peak_running:
        stats.peak_running = running
    if out is not None:
        return out
    e.step_decoding = cohort.n
    return ends[i - 1], ends[i]


