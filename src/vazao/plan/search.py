"""The search: screen every shape, simulate the most promising, rank, find the Pareto front.

Screening is closed-form and cheap (every shape, in this process). Simulation is the cost: only the
`simulate_top` shapes with the lowest estimated $/Mtok are simulated (as many more, up to EXTRA_ROUNDS times,
while none of them meets the SLO or a shape not yet simulated is estimated cheaper than the cheapest that
met), across local processes (the
standard library) or a Ray cluster (`backend="ray"`, the optional extra); the rest are listed with
their estimates and marked `analytic`. Ranking (cost objective): shapes that meet the SLO (band edge
within every limit) first, then marginal ones, then misses, each by $/month; the throughput objective
ranks those that meet by output tok/s per GPU."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from vazao.errors import VazaoError
from vazao.plan.curves import LEVELS, Curve, curve_jobs, curve_point
from vazao.plan.evaluate import (
    DISAGG_ENGINES,
    DISAGG_TRIES,
    Candidate,
    Pruned,
    Screen,
    analytic_candidate,
    disagg_splits,
    screen,
    simulate_disagg,
    simulate_screen,
    simulate_throughput,
)
from vazao.plan.space import Lengths, PlanInputs, shapes

Progress = Callable[[int, int], None]
BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class PlanResult:
    inputs: PlanInputs
    lengths: Lengths
    candidates: tuple[Candidate, ...]  # best first
    pareto: tuple[Candidate, ...]
    pruned: tuple[Pruned, ...]
    binding_constraint: str | None
    closest_miss: Candidate | None
    backend: str
    curves: tuple[Curve, ...] = ()  # latency–throughput curves of the best few (inputs.curves)

    @property
    def winner(self) -> Candidate | None:
        c = self.candidates[0] if self.candidates else None
        return c if c is not None and c.meets_slo else None

    def pruned_by_reason(self) -> dict[str, int]:
        return dict(Counter(p.reason for p in self.pruned))


def _simulate_one(args) -> Candidate | Pruned:
    s, inp, lengths = args
    try:
        if inp.objective == "throughput":
            return simulate_throughput(s, inp, lengths)
        return simulate_screen(s, inp, lengths)
    except VazaoError as exc:
        return Pruned(s.shape, "simulation", str(exc))


def _disagg_one(args) -> Candidate | None:
    c, split, inp, lengths = args
    try:
        return simulate_disagg(c, split, inp, lengths)
    except VazaoError:
        return None  # a split the simulator refuses (a pool whose KV cache holds no request) is not a candidate


def _disagg(cands: list[Candidate], inp: PlanInputs, lengths: Lengths, workers: int) -> list[Candidate]:
    """The best simulated colocated candidates on engines that run prefill and decode apart, as P:D splits."""
    if not inp.disagg or inp.objective != "cost":
        return []
    best = [c for c in sorted(cands, key=_rank_key) if c.source == "simulated" and c.disagg is None
            and c.shape.engine in DISAGG_ENGINES][:DISAGG_TRIES]
    jobs = [(c, split, inp, lengths) for c in best for split in disagg_splits(c, inp)]
    return [r for r in _map_local(jobs, workers, None, _disagg_one) if r is not None]


def _curve_one(args):
    c, inp, factor = args
    try:
        return curve_point(c, inp, factor)
    except VazaoError:
        return None  # a level the simulator refuses (too many requests in flight) leaves a gap


def _curves(cands: list[Candidate], inp: PlanInputs, workers: int) -> tuple[Curve, ...]:
    picked = curve_jobs(tuple(cands), inp.curves)
    jobs = [(c, inp, f) for _, c in picked for f in LEVELS]
    points = _map_local(jobs, workers, None, _curve_one)
    axis = "rate" if inp.traffic.rate is not None or inp.objective == "throughput" else "concurrency"
    out = []
    for k, (rank, c) in enumerate(picked):
        pts = tuple(p for p in points[k * len(LEVELS):(k + 1) * len(LEVELS)] if p is not None)
        out.append(Curve(c.shape.label() + (f" × {c.replicas}" if c.replicas > 1 else ""), rank, axis, pts))
    return tuple(out)


def _map_local(jobs: list, workers: int, progress: Progress | None, fn: Callable = _simulate_one) -> list:
    out: list = [None] * len(jobs)
    if workers <= 1 or len(jobs) <= 1:
        for i, j in enumerate(jobs):
            out[i] = fn(j)
            if progress:
                progress(i + 1, len(jobs))
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(fn, j): i for i, j in enumerate(jobs)}
        from concurrent.futures import as_completed

        for done, fut in enumerate(as_completed(futures), 1):
            out[futures[fut]] = fut.result()
            if progress:
                progress(done, len(jobs))
    return out


def _rank_key(c: Candidate) -> tuple:
    """Meets, marginal, misses, estimated only; within a tier the lowest $/month (at a fixed traffic the
    bill is what differs; $/Mtok at the offered traffic orders the same), then the most headroom to the
    SLO (the worst limit's value / limit), then the fewest GPUs."""
    tier = 0 if c.meets_slo else 1 if c.marginal else 2 if c.source == "simulated" else 3
    month = c.usd_per_month if c.usd_per_month is not None else math.inf
    worst = max((k.ratio for k in c.checks), default=math.inf)
    return tier, month, worst, c.count, c.shape


def _throughput_key(c: Candidate) -> tuple:
    """The throughput objective: meets, then misses, then estimated only; within a tier the most output
    tok/s per GPU, then the cheapest month, then the most headroom to the SLO."""
    tier = 0 if c.meets_slo else 2 if c.source == "simulated" else 3
    month = c.usd_per_month if c.usd_per_month is not None else math.inf
    worst = max((k.ratio for k in c.checks), default=math.inf)
    return tier, -(c.tokens_per_s_per_gpu or 0.0), month, worst, c.shape


def pareto_front(cands: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """Simulated candidates within the SLO (met or marginal) that no other beats on all of: $/Mtok,
    the worst SLO ratio (latency headroom), quality."""
    pts = [c for c in cands if c.source == "simulated" and (c.meets_slo or c.marginal)
           and c.usd_per_mtok is not None and math.isfinite(c.usd_per_mtok)]

    def axes(c: Candidate) -> tuple[float, float, float]:
        worst = max((k.ratio for k in c.checks), default=0.0)
        return c.usd_per_mtok, worst, -(c.quality if c.quality is not None else 0.0)

    front = []
    for c in pts:
        a = axes(c)
        if not any(all(x <= y for x, y in zip(axes(o), a, strict=True)) and axes(o) != a for o in pts):
            front.append(c)
    return tuple(sorted(front, key=lambda c: c.usd_per_mtok))


EXTRA_ROUNDS = 2  # rounds of simulate_top more shapes when none simulated meets the SLO


def run_plan(inp: PlanInputs, *, workers: int | None = None, backend: str = "local", address: str | None = None,
             fallback_local: bool = False, progress: Progress | None = None) -> PlanResult:
    """Search `inp`; with backend="ray", `fallback_local` runs the simulations locally when the cluster
    cannot be reached (and the result says so in `backend`) instead of failing."""
    from vazao.workload import load_workload

    if backend not in BACKENDS:
        raise VazaoError(f"plan backend {backend!r}: one of {', '.join(BACKENDS)}")
    lengths = Lengths.of(load_workload(inp.workload, seed=inp.seed))
    screened: list[Screen] = []
    pruned: list[Pruned] = []
    for shape in shapes(inp):
        r = screen(shape, inp, lengths)
        (pruned if isinstance(r, Pruned) else screened).append(r)
    if inp.objective == "throughput":
        screened.sort(key=lambda s: (-s.estimate_tps_per_gpu, s.shape))
    else:
        screened.sort(key=lambda s: (s.estimate_usd_per_mtok, s.shape))
    chosen, rest = screened[:inp.simulate_top], screened[inp.simulate_top:]
    used = backend
    cands: list[Candidate] = []
    # The estimate ranks by the prediction; the judgement holds the simulated run to its band's edge. When none
    # of the shapes simulated meets the SLO so judged, the next ones by the estimate are simulated in turn (as
    # many again each round) until one does or none is left: an estimate that ties or errs must not end the
    # search with "no deployment meets" while a shape it ranked lower would. At most EXTRA_ROUNDS more rounds:
    # a search where nothing meets stays bounded.
    rounds = 0
    while chosen:
        rounds += 1
        jobs = [(s, inp, lengths) for s in chosen]
        if used == "ray":
            from vazao.plan.ray_backend import BackendUnavailable, map_ray

            try:
                results = map_ray(_simulate_one, jobs, address=address, progress=progress)
            except BackendUnavailable as exc:
                if not fallback_local:
                    raise
                used = f"local (ray unavailable: {exc})"
                results = _map_local(jobs, workers or os.cpu_count() or 1, progress)
        else:
            results = _map_local(jobs, workers or os.cpu_count() or 1, progress)
        cands += [r for r in results if isinstance(r, Candidate)]
        pruned += [r for r in results if isinstance(r, Pruned)]
        if inp.objective == "throughput" or rounds > EXTRA_ROUNDS:
            break
        met = [c.usd_per_mtok for c in cands if c.meets_slo and c.usd_per_mtok is not None]
        if met:
            # a simulated shape may meet only with more replicas than its estimate had, and so cost more than
            # a shape the estimate ranked below it: those cheaper by their estimate are simulated before one
            # is crowned (Llama-3.1-8B FP8 on L4 at 1 req/s, TPOT 47 ms: 2× tp1 estimated at $1.32/Mtok met
            # as 4× tp1 at $2.64 while one tp2 pair, estimated at $1.32, met at $1.32)
            cheaper = [s for s in rest if s.estimate_usd_per_mtok < min(met)]
            if not cheaper:
                break
            chosen = cheaper[:inp.simulate_top]
            rest = [s for s in rest if s not in chosen]
            continue
        chosen, rest = rest[:inp.simulate_top], rest[inp.simulate_top:]
    cands += _disagg(cands, inp, lengths, workers or os.cpu_count() or 1)
    cands += [analytic_candidate(s, inp) for s in rest]
    cands.sort(key=_throughput_key if inp.objective == "throughput" else _rank_key)
    simulated = [c for c in cands if c.source == "simulated"]
    winner = cands[0] if cands and cands[0].meets_slo else None
    miss = None
    if winner is None and simulated:
        miss = min(simulated, key=lambda c: max(k.ratio for k in c.checks) if c.checks else math.inf)
    binding = (winner or miss).binding if (winner or miss) else None
    curves = _curves(cands, inp, workers or os.cpu_count() or 1) if inp.curves else ()
    return PlanResult(inp, lengths, tuple(cands), pareto_front(cands), tuple(pruned), binding, miss, used, curves)
