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
from functools import cache

from vazao.cost.money import HOURS_PER_MONTH
from vazao.errors import VazaoError
from vazao.plan.space import Lengths, PlanInputs, Shape, Traffic

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
    context: int = 0  # tokens per sequence the command sets (--max-model-len, a llama.cpp slot); 0: not set

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


def _latency_terms(slo) -> str:
    return ", ".join(f"{k} ≤ {v * 1e3:g} ms" for k, v in slo.limits.items() if k.split("_", 1)[0] != "e2e")


@cache
def _demand(workload: str, seed: int):
    from vazao.cost.capacity import demand_of
    from vazao.workload import load_workload

    return demand_of(load_workload(workload, seed=seed))


def slo_cap(dep, inp: PlanInputs, cap: int):
    """The batch cap the emitted command sets: cost.capacity.batch_cap (the one capacity policy, which
    `vazao cost selfhost` uses too) at the workload's mean request, history and cached prefix included."""
    from vazao.cost.capacity import batch_cap

    d = _demand(inp.workload, inp.seed)
    cached = round(d.cached_tokens) if dep.engine.prefix_caching else 0
    return batch_cap(dep, max(1, round(d.prompt_tokens)), max(1, round(d.output_tokens)), inp.slo.limits, cap,
                     cached)


def optimistic_rate(dep, lengths: Lengths, cap: int) -> float:
    """An upper bound on the requests/s one replica serves: every slot full (batch = cap) and the
    prompts' prefill free (as if a prefix cache served them all)."""
    from vazao.estimate import decode_cost

    ctx = max(1, int(lengths.prompt_mean + lengths.output_mean / 2))
    return cap / (max(lengths.output_mean, 1.0) * decode_cost(dep, cap, ctx).time_s)


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
    context: int = 0  # tokens per sequence the command sets (--max-model-len, a llama.cpp slot)


def screen(shape: Shape, inp: PlanInputs, lengths: Lengths) -> Screen | Pruned:
    """Steps 1 and 2 of the module docstring."""
    from vazao.cost.capacity import sequence_limit
    from vazao.physics.memory import fit
    from vazao.physics.prompt import prompt_prefill

    try:
        dep = _deployment(shape, inp.profile)
    except VazaoError as exc:
        return Pruned(shape, "refused", str(exc))
    price = inp.gpu_prices.get(dep.accelerator.id, dep.accelerator.usd_per_hour)  # None: owned, unpriced
    # the engine is set to hold the workload's longest request (vLLM refuses to start when its KV cache
    # cannot hold one max_model_len sequence; a llama.cpp slot reserves all of it)
    context = lengths.context(dep.model.max_context)
    try:
        f = fit(dep, context)
    except VazaoError as exc:
        return Pruned(shape, "does not fit", str(exc))
    if not f.fits or f.max_concurrent_sequences < 1:
        return Pruned(shape, "does not fit", f.reason or f"no room for one {context:,}-token request's KV cache")
    quality, qsource = _quality(dep)
    if inp.quality_floor is not None and quality is None:
        return Pruned(shape, "quality", f"{dep.weight_format.name} on {dep.model.family}: quality unknown (no "
                                        f"published figure), so it cannot be shown to meet the floor "
                                        f"{inp.quality_floor:.1%}")
    if inp.quality_floor is not None and quality is not None and quality < inp.quality_floor:
        return Pruned(shape, "quality", f"{dep.weight_format.name} on {dep.model.family}: {quality:.1%} of 16-bit "
                                        f"quality < floor {inp.quality_floor:.1%} ({qsource})")
    ttft_limit = _limit(inp.slo, "ttft")
    alone = prompt_prefill(dep, max(1, round(lengths.prompt_mean))).time_s + dep.engine.request_overhead_s
    if ttft_limit is not None and alone > ttft_limit:
        return Pruned(shape, "TTFT floor", f"one {lengths.prompt_mean:.0f}-token prompt alone takes "
                                           f"{alone * 1e3:.0f} ms > {ttft_limit * 1e3:.0f} ms")
    # the sequences one replica holds and the engine accepts, as cost.capacity caps them
    d = _demand(inp.workload, inp.seed)
    cap = sequence_limit(dep, max(1, round(d.prompt_tokens)), max(1, round(d.output_tokens)), context)
    point = slo_cap(dep, inp, cap)
    if point is None:
        return Pruned(shape, "TPOT floor", "one sequence alone, with the prefill mixed into its steps, misses "
                                           f"{_latency_terms(inp.slo)}")
    batch = point.batch
    # arrivals/s (a conversation workload's arrivals are sessions of several requests)
    rate = point.output_tokens_per_s / max(d.output_tokens, 1.0) / d.requests_per_session * CAPACITY_MARGIN
    # The prune is conservative: it uses an upper bound on what one replica can carry (every sequence
    # slot full, prefill free), so it never removes a shape the simulator would accept.
    upper = optimistic_rate(dep, lengths, cap) / d.requests_per_session
    traffic = inp.traffic
    if traffic.rate is not None:
        replicas = max(1, math.ceil(traffic.rate / rate))
        fewest = max(1, math.ceil(traffic.rate / upper - 1e-9))
        served_out = traffic.rate * d.requests_per_session * d.output_tokens
    else:
        replicas = max(1, math.ceil(traffic.concurrency / batch))
        fewest = max(1, math.ceil(traffic.concurrency / cap))
        served_out = min(traffic.concurrency, replicas * batch) * rate / batch * lengths.output_mean
    if fewest * shape.gpus_per_replica > inp.max_gpus:
        return Pruned(shape, "GPUs", f"needs at least {fewest * shape.gpus_per_replica} GPUs ({fewest} replicas, "
                                     f"each at its upper bound) for {traffic.describe()}, over the "
                                     f"{inp.max_gpus} allowed")
    replicas = min(replicas, inp.max_gpus // shape.gpus_per_replica)
    gpus = replicas * shape.gpus_per_replica
    est = gpus * price / (served_out * 3600) * 1e6 if price is not None else math.inf
    return Screen(shape, dep.kv_format.name, replicas, batch, price, est, quality, qsource, context)


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


def steady_workload(inp: PlanInputs, share: Traffic):
    """The workload one replica is judged on: cost.capacity.steady_workload (warm-up left out, enough
    requests) at the replica's share of the traffic."""
    from vazao.cost.capacity import steady_workload as steady
    from vazao.workload import load_workload

    w = load_workload(inp.workload, seed=inp.seed)
    return steady(w, requests=inp.requests, rate=share.rate, concurrency=share.concurrency, limits=inp.slo.limits)


def _judge(dep, s: Screen, inp: PlanInputs, replicas: int):
    from vazao.sim.config import SimConfig
    from vazao.sim.run import simulate

    w = steady_workload(inp, inp.traffic.per_replica(replicas))
    # the engine capped at the batch that holds the SLO: what the emitted command sets
    cfg = SimConfig.from_engine(dep.engine, max_num_seqs=s.batch, max_context=s.context or None)
    result = simulate(dep, w, cfg, slo=inp.slo)
    checks, bands = _checks(dep, result.summary, inp.slo, "serving")
    return result, checks, bands, w


def simulate_screen(s: Screen, inp: PlanInputs, lengths: Lengths) -> Candidate | Pruned:
    """Step 3 of the module docstring: the fewest replicas (from the estimate, up or down) whose
    steady-state simulation meets every limit (by the band's edge where there is a band)."""
    dep = _deployment(s.shape, inp.profile)
    top = inp.max_gpus // s.shape.gpus_per_replica
    runs: dict[int, tuple] = {}

    def run(r: int) -> tuple:
        if r not in runs:
            runs[r] = _judge(dep, s, inp, r)
        return runs[r]

    def ok(r: int) -> bool:
        return all(c.met for c in run(r)[1])

    r = max(1, min(s.replicas, top))
    for _ in range(MAX_TRIES):
        if ok(r) or r >= top:
            break
        worst = max(c.value / c.limit if c.value else 2.0 for c in run(r)[1])
        r = min(top, max(r + 1, math.ceil(r * min(worst, 2.0))))
    if ok(r):  # the estimate aims below capacity: fewer replicas may do
        while r > 1 and len(runs) < MAX_TRIES + 4 and ok(r - 1):
            r -= 1
    replicas = r
    result, checks, bands, w = run(r)
    usd_h = _usd_h(s, replicas)
    meets = all(c.met for c in checks)
    marginal = not meets and all(c.met_by_value for c in checks)
    note = "" if bands else "no band: the engine profile is not calibrated"
    judged = (f"steady state: {w.requests - w.warmup:,} requests judged per replica, first {w.warmup:,} "
              "left out as warm-up")
    return Candidate(
        shape=s.shape, kv_format=s.kv_format, replicas=replicas, max_batch=s.batch,
        usd_per_hour=usd_h,
        usd_per_mtok=_offered_usd_per_mtok(usd_h, inp, lengths, result.summary.output_tokens_per_s * replicas),
        usd_per_month=usd_h * HOURS_PER_MONTH if usd_h is not None else None,
        meets_slo=meets, marginal=marginal, source="simulated",
        checks=checks, bands=bands, summary=result.summary, quality=s.quality, quality_source=s.quality_source,
        detail="; ".join(x for x in (note, judged, f"peak batch {result.peak_running}, {result.preemptions} "
                                     "preemptions") if x), context=s.context)


def _offered_usd_per_mtok(usd_h: float | None, inp: PlanInputs, lengths: Lengths, simulated_out: float) -> float | None:
    """$/Mtok at the offered traffic (an open loop's rate × the mean answer), not at the simulated run's
    throughput, which counts the run's ramp and drain; a closed loop has no offered rate: its run's."""
    from vazao.cost.money import usd_per_mtok

    if usd_h is None:
        return None
    d = _demand(inp.workload, inp.seed)
    out = inp.traffic.rate * d.requests_per_session * d.output_tokens if inp.traffic.rate is not None \
        else simulated_out
    return usd_per_mtok(usd_h, out)


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
                     detail="not simulated: ranked below the simulated shapes by the closed-form estimate",
                     context=s.context)

