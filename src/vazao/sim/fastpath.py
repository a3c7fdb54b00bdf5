"""Decode-only stretches in closed form: exact to the step-by-step loop.

At low load most engine steps repeat the same decode batch with each context one token longer:
nothing waits, no prompt is in progress, and the next event (an arrival, a completion, a failed KV
block allocation, a timeline sample) is many steps away. `advance` runs such a stretch at once: the
step times are `roofline` over arrays of contexts (the same operations in the same order as the scalar
path, so the same doubles), step ends are a running sum (numpy's accumulate adds in order, as the loop
does), and the KV blocks the members grow into are taken in one allocation (the pool's anonymous
allocations add up exactly: same evictions, same free count). It stops one step before anything the
loop would do differently, and the loop takes over from there.
"""

from __future__ import annotations

import numpy as np

from vazao.physics.step import BatchShape, roofline, step_cost, step_work

MIN_STEPS = 8  # below this the arrays cost more than the steps they replace
MAX_STEPS = 4096  # bounds the arrays (memory stays flat with run length)


def eligible(e) -> bool:
    """The step in flight decodes the whole cohort one token each, and the next one will too."""
    if e.spec is not None or e.chunks or e.joined_ready or e.waiting or e.prefilling or e.step_a != 1:
        return False
    if e.scheduler.cost is not step_cost or not e.cohort.n or e.step_decoding != e.cohort.n:
        return False
    s = e.dep.consts.shard
    return not (s.window and s.kv_bytes_per_token_window)  # sliding windows take the scalar path's min()


def _horizon(e, end: float, stop_t: float) -> int:
    """Steps worth computing: until the first completion, and about as many as fit before `stop_t`
    at the last step's length (steps only grow longer, so this is rarely short)."""
    cohort = e.cohort
    r = min(MAX_STEPS, cohort.heap[0][0] - cohort.A - 1)
    last = end - e.step_start
    if stop_t != float("inf") and last > 0:
        r = min(r, int((stop_t - end) / last) + 2)
    return r


def advance(e, end: float, top: float, next_sample: float) -> tuple[float, float] | None:
    """Finish the step in flight (ending at `end`) and R − 1 more decode steps, planning each next one,
    as the loop would with no event before `top` and no sample before `next_sample`. Returns (the last
    finished step's end, the end of the step now in flight), or None to leave it to the loop."""
    if end >= next_sample or not eligible(e):
        return None
    r = _horizon(e, end, min(top, next_sample))
    if r < MIN_STEPS:
        return None
    cohort, pool = e.cohort, e.pool
    n, a0 = cohort.n, cohort.A
    grown = a0 + 1 + np.arange(r, dtype=np.int64)  # the cohort's A when step j + 1 is planned
    ctx = cohort.sum_base + n * grown  # what step j + 1 reads
    # the scheduler's shape: pairs = ctx + n plus 0.0 from the (empty) prompt sums, a float
    times = roofline(step_work(e.dep.consts.shard, BatchShape(n, n, ctx, ctx + n + 0.0, n)), e.dep.consts)[4]
    ends = np.empty(r + 1)
    ends[0] = end
    ends[1:] = times
    np.cumsum(ends, out=ends)  # ends[j]: when step j ends (0: the one in flight)
    # step ends only grow, and so do the blocks taken: each bound is a search
    head = ends[:r]
    steps = min(int(head.searchsorted(next_sample, "left")), int(head.searchsorted(top, "right")))
    if e.grow:
        need = np.cumsum(np.asarray(cohort.cnt, dtype=np.int64)[(-grown) % e.bs])
        steps = min(steps, int(need.searchsorted(pool.num_free, "right")))
    if steps < MIN_STEPS:
        return None
    _apply(e, ends, steps, int(need[steps - 1]) if e.grow else 0)
    return float(ends[steps - 1]), float(ends[steps])


def _apply(e, ends: np.ndarray, steps: int, blocks: int) -> None:
    """The state after `steps` rounds of end_step + plan."""
    stats, cohort = e.stats, e.cohort
    durs = np.diff(ends[:steps], prepend=e.step_start)  # end_step's `now - step_start`
    stats.steps += steps
    n = cohort.n
    busy, seq_s = stats.busy_s, stats.seq_s
    for d in durs.tolist():  # one add at a time, in order, as end_step does
        busy += d
        seq_s += d * n
    stats.busy_s, stats.seq_s = busy, seq_s
    if len(e.running) > stats.peak_running:
        stats.peak_running = len(e.running)
    cohort.gaps.frombytes(durs.tobytes())
    cohort.A += steps
    if blocks and not e.pool.try_allocate_anonymous(blocks):
        raise RuntimeError(f"closed-form decode: the KV pool refused {blocks} blocks it counted as free")
    e.last_step_end = float(ends[steps - 1])
    e.step_start = float(ends[steps - 1])
