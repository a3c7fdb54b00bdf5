"""The latency–throughput curve of a plan's best deployments: each simulated at fractions and multiples
of the load it was sized for, so a reader sees how much headroom the winner has and where the runners-up
bend. One replica is simulated at its share (a Poisson stream split over r replicas is r Poisson
streams, a closed loop's users split evenly), as the plan judged it, and its throughput counted for all
r replicas."""

from __future__ import annotations

from dataclasses import dataclass

from vazao.plan.evaluate import Candidate, _deployment, steady_workload
from vazao.plan.space import PlanInputs
from vazao.workload.traffic import Traffic

LEVELS = (0.5, 0.75, 1.0, 1.25, 1.5)  # of the load each deployment was sized for
TOP = 3


@dataclass(frozen=True)
class CurvePoint:
    """One level of one deployment's curve: the load asked, and what the run delivered."""

    factor: float  # of the planned load (the traffic, or the throughput objective's capacity)
    level: float  # requests/s (open loop) or concurrent users (closed loop), the whole deployment
    output_tokens_per_s: float  # the whole deployment
    ttft_p95_s: float | None
    tpot_p95_s: float | None
    met: bool

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Curve:
    label: str
    rank: int  # 1-based place in the plan's ranking
    axis: str  # rate | concurrency
    points: tuple[CurvePoint, ...]

    def to_json(self) -> dict:
        return {"label": self.label, "rank": self.rank, "axis": self.axis, "points": [p.to_json() for p in self.points]}


def _load(c: Candidate, inp: PlanInputs) -> Traffic:
    """The whole deployment's planned load: the offered traffic, or (throughput objective) its capacity."""
    if inp.objective == "throughput" and c.capacity_req_s:
        return Traffic(rate=c.capacity_req_s)
    return inp.traffic


def curve_point(c: Candidate, inp: PlanInputs, factor: float) -> CurvePoint:
    from vazao.cost.capacity import slo_checks
    from vazao.physics.deployment import make_deployment
    from vazao.sim.config import DisaggConfig, SimConfig
    from vazao.sim.run import simulate

    load = _load(c, inp)
    if load.rate is not None:
        whole = Traffic(rate=load.rate * factor)
        level = whole.rate
    else:
        whole = Traffic(concurrency=max(1, round(load.concurrency * factor)))
        level = float(whole.concurrency)
    if c.disagg:  # the pools work together: the whole deployment at the whole load, as the plan judged it
        sh = c.shape
        dep = make_deployment(sh.model, sh.gpu, sh.fmt, sh.kv, count=c.count, tp=sh.tp, pp=sh.pp, engine=sh.engine,
                             profile=inp.profile)
        share, copies, split = whole, 1, DisaggConfig(*c.disagg)
    else:
        dep, share, copies, split = _deployment(c.shape, inp.profile), whole.per_replica(c.replicas), c.replicas, None
    w = steady_workload(inp, share)
    cfg = SimConfig.from_engine(dep.engine, max_num_seqs=c.max_batch, max_context=c.context or None, disagg=split)
    res = simulate(dep, w, cfg, slo=inp.slo)
    checks, _ = slo_checks(dep, res.summary, inp.slo)
    s = res.summary
    return CurvePoint(factor, level, s.output_tokens_per_s * copies, s.ttft_s.p95, s.tpot_s.p95,
                      all(k.met for k in checks))


def curve_jobs(candidates: tuple[Candidate, ...], top: int = TOP) -> list[tuple[int, Candidate]]:
    """(rank, candidate) of the best `top` simulated candidates."""
    sim = [(i, c) for i, c in enumerate(candidates, 1) if c.source == "simulated"]
    return sim[:top]
