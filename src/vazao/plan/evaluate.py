"""One deployment shape against the traffic and the SLO: pruned, estimated, then simulated.

1. Prune (cheap, analytic): the format or engine is refused on that silicon, the weights and one
   request's KV do not fit, one request alone already misses a TTFT or TPOT limit, no rental price.
2. Estimate: the largest batch whose decode step meets the TPOT limit, and the request rate one
   replica carries at it with every prompt's prefill taking its turn on the GPU:
       rate = 1 / (prefill_s + output_tokens × step_s(b) / b)
   → the replicas the traffic needs, and a first $/Mtok to rank shapes by.
3. Simulate (the chosen few): one replica at its share of the traffic (a Poisson stream split over r
   replicas is r Poisson streams); more replicas while a limit is missed. A limit is met when the
   pessimistic edge of the prediction's 80% band is within it; met by the prediction but not by the
   band's edge is `marginal`; an uncalibrated profile has no band, and says so."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vazao.errors import VazaoError
from vazao.plan.space import Lengths, PlanInputs, Shape, Traffic

HOURS_PER_MONTH = 730.0
CAPACITY_MARGIN = 0.85  # the closed form ignores queueing: aim the first replica count below its capacity
MAX_TRIES = 4


@dataclass(frozen=True)
class Check:
    """One SLO term: the predicted value, its band's pessimistic edge, the limit."""

    key: str
    value: float | None
    edge: float | None  # None: no band (uncalibrated profile)
    limit: float

    @property
    def met(self) -> bool:
        v = self.edge if self.edge is not None else self.value
        return v is not None and v <= self.limit

    @property
    def met_by_value(self) -> bool:
        return self.value is not None and self.value <= self.limit

    @property
    def ratio(self) -> float:
        v = self.edge if self.edge is not None else self.value
        return math.inf if v is None else v / self.limit

    def to_json(self) -> dict:
        return {"key": self.key, "value_s": self.value, "pessimistic_s": self.edge, "limit_s": self.limit,
                "met": self.met}


@dataclass(frozen=True)
class Candidate:
    shape: Shape
    kv_format: str
    replicas: int
    max_batch: int
    usd_per_hour: float | None  # None: no rental price for this accelerator (give one in the inputs)
    usd_per_mtok: float | None
    usd_per_month: float | None
    meets_slo: bool
    marginal: bool
    source: str  # simulated | analytic
    checks: tuple[Check, ...]
    bands: dict = field(default_factory=dict)  # SLO key → (low_s, high_s, note)
    summary: object | None = None  # RunSummary of one replica (simulated)
    quality: float | None = None  # recovery vs 16-bit; None: no published figure
    quality_source: str = ""
    detail: str = ""

    @property
    def count(self) -> int:
        return self.replicas * self.shape.gpus_per_replica

    @property
    def binding(self) -> str | None:
        """The SLO term closest to (or furthest past) its limit."""
        return max(self.checks, key=lambda c: c.ratio).key if self.checks else None


@dataclass(frozen=True)
class Pruned:
    shape: Shape
    reason: str  # a category: refused, does not fit, TTFT floor, TPOT floor, GPUs, price, quality
    detail: str


def _limit(slo, metric: str) -> float | None:
    vals = [v for k, v in slo.limits.items() if k.split("_", 1)[0] == metric]
    return min(vals) if vals else None


def _deployment(shape: Shape, profile: str | None):
    from vazao.scenario import deployment_for

    return deployment_for(shape.model, shape.gpu, shape.fmt, shape.kv, count=shape.gpus_per_replica, tp=shape.tp,
                          pp=shape.pp, engine=shape.engine, profile=profile)


def _quality(dep) -> tuple[float | None, str]:
    """Published recovery of this format on this model family (None: no published figure)."""
    from vazao.plan.quality import quality_of

    q = quality_of(dep.model.family, dep.weight_format.name)
    return (q.recovery, q.source) if q is not None else (None, "")


def max_batch_within(dep, limit_s: float | None, cap: int, context: float) -> int:
    """Largest batch ≤ cap whose decode step takes at most limit_s (cap when there is no limit)."""
    from vazao.estimate import decode_cost

    ctx = max(1, int(context))
    if limit_s is None:
        return cap
    if decode_cost(dep, 1, ctx).time_s > limit_s:
        return 0
    lo, hi = 1, cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if decode_cost(dep, mid, ctx).time_s <= limit_s else (lo, mid - 1)
    return lo


def analytic_rate(dep, batch: int, lengths: Lengths) -> float:
    """Requests/s one replica serves at `batch` (see the module docstring)."""
    from vazao.estimate import decode_cost
    from vazao.physics.prompt import prompt_prefill

    ctx = max(1, int(lengths.prompt_mean + lengths.output_mean / 2))
    step = decode_cost(dep, batch, ctx).time_s
    prefill = prompt_prefill(dep, max(1, round(lengths.prompt_mean))).time_s
    return 1.0 / (prefill + lengths.output_mean * step / batch)


@dataclass(frozen=True)
class Screen:
    """What the analytic pass knows about a shape that survived pruning."""

    shape: Shape
    kv_format: str
    replicas: int
    batch: int
    usd_per_hour_per_gpu: float | None  # None: the catalog has no rental price (owned hardware)
    estimate_usd_per_mtok: float
    quality: float | None
    quality_source: str


def screen(shape: Shape, inp: PlanInputs, lengths: Lengths) -> Screen | Pruned:
    """Steps 1 and 2 of the module docstring."""
    from vazao.physics.memory import fit
    from vazao.physics.prompt import prompt_prefill

    try:
        dep = _deployment(shape, inp.profile)
    except VazaoError as exc:
        return Pruned(shape, "refused", str(exc))
    price = inp.gpu_prices.get(dep.accelerator.id, dep.accelerator.usd_per_hour)  # None: owned, unpriced
    try:
        f = fit(dep, max(1, lengths.context_p99))
    except VazaoError as exc:
        return Pruned(shape, "does not fit", str(exc))
    if not f.fits or f.max_concurrent_sequences < 1:
        return Pruned(shape, "does not fit", f.reason or "no room for one request's KV cache")
    quality, qsource = _quality(dep)
    if inp.quality_floor is not None and quality is not None and quality < inp.quality_floor:
        return Pruned(shape, "quality", f"{dep.weight_format.name} on {dep.model.family}: {quality:.1%} of 16-bit "
                                        f"quality < floor {inp.quality_floor:.1%} ({qsource})")
    ttft_limit = _limit(inp.slo, "ttft")
    alone = prompt_prefill(dep, max(1, round(lengths.prompt_mean))).time_s + dep.engine.request_overhead_s
    if ttft_limit is not None and alone > ttft_limit:
        return Pruned(shape, "TTFT floor", f"one {lengths.prompt_mean:.0f}-token prompt alone takes "
                                           f"{alone * 1e3:.0f} ms > {ttft_limit * 1e3:.0f} ms")
    tpot_limit = min([x for x in (_limit(inp.slo, "tpot"), _limit(inp.slo, "itl")) if x is not None], default=None)
    cap = min(dep.engine.max_num_seqs, f.max_concurrent_sequences)
    ctx = lengths.prompt_mean + lengths.output_mean / 2
    batch = max_batch_within(dep, tpot_limit, cap, ctx)
    if batch < 1:
        return Pruned(shape, "TPOT floor", f"one sequence alone decodes slower than {tpot_limit * 1e3:.0f} ms/token")
    rate = analytic_rate(dep, batch, lengths) * CAPACITY_MARGIN
    traffic = inp.traffic
    if traffic.rate is not None:
        replicas = max(1, math.ceil(traffic.rate / rate))
        served_out = traffic.rate * lengths.output_mean
    else:
        replicas = max(1, math.ceil(traffic.concurrency / batch))
        served_out = min(traffic.concurrency, replicas * batch) * rate / batch * lengths.output_mean
    gpus = replicas * shape.gpus_per_replica
    if gpus > inp.max_gpus:
        return Pruned(shape, "GPUs", f"needs about {gpus} GPUs ({replicas} replicas) for {traffic.describe()}, "
                                     f"over the {inp.max_gpus} allowed")
    est = gpus * price / (served_out * 3600) * 1e6 if price is not None else math.inf
    return Screen(shape, dep.kv_format.name, replicas, batch, price, est, quality, qsource)


def _checks(dep, summary, slo, regime: str) -> tuple[tuple[Check, ...], dict]:
    from vazao.bands import deployment_band

    checks, bands = [], {}
    for key, limit in slo.limits.items():
        metric, pct = key.split("_", 1)
        value = getattr(summary, f"{metric}_s").get(pct)
        b = deployment_band(dep, regime, value, latency=True) if value else None
        if b:
            bands[key] = b
        checks.append(Check(key, value, b[1] if b else None, limit))
    return tuple(checks), bands


def simulate_screen(s: Screen, inp: PlanInputs, lengths: Lengths) -> Candidate | Pruned:
    """Step 3 of the module docstring."""
    from vazao.sim.config import SimConfig
    from vazao.sim.run import simulate
    from vazao.workload import load_workload

    dep = _deployment(s.shape, inp.profile)
    replicas = s.replicas
    last = None
    for _ in range(MAX_TRIES):
        if replicas * s.shape.gpus_per_replica > inp.max_gpus:
            break
        share: Traffic = inp.traffic.per_replica(replicas)
        w = load_workload(inp.workload, requests=inp.requests, rate=share.rate, concurrency=share.concurrency,
                          seed=inp.seed)
        # the engine capped at the batch that meets the TPOT limit: what the emitted command sets
        result = simulate(dep, w, SimConfig.from_engine(dep.engine, max_num_seqs=s.batch), slo=inp.slo)
        checks, bands = _checks(dep, result.summary, inp.slo, "serving")
        last = (replicas, result, checks, bands)
        if all(c.met_by_value for c in checks):
            break
        worst = max(c.value / c.limit if c.value else 2.0 for c in checks)
        replicas = max(replicas + 1, math.ceil(replicas * min(worst, 2.0)))
    if last is None:
        return Pruned(s.shape, "GPUs", f"needs over {inp.max_gpus} GPUs for {inp.traffic.describe()}")
    replicas, result, checks, bands = last
    usd_h = _usd_h(s, replicas)
    out_tok_s = result.summary.output_tokens_per_s * replicas
    meets = all(c.met for c in checks)
    marginal = not meets and all(c.met_by_value for c in checks)
    note = "" if bands else "no band: the engine profile is not calibrated"
    if inp.quality_floor is not None and s.quality is None:
        note = "; ".join(x for x in (note, "quality unknown: no published figure for this format and family") if x)
    return Candidate(
        shape=s.shape, kv_format=s.kv_format, replicas=replicas, max_batch=s.batch,
        usd_per_hour=usd_h,
        usd_per_mtok=usd_h / (out_tok_s * 3600) * 1e6 if usd_h is not None and out_tok_s > 0 else None,
        usd_per_month=usd_h * HOURS_PER_MONTH if usd_h is not None else None,
        meets_slo=meets, marginal=marginal, source="simulated",
        checks=checks, bands=bands, summary=result.summary, quality=s.quality, quality_source=s.quality_source,
        detail="; ".join(x for x in (note, f"peak batch {result.peak_running}, {result.preemptions} preemptions")
                         if x))


def _usd_h(s: Screen, replicas: int) -> float | None:
    p = s.usd_per_hour_per_gpu
    return None if p is None else replicas * s.shape.gpus_per_replica * p


def analytic_candidate(s: Screen, inp: PlanInputs) -> Candidate:
    """A screened shape the search did not simulate: its closed-form figures, marked as such."""
    usd_h = _usd_h(s, s.replicas)
    return Candidate(shape=s.shape, kv_format=s.kv_format, replicas=s.replicas, max_batch=s.batch,
                     usd_per_hour=usd_h, usd_per_mtok=s.estimate_usd_per_mtok if usd_h is not None else None,
                     usd_per_month=usd_h * HOURS_PER_MONTH if usd_h is not None else None,
                     meets_slo=False, marginal=False, source="analytic", checks=(), quality=s.quality,
                     quality_source=s.quality_source,
                     detail="not simulated: ranked below the simulated shapes by the closed-form estimate")

