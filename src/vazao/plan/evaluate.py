"""One deployment shape against the traffic and the SLO: pruned, estimated, then simulated (docs/plan.md).

1. Prune (cheap, analytic): the format or engine is refused on that silicon, the engine's support for the card
   ends within the support horizon (catalog/engine_support.py), the weights and one request
   of the workload's longest length do not fit, one request alone already misses a TTFT or TPOT limit,
   more GPUs than allowed even at an upper bound on a replica's rate, a quality below (or unknown under)
   the floor.
2. Estimate: the batch cap of the one capacity policy (cost.capacity: the steady point that holds the
   latency limits with the prefill mixed into each step) and the rate one replica carries at it → the
   replicas the traffic needs and a first $/Mtok to rank shapes by; the throughput objective ranks by
   tok/s per GPU instead.
3. Simulate (the chosen few): one replica at its share of the traffic (a Poisson stream split over r
   replicas is r Poisson streams), judged at steady state; the fewest replicas that meet every limit, or
   (throughput objective) the highest rate that does; SGLang's best as prefill/decode splits. A limit is met
   when the pessimistic edge of the prediction's 80% band is within it; met by the prediction but not by
   the band's edge is `marginal`; an uncalibrated profile has no band, and says so. Money is cost.money's."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING

from vazao.cost.capacity import Check, slo_checks
from vazao.cost.money import MICRO, to_decimal, usd_per_month
from vazao.errors import VazaoError
from vazao.plan.space import Lengths, PlanInputs, Shape
from vazao.workload.traffic import Traffic

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment

CAPACITY_MARGIN = 0.85  # the closed form ignores queueing: aim the first replica count below its capacity
TRIES = 4


@dataclass(frozen=True)
class Candidate:
    shape: Shape
    kv_format: str
    replicas: int
    max_batch: int
    # money in Decimal, by cost.money (the one policy `vazao cost` uses too)
    usd_per_hour: Decimal | None  # None: no rental price for this accelerator (give one in the inputs)
    usd_per_mtok: Decimal | None
    usd_per_month: Decimal | None
    meets_slo: bool
    marginal: bool
    source: str  # simulated | analytic
    checks: tuple[Check, ...]
    bands: dict = field(default_factory=dict)  # SLO key → bands.Band, in seconds
    summary: object | None = None  # RunSummary of one replica (simulated)
    quality: float | None = None  # recovery vs 16-bit; None: no published figure
    quality_source: str = ""
    detail: str = ""
    context: int = 0  # tokens per sequence the command sets (--max-model-len, a llama.cpp slot); 0: not set
    # the throughput objective's figures: what the deployment carries within the SLO (cost.capacity.slo_rate)
    capacity_req_s: float | None = None
    tokens_per_s_per_gpu: float | None = None  # output tokens/s over every GPU of the deployment
    tokens_per_s_per_user: float | None = None  # 1 / mean TPOT at that load
    disagg: tuple[int, int] | None = None  # (prefill, decode) replicas when prefill and decode run apart
    # the boards' draw over the simulated run and its joules per output token (sim.run.SimEnergy)
    power_w_per_gpu: float | None = None
    j_per_output_token: float | None = None
    electricity_usd_per_mtok: float | None = None  # those joules at the catalog's site (physics/energy.py)

    @property
    def count(self) -> int:
        return self.replicas * self.shape.gpus_per_replica

    def layout(self) -> str:
        """Replicas × parallelism: "2×tp4", or "1P+2D tp4" when disaggregated."""
        par = f"tp{self.shape.tp}" + (f"·pp{self.shape.pp}" if self.shape.pp > 1 else "")
        if self.disagg:
            return f"{self.disagg[0]}P+{self.disagg[1]}D {par}"
        return f"{self.replicas}×{par}" if self.replicas > 1 else par

    @property
    def binding(self) -> str | None:
        """The SLO term closest to (or furthest past) its limit."""
        return max(self.checks, key=lambda c: c.ratio).key if self.checks else None


@dataclass(frozen=True)
class Pruned:
    shape: Shape
    reason: str  # a category: refused, support, context, does not fit, TTFT floor, TPOT floor, GPUs, price, quality
    detail: str


def _today():
    """The date a support horizon counts from (a function, so a test can hold the clock)."""
    import datetime

    return datetime.date.today()


def shape_lifecycles(shapes) -> list[dict]:
    """The software lifecycle (catalog/engine_support.py) of each (engine, GPU) among `shapes`, in the order
    first met: what the plan's JSON and console report beside its candidates."""
    from vazao.catalog.engine_support import lifecycle
    from vazao.catalog.local import resolve_accelerator

    seen: dict[tuple[str, str], dict] = {}
    for s in shapes:
        if (s.engine, s.gpu) not in seen:
            seen[(s.engine, s.gpu)] = lifecycle(s.engine, resolve_accelerator(s.gpu)).to_json()
    return list(seen.values())


def _limit(slo, metric: str) -> float | None:
    vals = [v for k, v in slo.limits.items() if k.split("_", 1)[0] == metric]
    return min(vals) if vals else None


def _deployment(shape: Shape, profile: str | None):
    from vazao.physics.deployment import make_deployment

    return make_deployment(shape.model, shape.gpu, shape.fmt, shape.kv, count=shape.gpus_per_replica, tp=shape.tp,
                          pp=shape.pp, engine=shape.engine, profile=profile)


def _quality(dep: Deployment, quality_file: str | None = None) -> tuple[float | None, str]:
    """Published (or the user's measured, `quality_file`) recovery of this format on this model family
    (None: no figure)."""
    from vazao.plan.quality import quality_of, read_rows

    rows = read_rows(quality_file) if quality_file else ()
    q = quality_of(dep.model.family, dep.weight_format.name, model=dep.model.name,
                   params_b=dep.model.total_params / 1e9, rows=rows)
    return (q.recovery, q.source) if q is not None else (None, "")


def _latency_terms(slo) -> str:
    return ", ".join(f"{k} ≤ {v * 1e3:g} ms" for k, v in slo.limits.items() if k.split("_", 1)[0] != "e2e")


@cache
def _demand(workload: str, seed: int):
    from vazao.cost.capacity import demand_of
    from vazao.workload import load_workload

    return demand_of(load_workload(workload, seed=seed))


def slo_cap(dep: Deployment, inp: PlanInputs, cap: int):
    """The batch cap the emitted command sets: cost.capacity.batch_cap (the one capacity policy, which
    `vazao cost selfhost` uses too) at the workload's mean request, history and cached prefix included."""
    from vazao.cost.capacity import batch_cap

    d = _demand(inp.workload, inp.seed)
    cached = round(d.shared_tokens) if dep.engine.prefix_caching else 0  # what stays cached at saturation
    return batch_cap(dep, max(1, round(d.prompt_tokens)), max(1, round(d.output_tokens)), inp.slo.limits, cap,
                     cached)


def optimistic_rate(dep: Deployment, lengths: Lengths, cap: int) -> float:
    """An upper bound on the requests/s one replica serves: every slot full (batch = cap) and the
    prompts' prefill free (as if a prefix cache served them all)."""
    from vazao.analytic import decode_cost

    ctx = max(1, int(lengths.prompt_mean + lengths.output_mean / 2))
    return cap / (max(lengths.output_mean, 1.0) * decode_cost(dep, cap, ctx).time_s)


@dataclass(frozen=True)
class Screen:
    """What the analytic pass knows about a shape that survived pruning."""

    shape: Shape
    kv_format: str
    replicas: int
    batch: int
    usd_per_hour_per_gpu: Decimal | None  # None: the catalog has no rental price (owned hardware)
    estimate_usd_per_mtok: float
    quality: float | None
    quality_source: str
    context: int = 0  # tokens per sequence the command sets (--max-model-len, a llama.cpp slot)
    estimate_tps_per_gpu: float = 0.0  # output tok/s per GPU at the batch cap (the throughput objective's rank)
    rate_per_replica: float = 0.0  # the analytic arrivals/s one replica carries at the cap, aimed below


def screen(shape: Shape, inp: PlanInputs, lengths: Lengths) -> Screen | Pruned:
    """Steps 1 and 2 of the module docstring."""
    from vazao.cost.capacity import sequence_limit
    from vazao.physics.memory import fit
    from vazao.physics.prompt import prompt_prefill

    try:
        dep = _deployment(shape, inp.profile)
    except VazaoError as exc:
        return Pruned(shape, "refused", str(exc))
    from vazao.plan.commands import shard_refusal

    refused = shard_refusal(shape.model, shape.fmt, shape.engine, shape.tp)
    if refused:  # the checkpoint the launch command names would not load split this way
        return Pruned(shape, "refused", refused)
    if inp.support_horizon_months is not None:
        life = dep.lifecycle
        if life.ends_within(inp.support_horizon_months, _today()):
            return Pruned(shape, "support", life.note or f"{dep.engine.name} support for {dep.accelerator.id} "
                          f"ends within {inp.support_horizon_months} months")
    price = inp.gpu_prices.get(dep.accelerator.id, dep.accelerator.usd_per_hour)  # None: owned, unpriced
    price = None if price is None else to_decimal(price)
    # the engine is set to hold the workload's longest request (vLLM refuses to start when its KV cache
    # cannot hold one max_model_len sequence; a llama.cpp slot reserves all of it)
    context = lengths.context(dep.model.max_context)
    refused = lengths.refused_share(dep.model.max_context)
    if refused > 0:  # no setting serves them: a command set to the model's context answers them with errors
        return Pruned(shape, "context", f"{refused:.1%} of the workload's requests (up to {lengths.longest:,} tokens "
                                        f"with their history and answer) are longer than {dep.model.name}'s "
                                        f"{dep.model.max_context:,}-token context: every engine refuses them")
    try:
        f = fit(dep, context)
    except VazaoError as exc:
        return Pruned(shape, "does not fit", str(exc))
    if not f.fits or f.max_concurrent_sequences < 1:
        return Pruned(shape, "does not fit", f.reason or f"no room for one {context:,}-token request's KV cache")
    quality, qsource = _quality(dep, inp.quality_file)
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
    if inp.buy and dep.accelerator.id not in inp.gpu_prices:
        from vazao.cost.own import owned_gpu_hour

        try:
            price = owned_gpu_hour(dep.accelerator.id, dep.accelerator.name, point.power_w)[0]
        except VazaoError as exc:
            return Pruned(shape, "no purchase price", str(exc))
    # arrivals/s (a conversation workload's arrivals are sessions of several requests)
    rate = point.output_tokens_per_s / max(d.output_tokens, 1.0) / d.requests_per_session * CAPACITY_MARGIN
    # The prune is conservative: it uses an upper bound on what one replica can carry (every sequence
    # slot full, prefill free), so it never removes a shape the simulator would accept.
    upper = optimistic_rate(dep, lengths, cap) / d.requests_per_session
    if inp.objective == "throughput":
        return _throughput_screen(shape, inp, dep, point, price, rate, (quality, qsource), context)
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
    est = gpus * float(price) / (served_out * 3600) * 1e6 if price is not None else math.inf  # a ranking estimate
    return Screen(shape, dep.kv_format.name, replicas, batch, price, est, quality, qsource, context,
                  point.output_tokens_per_s / shape.gpus_per_replica, rate)


def _throughput_screen(shape: Shape, inp: PlanInputs, dep: Deployment, point, price: float | None, rate: float,
                       quality: tuple, context: int) -> Screen | Pruned:
    """The throughput objective's step 2: every deployment uses inp.gpu_count GPUs, as replicas of the
    shape; ranked for simulation by the analytic output tok/s per GPU at the batch cap."""
    per = shape.gpus_per_replica
    if inp.gpu_count % per:
        return Pruned(shape, "GPUs", f"{inp.gpu_count} GPUs do not split into replicas of {per}")
    replicas = inp.gpu_count // per
    tps_gpu = point.output_tokens_per_s / per
    est = inp.gpu_count * float(price) / (replicas * point.output_tokens_per_s * 3600) * 1e6 if price is not None \
        else math.inf
    return Screen(shape, dep.kv_format.name, replicas, point.batch, price, est, quality[0], quality[1], context,
                  tps_gpu, rate)


def steady_workload(inp: PlanInputs, share: Traffic):
    """The workload one replica is judged on: cost.capacity.steady_workload (warm-up left out, enough
    requests) at the replica's share of the traffic."""
    from vazao.cost.capacity import steady_workload as steady
    from vazao.workload import load_workload

    w = load_workload(inp.workload, seed=inp.seed)
    return steady(w, requests=inp.requests, rate=share.rate, concurrency=share.concurrency, limits=inp.slo.limits)


def _judge(dep: Deployment, s: Screen, inp: PlanInputs, replicas: int):
    from vazao.sim.config import SimConfig
    from vazao.sim.run import simulate

    w = steady_workload(inp, inp.traffic.per_replica(replicas))
    # the engine capped at the batch that holds the SLO: what the emitted command sets
    cfg = SimConfig.from_engine(dep.engine, max_num_seqs=s.batch, max_context=s.context or None)
    result = simulate(dep, w, cfg, slo=inp.slo)
    checks, bands = slo_checks(dep, result.summary, inp.slo)
    return result, checks, bands, w


def _held(s: Screen, dep: Deployment, inp: PlanInputs) -> Screen:
    """The screen's cap (only the shared prefix cached), or the larger one a conversation's history allows
    where it holds at saturation: cost.capacity.held_cap, as `vazao cost selfhost` picks it."""
    from vazao.cost.capacity import held_cap, sequence_limit
    from vazao.workload import load_workload

    d = _demand(inp.workload, inp.seed)
    if not dep.engine.prefix_caching or d.cached_tokens <= d.shared_tokens:
        return s
    cap = sequence_limit(dep, max(1, round(d.prompt_tokens)), max(1, round(d.output_tokens)), s.context)
    point = held_cap(dep, load_workload(inp.workload, seed=inp.seed), inp.slo.limits, d, cap, s.context or None)
    return s if point is None or point.batch <= s.batch else dataclasses.replace(s, batch=point.batch)


def simulate_screen(s: Screen, inp: PlanInputs, lengths: Lengths) -> Candidate | Pruned:
    """Step 3 of the module docstring: the fewest replicas (from the estimate, up or down) whose
    steady-state simulation meets every limit (by the band's edge where there is a band)."""
    dep = _deployment(s.shape, inp.profile)
    s = _held(s, dep, inp)
    top = inp.max_gpus // s.shape.gpus_per_replica
    runs: dict[int, tuple] = {}

    def run(r: int) -> tuple:
        if r not in runs:
            runs[r] = _judge(dep, s, inp, r)
        return runs[r]

    def ok(r: int) -> bool:
        return all(c.met for c in run(r)[1])

    r = max(1, min(s.replicas, top))
    for _ in range(TRIES):
        if ok(r) or r >= top:
            break
        worst = max(c.value / c.limit if c.value else 2.0 for c in run(r)[1])
        r = min(top, max(r + 1, math.ceil(r * min(worst, 2.0))))
    if ok(r):  # the estimate aims below capacity: fewer replicas may do
        while r > 1 and len(runs) < TRIES + 4 and ok(r - 1):
            r -= 1
    replicas = r
    result, checks, bands, w = run(r)
    usd_h = _usd_h(s, replicas)
    # a request the engine refuses (longer than the context it is set to) is not served within any limit
    refused = (f"{result.errors:,} of {result.errors + result.completed:,} requests refused: "
               + next((x.split(": ", 1)[-1] for x in result.warnings if "could not be served" in x), "")
               if result.errors else "")
    meets = all(c.met for c in checks) and not result.errors
    marginal = not meets and not result.errors and all(c.met_by_value for c in checks)
    note = "" if bands else "no band: the engine profile is not calibrated"
    judged = (f"steady state: {w.requests - w.warmup:,} requests judged per replica, first {w.warmup:,} "
              "left out as warm-up")
    return Candidate(
        shape=s.shape, kv_format=s.kv_format, replicas=replicas, max_batch=s.batch,
        usd_per_hour=usd_h,
        usd_per_mtok=_offered_usd_per_mtok(usd_h, inp, lengths, result.summary.output_tokens_per_s * replicas),
        usd_per_month=usd_per_month(usd_h) if usd_h is not None else None,
        meets_slo=meets, marginal=marginal, source="simulated",
        checks=checks, bands=bands, summary=result.summary, quality=s.quality, quality_source=s.quality_source,
        detail="; ".join(x for x in (refused, note, judged, f"peak batch {result.peak_running}, "
                                     f"{result.preemptions} preemptions") if x), context=s.context,
        power_w_per_gpu=result.energy.mean_w_per_gpu if result.energy else None,
        j_per_output_token=result.energy.j_per_output_token if result.energy else None,
        electricity_usd_per_mtok=result.energy.electricity_usd_per_mtok if result.energy else None)


def _offered_usd_per_mtok(usd_h: Decimal | None, inp: PlanInputs, lengths: Lengths,
                          simulated_out: float) -> Decimal | None:
    """$/Mtok at the offered traffic (an open loop's rate × the mean answer), not at the simulated run's
    throughput, which counts the run's ramp and drain; a closed loop has no offered rate: its run's."""
    from vazao.cost.money import usd_per_mtok

    if usd_h is None:
        return None
    d = _demand(inp.workload, inp.seed)
    out = inp.traffic.rate * d.requests_per_session * d.output_tokens if inp.traffic.rate is not None \
        else simulated_out
    return usd_per_mtok(usd_h, out)


def _usd_h(s: Screen, replicas: int) -> Decimal | None:
    p = s.usd_per_hour_per_gpu
    return None if p is None else replicas * s.shape.gpus_per_replica * p


def analytic_candidate(s: Screen, inp: PlanInputs) -> Candidate:
    """A screened shape the search did not simulate: its closed-form figures, marked as such."""
    usd_h = _usd_h(s, s.replicas)
    est = to_decimal(s.estimate_usd_per_mtok).quantize(MICRO) if usd_h is not None else None
    return Candidate(shape=s.shape, kv_format=s.kv_format, replicas=s.replicas, max_batch=s.batch,
                     usd_per_hour=usd_h, usd_per_mtok=est,
                     usd_per_month=usd_per_month(usd_h) if usd_h is not None else None,
                     meets_slo=False, marginal=False, source="analytic", checks=(), quality=s.quality,
                     quality_source=s.quality_source,
                     detail="not simulated: ranked below the simulated shapes by the closed-form estimate",
                     context=s.context)



def simulate_throughput(s: Screen, inp: PlanInputs, lengths: Lengths) -> Candidate:
    """The throughput objective's step 3: the highest Poisson rate one replica carries within the SLO
    (cost.capacity.slo_rate, the one capacity policy: steady state, the engine capped at the batch cap,
    each limit judged by its band's pessimistic edge), times the replicas that fill inp.gpu_count."""
    from vazao.cost.capacity import capacity_search
    from vazao.cost.money import usd_per_mtok
    from vazao.workload import load_workload

    dep = _deployment(s.shape, inp.profile)
    d = _demand(inp.workload, inp.seed)
    w = load_workload(inp.workload, seed=inp.seed)
    found, last = capacity_search(dep, w, inp.slo, s.batch, max(s.rate_per_replica, 1e-3), inp.requests,
                                  context=s.context or None)
    run = found or last
    usd_h = _usd_h(s, s.replicas)
    note = "" if run.bands else "no band: the engine profile is not calibrated"
    if found is None:
        return Candidate(
            shape=s.shape, kv_format=s.kv_format, replicas=s.replicas, max_batch=s.batch, usd_per_hour=usd_h,
            usd_per_mtok=None, usd_per_month=usd_per_month(usd_h) if usd_h is not None else None,
            meets_slo=False, marginal=False, source="simulated", checks=run.checks, bands=dict(run.bands),
            summary=run.summary, quality=s.quality, quality_source=s.quality_source,
            detail="; ".join(x for x in (note, f"misses the SLO even at {run.rate:.3g} arrivals/s a replica")
                             if x), context=s.context)
    rps = found.rate * d.requests_per_session * s.replicas
    out = rps * d.output_tokens
    tpot = found.summary.tpot_s.mean
    return Candidate(
        shape=s.shape, kv_format=s.kv_format, replicas=s.replicas, max_batch=s.batch, usd_per_hour=usd_h,
        usd_per_mtok=usd_per_mtok(usd_h, out) if usd_h is not None else None,
        usd_per_month=usd_per_month(usd_h) if usd_h is not None else None,
        meets_slo=True, marginal=False, source="simulated", checks=found.checks, bands=dict(found.bands),
        summary=found.summary, quality=s.quality, quality_source=s.quality_source,
        detail="; ".join(x for x in (note, f"capacity {rps:.3g} req/s ({found.rate:.3g} arrivals/s a replica, "
                                     f"the highest whose steady state meets the SLO); {found.describe()}; peak "
                                     f"batch {found.peak_running}") if x),
        context=s.context, capacity_req_s=rps, tokens_per_s_per_gpu=out / inp.gpu_count,
        tokens_per_s_per_user=1.0 / tpot if tpot else None)


# ---- disaggregated prefill and decode ---------------------------------------------------------------------
# Engines whose whole disaggregated launch vazao can emit and check: SGLang's prefill/decode servers and its router
# (plan/commands.py). vLLM's servers take a role too, but v0.34 ships no router program (its guide uses an example
# script from the source tree), so the planner does not propose a deployment whose front end would not start.
DISAGG_ENGINES = ("sglang",)
DISAGG_TRIES = 3  # the best simulated colocated candidates whose split is searched


def decode_cap(dep: Deployment, inp: PlanInputs, cap: int) -> int:
    """A decode pool's batch cap: no prompt is prefilled in its steps, so the largest batch whose decode step
    alone holds the TPOT/ITL limits (with cost.capacity's headroom), at most `cap`."""
    from vazao.analytic import decode_cost
    from vazao.cost.capacity import CAP_HEADROOM

    d = _demand(inp.workload, inp.seed)
    limits = [v for k, v in inp.slo.limits.items() if k.split("_", 1)[0] in ("tpot", "itl")]
    if not limits:
        return cap
    budget = min(limits) * CAP_HEADROOM
    ctx = max(1, round(d.prompt_tokens + d.output_tokens / 2))
    lo, hi = 1, max(1, cap)
    if decode_cost(dep, hi, ctx).time_s <= budget:
        return hi
    while hi - lo > 1:  # a decode step grows with the batch: bisect
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if decode_cost(dep, mid, ctx).time_s <= budget else (lo, mid)
    return lo


def disagg_splits(c: Candidate, inp: PlanInputs) -> list[tuple[int, int]]:
    """(prefill, decode) replica counts to try for `c`: as many replicas as it has, and one fewer (a split that
    needs more would cost more than `c`), at least 1 + 1, within the GPU budget; every split of up to 4
    replicas, else a few ratios."""
    top = inp.gpu_budget // c.shape.gpus_per_replica
    out = []
    for n in sorted({max(2, c.replicas - 1), max(2, c.replicas)}):
        if n > top:
            continue
        ps = range(1, n) if n <= 4 else sorted({1, n // 4, n // 3, n // 2, n - 1} - {0})
        out += [(p, n - p) for p in ps]
    return out


def simulate_disagg(c: Candidate, split: tuple[int, int], inp: PlanInputs, lengths: Lengths) -> Candidate:
    """`c`'s shape as `split` = (prefill, decode) replicas, the whole deployment simulated at the whole traffic:
    prompts on the prefill pool, each KV cache shipped to a decode replica (sim/disagg.py), judged as the
    colocated candidates are (steady state, band edge)."""
    from vazao.cost.capacity import sequence_limit, slo_checks
    from vazao.physics.deployment import make_deployment
    from vazao.sim.config import DisaggConfig, SimConfig
    from vazao.sim.run import simulate

    p, dd = split
    n = p + dd
    sh = c.shape
    dep = make_deployment(sh.model, sh.gpu, sh.fmt, sh.kv, count=n * sh.gpus_per_replica, tp=sh.tp, pp=sh.pp,
                         engine=sh.engine, profile=inp.profile)
    d = _demand(inp.workload, inp.seed)
    one = _deployment(sh, inp.profile)
    cap = sequence_limit(one, max(1, round(d.prompt_tokens)), max(1, round(d.output_tokens)), c.context)
    batch = decode_cap(one, inp, cap)
    w = steady_workload(inp, inp.traffic)  # the whole traffic: every replica is in the one simulation
    cfg = SimConfig.from_engine(dep.engine, max_num_seqs=batch, max_context=c.context or None,
                                disagg=DisaggConfig(p, dd))
    result = simulate(dep, w, cfg, slo=inp.slo)
    checks, bands = slo_checks(dep, result.summary, inp.slo)
    usd_h = None if c.usd_per_hour is None else c.usd_per_hour / c.count * n * sh.gpus_per_replica
    meets = all(k.met for k in checks)
    note = "" if bands else "no band: the engine profile is not calibrated"
    return dataclasses.replace(
        c, replicas=n, max_batch=batch, usd_per_hour=usd_h,
        usd_per_mtok=_offered_usd_per_mtok(usd_h, inp, lengths, result.summary.output_tokens_per_s),
        usd_per_month=usd_per_month(usd_h) if usd_h is not None else None, meets_slo=meets,
        marginal=not meets and all(k.met_by_value for k in checks), checks=checks, bands=bands,
        summary=result.summary, disagg=split,
        detail="; ".join(x for x in (note, f"disaggregated: {p} prefill + {dd} decode replicas, each prompt's KV "
                                     f"cache shipped over the link; decode batch cap {batch} (no prefill in its "
                                     f"steps); steady state: {w.requests - w.warmup:,} requests judged, first "
                                     f"{w.warmup:,} left out as warm-up; {result.preemptions} preemptions") if x))
