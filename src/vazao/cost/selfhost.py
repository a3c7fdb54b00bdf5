"""Self-hosted cost: the deployment's $/h over the token throughput it sustains while meeting the SLO.

    $/Mtok = (GPUs × $/GPU-h) / (tokens/s × 3600 × utilisation) × 10⁶

Utilisation is the share of paid hours spent serving at that throughput (1.0: every hour at full
SLO load; a service that idles at night is lower). Three figures: all GPU time charged to output
tokens (how "$ per million generated tokens" is usually quoted), blended over input + output, and a
split that charges input and output by the GPU time their prefill and decode steps take.

Throughput comes from one of three places, always named in the result: a simulated run of the
workload (the simulator), a measured run (`vazao bench` JSON), or the
analytic model: estimate.max_load_throughput without an SLO, and with one the largest batch whose
TPOT, TTFT and E2E (mean lengths, no queueing) are within every limit."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Protocol

from vazao.analytic import (
    SteadyPoint,
    max_load_limit,
    offline_point,
    slo_batch,
    steady_batch_limit,
    steady_point,
)
from vazao.bands import Band, deployment_band, within_physics
from vazao.catalog.prices import share_str, usd_str
from vazao.cost.energy import EnergyCost, EnergySite, default_site, energy_cost
from vazao.cost.money import MICRO
from vazao.cost.rates import given_rate, gpu_rate, to_decimal  # noqa: F401  (gpu_rate, given_rate: re-exported)
from vazao.errors import VazaoError
from vazao.physics.energy import idle_power_w
from vazao.physics.memory import fit
from vazao.resultfiles import from_document
from vazao.results import SLO, RunSummary

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment
    from vazao.workload import Workload

SOURCES = ("simulated", "measured", "analytic")


@dataclass(frozen=True)
class Throughput:
    requests_per_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    source: str  # simulated | measured | analytic
    detail: str
    input_time_share: float | None = None  # share of GPU time spent on prefill, when known
    batch: int | None = None
    # one board's mean draw while serving at this throughput, and idle (physics/energy.py); None: unknown
    power_w: float | None = None
    idle_w: float | None = None
    # the 80% band of output_tokens_per_s (vazao.bands: the engine profile's residuals, widened where the profile
    # extrapolates); None for a measured run or an uncalibrated profile. The other rates move with it.
    band: Band | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: Mapping) -> Throughput:
        return from_document(cls, d)


def throughput_from_summary(summary: RunSummary, source: str = "measured", detail: str = "") -> Throughput:
    """Tokens/s of a run. When the run carries goodput under an SLO, only the requests that met it
    count: the cost is per token of a good request."""
    rps = summary.request_throughput_per_s
    out = summary.output_tokens_per_s
    inp = max(0.0, summary.total_tokens_per_s - out)
    note = detail
    if summary.goodput_requests_per_s is not None and rps > 0:
        good = summary.goodput_requests_per_s / rps
        out, inp, rps = out * good, inp * good, summary.goodput_requests_per_s
        note = (note + "; " if note else "") + f"goodput: {good:.0%} of requests met the SLO"
    return Throughput(rps, inp, out, source, note)


def analytic_throughput(dep: Deployment, input_tokens: int, output_tokens: int, slo: SLO | None = None,
                        cached_tokens: int = 0) -> Throughput:
    """Steady-state throughput on the analytic model. Without an SLO: estimate.max_load_throughput
    (the same cycle at the largest batch memory allows). With one: estimate.slo_batch, the largest
    batch whose steady point meets every limit (a percentile limit is compared with the point value).
    cached_tokens: prompt tokens the engine's prefix cache serves (ignored when it has none)."""
    if input_tokens < 1 or output_tokens < 1:
        raise VazaoError("input and output tokens per request must be positive")
    bmax = steady_batch_limit(dep, input_tokens, output_tokens)
    if bmax < 1:
        return Throughput(0.0, 0.0, 0.0, "analytic", f"does not fit: {fit(dep, input_tokens + output_tokens).reason}",
                          None, 0)
    cached = cached_tokens if dep.engine.prefix_caching else 0
    regime = "serving"  # a steady point's: the serving rows' residuals, as a simulated run's
    ideal = dep.idealized()  # where the throughput band's fast edge stops
    if slo is None and not cached:
        off = offline_point(dep, input_tokens, output_tokens)  # estimate.max_load_throughput, with its regime
        out_tps, batch, regime = off.output_tokens_per_s, off.batch * off.engines, off.bound
        p = steady_point(dep, input_tokens, output_tokens, bmax)
        detail = f"analytic max-load (estimate.max_load_throughput): batch {batch}, no SLO"
        limit = max_load_limit(dep, input_tokens, output_tokens)
    elif slo is None:
        p = steady_point(dep, input_tokens, output_tokens, bmax, cached)
        out_tps, batch = p.output_tokens_per_s, bmax * dep.replicas
        detail = f"analytic max-load: batch {bmax} per replica, {cached:,} prompt tokens from the prefix cache, no SLO"
        limit = steady_point(ideal, input_tokens, output_tokens, bmax, cached).output_tokens_per_s
    else:
        # each limit held as the simulated paths hold it (cost.capacity.Check): the band's pessimistic edge of the
        # point's latency, or (SLO.judge "prediction") the value
        found = slo_batch(dep, input_tokens, output_tokens, slo.limits, bmax, cached,
                          holds=lambda q: all(c.met for c in point_checks(dep, q, slo)))
        if found is None:
            p1 = steady_point(dep, input_tokens, output_tokens, 1, cached)
            return Throughput(0.0, 0.0, 0.0, "analytic",
                              f"the SLO is missed even at batch 1 (TTFT {p1.ttft_s:.3g} s, TPOT {p1.tpot_s:.3g} s)",
                              None, 0)
        p = found
        out_tps, batch = p.output_tokens_per_s, p.batch * dep.replicas
        held = "each limit at its band's pessimistic edge" if slo.judge == "band" else "each limit at the value"
        detail = (f"analytic under SLO: batch {p.batch} of {bmax} per replica (TTFT {p.ttft_s:.3g} s, "
                  f"TPOT {p.tpot_s * 1e3:.3g} ms; mean lengths, no queueing; {held})")
        limit = steady_point(ideal, input_tokens, output_tokens, p.batch, cached).output_tokens_per_s
    rps = out_tps / output_tokens
    return Throughput(rps, rps * input_tokens, out_tps, "analytic", detail, p.input_time_share, batch,
                      p.power_w, idle_power_w(dep.accelerator), _band(dep, regime, out_tps, limit))


def point_checks(dep: Deployment, point: SteadyPoint, slo: SLO) -> tuple:
    """Each SLO term of an analytic steady point as cost.capacity.Check (a percentile limit against the point's
    value, which has no spread: the mean request's), its band from the profile's serving residuals."""
    from vazao.cost.capacity import term_checks

    return term_checks(dep, slo, lambda metric, _pct: point.metric(metric))[0]


def _band(dep: Deployment, regime: str, output_tokens_per_s: float, limit: float = math.inf) -> Band | None:
    """The 80% band of a predicted output rate: the one `vazao estimate` (max load) and `vazao simulate` (a
    serving run's output tok/s) print beside the same figure; its fast edge at most `limit`, the same figure at
    the physical limit (bands.within_physics)."""
    if output_tokens_per_s <= 0:
        return None
    return within_physics(deployment_band(dep, regime, output_tokens_per_s), limit, rate=True)


@dataclass(frozen=True)
class SelfHostCost:
    deployment: str
    gpus: int
    usd_per_gpu_hour: Decimal
    usd_per_gpu_hour_source: str
    utilisation: Decimal
    throughput: Throughput
    usd_per_hour: Decimal
    usd_per_mtok_output: Decimal | None  # all GPU time charged to output tokens
    usd_per_mtok_blended: Decimal | None  # per million input + output tokens
    usd_per_mtok_input_split: Decimal | None  # by GPU time share
    usd_per_mtok_output_split: Decimal | None
    usd_per_request: Decimal | None
    energy: EnergyCost | None = None  # the electricity (in a rental price already; added when owned)
    # the 80% bands (low, high) of the two $/Mtok figures, from the throughput's band (None: it has none)
    usd_per_mtok_output_band: tuple[Decimal, Decimal] | None = None
    usd_per_mtok_blended_band: tuple[Decimal, Decimal] | None = None
    usd_per_request_band: tuple[Decimal, Decimal] | None = None

    def to_json(self) -> dict:
        def s(x: Decimal | None) -> str | None:
            return None if x is None else usd_str(x)

        return {
            "deployment": self.deployment,
            "gpus": self.gpus,
            "usd_per_gpu_hour": s(self.usd_per_gpu_hour),
            "usd_per_gpu_hour_source": self.usd_per_gpu_hour_source,
            "usd_per_hour": s(self.usd_per_hour),
            "utilisation": share_str(self.utilisation),
            "throughput_source": self.throughput.source,
            "throughput": self.throughput.to_json(),
            "usd_per_mtok_output": s(self.usd_per_mtok_output),
            "usd_per_mtok_blended": s(self.usd_per_mtok_blended),
            "usd_per_mtok_input_split": s(self.usd_per_mtok_input_split),
            "usd_per_mtok_output_split": s(self.usd_per_mtok_output_split),
            "usd_per_request": s(self.usd_per_request),
            "energy": None if self.energy is None else self.energy.to_json(),
            "usd_per_mtok_output_band": _band_json(self.usd_per_mtok_output_band),
            "usd_per_mtok_blended_band": _band_json(self.usd_per_mtok_blended_band),
            "usd_per_request_band": _band_json(self.usd_per_request_band),
        }

    @classmethod
    def from_json(cls, d: Mapping) -> SelfHostCost:
        """Amounts from their text (usd_str); the utilisation as share_str wrote it (six decimals)."""
        e = d.get("energy")
        return from_document(cls, d, energy=None if e is None else EnergyCost.from_json(e))


def _band_json(b: tuple[Decimal, Decimal] | None) -> list[str] | None:
    return None if b is None else [usd_str(b[0]), usd_str(b[1])]


def _per_mtok(usd_per_hour: Decimal, tokens_per_s: float, util: Decimal) -> Decimal | None:
    from vazao.cost.money import usd_per_mtok

    return usd_per_mtok(usd_per_hour, tokens_per_s, util)


def parse_utilisation(value: Decimal | str, what: str = "utilisation") -> Decimal:
    """The share of paid hours at full SLO throughput, in (0, 1]; `what` names it in the error."""
    try:
        util = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except ArithmeticError:
        util = None
    if util is None or not util.is_finite() or not 0 < util <= 1:
        raise VazaoError(f"{what} is the share of paid hours at full SLO load, in (0, 1]; got {value!r}")
    return util


def selfhost_cost(label: str, gpus: int, usd_per_gpu_hour: Decimal, rate_source: str, tp: Throughput,
                  utilisation: Decimal | str = "1", site: EnergySite | None = None) -> SelfHostCost:
    """The cost of `gpus` at `usd_per_gpu_hour` serving `tp` for the `utilisation` share of the hours,
    with its electricity at `site` (None: the catalog's datacenter) where the throughput knows its draw."""
    util = parse_utilisation(utilisation)
    if gpus < 1:
        raise VazaoError(f"gpus (the GPU count) must be positive, got {gpus}")
    usd_h = usd_per_gpu_hour * gpus
    out = _per_mtok(usd_h, tp.output_tokens_per_s, util)
    blended = _per_mtok(usd_h, tp.output_tokens_per_s + tp.input_tokens_per_s, util)
    split_in = split_out = None
    if tp.input_time_share is not None and tp.input_tokens_per_s > 0 and tp.output_tokens_per_s > 0:
        s = to_decimal(tp.input_time_share)
        split_in = _per_mtok(usd_h * s, tp.input_tokens_per_s, util)
        split_out = _per_mtok(usd_h * (1 - s), tp.output_tokens_per_s, util)
    per_req = None
    if tp.requests_per_s > 0:
        per_req = (usd_h / (to_decimal(tp.requests_per_s) * 3600 * util)).quantize(MICRO / 1000,
                                                                                   rounding=ROUND_HALF_UP)
    energy = None
    if tp.power_w is not None and tp.idle_w is not None:
        energy = energy_cost(tp.power_w, tp.idle_w, gpus, tp.input_tokens_per_s, tp.output_tokens_per_s, util,
                             site or default_site())
    return SelfHostCost(label, gpus, usd_per_gpu_hour, rate_source, util, tp, usd_h, out, blended,
                        split_in, split_out, per_req, energy,
                        _cost_band(usd_h, tp.output_tokens_per_s, util, tp),
                        _cost_band(usd_h, tp.output_tokens_per_s + tp.input_tokens_per_s, util, tp),
                        _scaled_band(per_req, tp))


def _scaled_band(v: Decimal | None, tp: Throughput) -> tuple[Decimal, Decimal] | None:
    """An amount inversely proportional to the throughput (a request's cost), at the band's two edges."""
    if v is None or tp.band is None or tp.band.low <= 0 or tp.output_tokens_per_s <= 0:
        return None
    # each edge to the amount's own places (quantize to v: its exponent)
    cheap, dear = ((v * to_decimal(tp.output_tokens_per_s / edge)).quantize(v, rounding=ROUND_HALF_UP)
                   for edge in (tp.band.high, tp.band.low))
    return cheap, dear


def _cost_band(usd_h: Decimal, tokens_per_s: float, util: Decimal, tp: Throughput) -> tuple[Decimal, Decimal] | None:
    """A $/Mtok figure's 80% band: the same hours over the tokens the throughput band's edges would serve (the
    cheap edge from the fast one); None without a band or where an edge serves nothing."""
    if tp.band is None or tp.output_tokens_per_s <= 0 or tokens_per_s <= 0:
        return None
    cheap = _per_mtok(usd_h, tokens_per_s * tp.band.high / tp.output_tokens_per_s, util)
    dear = _per_mtok(usd_h, tokens_per_s * tp.band.low / tp.output_tokens_per_s, util)
    return None if cheap is None or dear is None else (cheap, dear)


# ---- where throughput comes from ---------------------------------------------------------------
BISECT_STEPS = 6
MIN_REQUESTS = 100
REQUESTS_PER_SLOT = 4


class SimRun(Protocol):
    """What the search reads of a simulated run (vazao.sim.SimResult, or a stand-in in tests)."""

    summary: RunSummary
    mean_batch: float


Simulate = Callable[..., SimRun]  # simulate(dep, workload, slo=...) as vazao.sim.simulate


class _ClosedLoopRuns:
    """Closed-loop simulated runs of one workload, by concurrency; each concurrency is simulated once."""

    def __init__(self, dep: Deployment, workload: Workload, slo: SLO | None, simulate: Simulate) -> None:
        self.dep, self.workload, self.slo, self.simulate = dep, workload, slo, simulate
        self._runs: dict[int, SimRun] = {}

    def __call__(self, c: int) -> SimRun:
        if c not in self._runs:
            # Enough requests for a p95 without thousands at low concurrency; the first c (all sent
            # at t = 0, a burst no steady state has) are warm-up and left out of the summary.
            n = max(MIN_REQUESTS, REQUESTS_PER_SLOT * c)
            w = replace(self.workload.with_overrides(concurrency=c, requests=n + c), warmup=c)
            self._runs[c] = self.simulate(self.dep, w, slo=self.slo)
        return self._runs[c]

    def meets(self, c: int) -> bool:
        """Every limit held as plan and budgets hold it (cost.capacity.slo_checks): the band's pessimistic edge,
        or with SLO.judge "prediction" the value."""
        from vazao.cost.capacity import slo_checks

        assert self.slo is not None  # only the SLO search asks
        return all(k.met for k in slo_checks(self.dep, self(c).summary, self.slo)[0])


def _analytic_guess(dep: Deployment, workload: Workload, slo: SLO) -> int:
    """The analytic model's SLO batch at the workload's mean lengths: where the search starts."""
    plan = workload.specs() if workload.bounded else []
    if not plan:
        return 1
    mean_in = max(1, round(sum(r.prompt_tokens for r in plan) / len(plan)))
    mean_out = max(1, round(sum(r.output_tokens for r in plan) / len(plan)))
    return max(1, analytic_throughput(dep, mean_in, mean_out, slo).batch or 1)


def _bracket(meets: Callable[[int], bool], start: int, top: int) -> tuple[int | None, int | None]:
    """(good, bad): from `start`, double while the SLO is met (up to top) or halve while it is not;
    good meets it, bad does not, None where no such concurrency was found."""
    good, bad = None, None
    c = start
    if meets(c):
        good = c
        while good < top:
            c = min(top, good * 2)
            if not meets(c):
                bad = c
                break
            good = c
    else:
        bad = c
        while bad > 1:
            c = bad // 2
            if meets(c):
                good = c
                break
            bad = c
    return good, bad


def _bisect(meets: Callable[[int], bool], good: int, bad: int | None) -> int:
    """The highest concurrency found between good (met) and bad (missed), in at most BISECT_STEPS runs."""
    for _ in range(BISECT_STEPS):
        if bad is None or bad - good <= 1:
            break
        mid = (good + bad) // 2
        if meets(mid):
            good = mid
        else:
            bad = mid
    return good


def _slo_concurrency(runs: _ClosedLoopRuns, slo: SLO, top: int) -> int | None:
    """The highest concurrency whose run meets the SLO, None when even concurrency 1 misses it."""
    good, bad = _bracket(runs.meets, min(top, _analytic_guess(runs.dep, runs.workload, slo)), top)
    return None if good is None else _bisect(runs.meets, good, bad)


def _run_point(dep: Deployment, best: SimRun) -> SteadyPoint | None:
    """The analytic steady point at the run's mean lengths and mean batch (None: the run made none):
    where a simulated cost takes its prefill share of GPU time and its boards' draw."""
    s = best.summary
    done = max(1, s.requests - s.errors)
    mean_in, mean_out = round(s.prompt_tokens / done), round(s.output_tokens / done)
    if mean_in >= 1 and mean_out >= 1 and best.mean_batch >= 1:
        return steady_point(dep, mean_in, mean_out, max(1, round(best.mean_batch / dep.replicas)))
    return None


def _simulated_detail(workload: Workload, slo: SLO | None, concurrency: int, best: SimRun) -> str:
    s = best.summary
    limits = "no SLO (saturated)" if slo is None else "meets " + ", ".join(slo.limits)
    return (f"simulated {workload.name}, closed loop at concurrency {concurrency}, {limits}: p95 TTFT "
            f"{s.ttft_s.p95 or 0:.3g} s, p95 TPOT {(s.tpot_s.p95 or 0) * 1e3:.3g} ms, mean batch "
            f"{best.mean_batch:.0f}")


def simulated_throughput(dep: Deployment, workload: Workload, slo: SLO | None = None,
                         simulate: Simulate | None = None, requests: int | None = None) -> Throughput:
    """The workload's capacity on the discrete-event simulator (vazao.sim). With an SLO: the one
    capacity policy (cost.capacity, shared with `vazao plan`): the engine capped at the batch that holds
    the latency limits with mixed prefill, and the highest Poisson arrival rate whose steady-state run of
    `requests` (default JUDGED_REQUESTS, as a plan judges) meets every limit. Without one: closed loop at
    the engine's max_num_seqs per replica (saturation). The input/output time split comes from the
    analytic model at the simulated mean batch."""
    if slo is not None and not workload.closed_loop:
        return _open_loop_capacity(dep, workload, slo, simulate, requests or JUDGED_REQUESTS)
    if simulate is None:
        from vazao.sim import simulate
    runs = _ClosedLoopRuns(dep, workload, slo, simulate)
    top = max(1, dep.engine.max_num_seqs * dep.replicas)
    best_c = top if slo is None else _slo_concurrency(runs, slo, top)
    if best_c is None:
        return Throughput(0.0, 0.0, 0.0, "simulated",
                          f"simulated {workload.name}: the SLO is missed even at concurrency 1", None, 0)
    best = runs(best_c)
    tp = throughput_from_summary(best.summary, "simulated", _simulated_detail(workload, slo, best_c, best))
    p = _run_point(dep, best)
    return Throughput(tp.requests_per_s, tp.input_tokens_per_s, tp.output_tokens_per_s, "simulated", tp.detail,
                      p.input_time_share if p else None, best_c, p.power_w if p else None,
                      idle_power_w(dep.accelerator),
                      _band(dep, "serving", tp.output_tokens_per_s, _max_load_limit(dep, best.summary)))


def _max_load_limit(dep: Deployment, summary: RunSummary) -> float:
    """analytic.max_load_limit at the summary's mean request: where a simulated rate's band stops."""
    n = max(1, summary.requests - summary.errors)
    return max_load_limit(dep, max(1, round(summary.prompt_tokens / n)), max(1, round(summary.output_tokens / n)))


JUDGED_REQUESTS = 400  # as `vazao plan` judges a candidate (PlanInputs.requests), so the two agree


def _open_loop_capacity(dep: Deployment, workload: Workload, slo: SLO, simulate: Simulate | None,
                        requests: int) -> Throughput:
    from vazao.cost.capacity import demand_of, held_cap, sequence_limit, slo_rate
    from vazao.workload import context_for

    d = demand_of(workload)  # the plan's own figures (plan.evaluate reads the same)
    per_session = d.requests_per_session
    mean_in, mean_out = max(1, round(d.prompt_tokens)), max(1, round(d.output_tokens))
    context = context_for(workload, dep.model.max_context)  # what --max-model-len / a slot is set to
    point = held_cap(dep, workload, slo.limits, d, sequence_limit(dep, mean_in, mean_out, context), context,
                     simulate)
    if point is None:
        return Throughput(0.0, 0.0, 0.0, "simulated", f"simulated {workload.name}: the SLO is missed even at "
                          "batch 1 (analytic steady point)", None, 0)
    start = point.output_tokens_per_s / mean_out / per_session
    found = slo_rate(dep, workload, slo, point.batch, start, requests, simulate=simulate, context=context)
    if found is None:
        return Throughput(0.0, 0.0, 0.0, "simulated",
                          f"simulated {workload.name}: the SLO is missed even at {start / 1.5 ** 10:.3g}/s", None, 0)
    rps = found.rate * per_session
    s = found.summary
    # the cap is a setting of the engine, which its default may not allow (vLLM's max_num_seqs 256): say so, as
    # `vazao simulate` at that rate with the engine's default would queue
    above = (f", the engine's sequence limit set to it (its default {dep.engine.max_num_seqs})"
             if point.batch > dep.engine.max_num_seqs else "")
    detail = (f"simulated {workload.name}, Poisson {found.rate:.3g} arrivals/s ({rps:.3g} req/s), the highest "
              f"that meets {', '.join(slo.limits)} (cost.capacity: batch capped at {point.batch}{above}; "
              f"{found.describe()}): p95 TTFT {s.ttft_s.p95 or 0:.3g} s, p95 TPOT {(s.tpot_s.p95 or 0) * 1e3:.3g} ms")
    # the prefill share of GPU time at the run's own prefix-cache hits (the cap assumed fewer; the run had them)
    hit = found.cache_hit_share if found.cache_hit_share is not None else 0.0
    cached = round(mean_in * hit) if dep.engine.prefix_caching else 0
    at = steady_point(dep, mean_in, mean_out, point.batch, cached)
    return Throughput(rps, rps * mean_in, rps * mean_out, "simulated", detail, at.input_time_share, point.batch,
                      at.power_w, idle_power_w(dep.accelerator),
                      _band(dep, "serving", rps * mean_out, max_load_limit(dep, mean_in, mean_out)))


def at_traffic(c: SelfHostCost, requests_per_s: float) -> SelfHostCost:
    """The deployment `c` (costed at its SLO capacity) serving `requests_per_s`: enough copies of it to
    carry the traffic, each as busy as the traffic makes it (utilisation = traffic / capacity)."""
    cap = c.throughput.requests_per_s
    if cap <= 0:
        raise VazaoError(f"{c.deployment} serves no request within the SLO: it cannot carry any traffic")
    copies = max(1, math.ceil(requests_per_s / cap - 1e-9))
    util = to_decimal(requests_per_s / (copies * cap)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    tp = c.throughput
    scaled = replace(tp, requests_per_s=tp.requests_per_s * copies, input_tokens_per_s=tp.input_tokens_per_s * copies,
                     output_tokens_per_s=tp.output_tokens_per_s * copies,
                     detail=f"{tp.detail}; ×{copies} to carry {requests_per_s:g} req/s" if copies > 1 else tp.detail,
                     band=None if tp.band is None else tp.band.scaled(copies))
    label = c.deployment if copies == 1 else f"{copies} × {c.deployment}"
    out = selfhost_cost(label, c.gpus * copies, c.usd_per_gpu_hour, c.usd_per_gpu_hour_source, scaled,
                        max(util, Decimal("0.0001")), c.energy.site if c.energy else None)
    return with_copies_band(out, copies, copies_band(tp, requests_per_s, copies))


def copies_band(tp: Throughput, requests_per_s: float, copies: int) -> tuple[int, int] | None:
    """The copies of one deployment (throughput `tp`) a fixed traffic needs at the two edges of its band, the
    fast edge first; None without a band. At a fixed traffic the tokens served do not move with the band: the
    GPUs paid for do."""
    if tp.band is None or tp.output_tokens_per_s <= 0 or tp.requests_per_s <= 0 or tp.band.low <= 0:
        return None
    need = [max(1, math.ceil(requests_per_s / (tp.requests_per_s * edge / tp.output_tokens_per_s) - 1e-9))
            for edge in (tp.band.high, tp.band.low)]
    return min(need[0], copies), max(need[1], copies)


def with_copies_band(c: SelfHostCost, copies: int, edges: tuple[int, int] | None) -> SelfHostCost:
    """`c`, a fixed traffic served by `copies` copies, with its $/Mtok bands from the copies each edge needs."""
    def scaled(v: Decimal | None) -> tuple[Decimal, Decimal] | None:
        if v is None or edges is None:
            return None
        lo, hi = ((v * k / copies).quantize(v, rounding=ROUND_HALF_UP) for k in edges)
        return lo, hi

    return replace(c, usd_per_mtok_output_band=scaled(c.usd_per_mtok_output),
                   usd_per_mtok_blended_band=scaled(c.usd_per_mtok_blended),
                   usd_per_request_band=scaled(c.usd_per_request))
