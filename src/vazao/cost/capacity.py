"""One capacity policy: the batch a deployment is capped at and the traffic it carries within an SLO,
used by `vazao plan` and `vazao cost selfhost`/`breakeven` alike.

1. The batch cap (what the emitted --max-num-seqs sets): the largest batch whose analytic steady
   point holds the TPOT/ITL limits (with 15% headroom) with the prefill the engine mixes into each step (each finished
   sequence's successor is prefilled inside the running batch's steps) and whose TTFT (own prefill
   plus one step, no queue) holds the TTFT limits: estimate.slo_batch at the workload's mean lengths, with
   only the shared prefix counted as cached. A conversation's history is cached only while its blocks
   survive the user's think time, and at saturation it may not be (support on 2× L40S: 96% hits at its
   own rate, 92% at three times it, and with the history counted the cap ran TPOT 8% over): the larger
   batch the history allows (or, failing it, the one halfway) is taken only where a simulation at three
   times the rate holds the limits with it (held_cap).
2. A run is judged at steady state: an open loop leaves its first tenth out (it starts from an empty
   engine), a closed loop its first `concurrency` requests (every user sends at t = 0, a burst no
   steady state has) and runs at least 10 requests per user.
3. The capacity within the SLO: the highest Poisson arrival rate whose steady-state simulation, the
   engine capped at the batch of 1 (sequences of the workload's longest request, as the emitted command
   sets them), meets every limit; bracketed from the analytic rate by factors of
   1.5 and bisected to `precision`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from vazao.results import SLO, RunSummary

if TYPE_CHECKING:
    from vazao.bands import Band
    from vazao.physics.deployment import Deployment
    from vazao.workload import Workload

STEADY_REQUESTS_PER_USER = 10
WARMUP_SHARE = 10  # an open loop's first 1/10 is warm-up
LATENCY_TERMS = ("ttft", "tpot", "itl")
BRACKET_STEPS = 10
PRECISION = 0.03
CAP_HEADROOM = 0.85
STEADY_REQUESTS_CAP = 20_000


def batch_cap(dep: Deployment, prompt_tokens: int, output_tokens: int, limits: Mapping[str, float], cap: int,
              cached_tokens: int = 0):
    """Step 1 of the module docstring: the steady point at the cap (estimate.SteadyPoint), None when
    even batch 1 misses a limit. `cap` is the most sequences memory and the engine allow."""
    from vazao.analytic import slo_batch, steady_point

    # TPOT/ITL held with CAP_HEADROOM: the steady point is a mean over steps, and the steps that carry a
    # long prompt's chunk are slower than it (summarize at saturation ran 10% over without it)
    terms = {k: v * (CAP_HEADROOM if k.split("_", 1)[0] != "ttft" else 1.0) for k, v in limits.items()
             if k.split("_", 1)[0] in LATENCY_TERMS}
    if cap < 1:
        return None
    if not terms:
        return steady_point(dep, prompt_tokens, output_tokens, cap, cached_tokens)
    return slo_batch(dep, prompt_tokens, output_tokens, terms, cap, cached_tokens)


def sequence_limit(dep: Deployment, prompt_tokens: int, output_tokens: int, context: int) -> int:
    """The most sequences one replica holds, and so the most a plan may set (--max-num-seqs, -np): KV
    memory (a paged cache at the mean request: a long one takes more blocks, a short one fewer and the
    simulator preempts where they do not fit; a reserved cache `context` tokens a slot, the emitted
    per-sequence context) and the most the engine accepts (EngineProfile.seq_ceiling)."""
    from vazao.physics.memory import fit

    per_seq = context if dep.engine.kv_layout == "reserved" else prompt_tokens + output_tokens
    f = fit(dep, max(1, per_seq))
    return min(f.max_concurrent_sequences // max(1, dep.replicas), dep.engine.seq_ceiling)


SATURATION = 3.0  # the saturation check's arrival rate, over the rate a replica is sized for


def saturation_holds(dep: Deployment, workload: Workload, limits: Mapping[str, float], batch: int, rate: float,
                     context: int | None = None, simulate: Callable | None = None) -> bool:
    """Whether `batch` sequences hold the TPOT/ITL limits when the engine never runs short of work: arrivals at
    SATURATION × `rate` (the queue never empties, every step full, each carrying the prompts the engine mixes
    in), the mean TPOT over the steady part within the tightest TPOT/ITL limit. What a cap has to hold."""
    from vazao.sim.config import SimConfig

    terms = [v for k, v in limits.items() if k.split("_", 1)[0] in ("tpot", "itl")]
    if not terms:
        return True
    if simulate is None:
        from vazao.sim.run import simulate
    # as long as a steady-state judgement at that rate: a conversation's cached history is evicted only once
    # sessions have come back after their think time, so a short run would not see the misses
    w = steady_workload(workload, requests=max(400, 4 * batch), rate=rate * SATURATION, limits=limits)
    res = simulate(dep, w, SimConfig.from_engine(dep.engine, max_num_seqs=batch, max_context=context))
    tpot = res.summary.tpot_s.mean
    return tpot is not None and tpot <= min(terms)


def held_cap(dep: Deployment, workload: Workload, limits: Mapping[str, float], d: Demand, cap: int, context: int | None,
             simulate: Callable | None = None):
    """Step 1's cap for this workload: the steady point with only the shared prefix cached (what stays cached
    however full the engine runs); where a conversation's history would allow a larger batch if it stayed
    cached, that larger batch when it holds the limits at saturation (saturation_holds), else the smaller.
    None when even batch 1 misses a limit."""
    prompt, out = max(1, round(d.prompt_tokens)), max(1, round(d.output_tokens))
    caching = dep.engine.prefix_caching
    low = batch_cap(dep, prompt, out, limits, cap, round(d.shared_tokens) if caching else 0)
    if low is None or not caching or d.cached_tokens <= d.shared_tokens:
        return low
    high = batch_cap(dep, prompt, out, limits, cap, round(d.cached_tokens))
    if high is None or high.batch <= low.batch:
        return low
    rate = high.output_tokens_per_s / out / d.requests_per_session
    if saturation_holds(dep, workload, limits, high.batch, rate, context, simulate):
        return high
    # one probe between the two: the history kept for part of the batch may still allow more than the prefix alone
    mid = batch_cap(dep, prompt, out, limits, (low.batch + high.batch) // 2, round(d.cached_tokens))
    if mid is not None and mid.batch > low.batch and saturation_holds(dep, workload, limits, mid.batch, rate,
                                                                      context, simulate):
        return mid
    return low


@dataclass(frozen=True)
class Demand:
    """What a workload's requests look like on average (from a 2,000-request sample of its plan)."""

    prompt_tokens: float  # with shared prefix and conversation history
    output_tokens: float
    cached_tokens: float  # leading tokens a prefix cache can serve: the history (it holds the prefix), else the prefix
    requests_per_session: float  # conversation turns (1 without conversations)
    think_s: float  # mean think time between a session's turns
    shared_tokens: float = 0.0  # the shared prefix alone: what stays cached however full the engine runs


def demand_of(workload: Workload) -> Demand:
    plan = workload.with_overrides(requests=2000).specs()
    n = max(1, len(plan))
    sessions = max(1, sum(1 for r in plan if r.turn == 1))
    think = sum(r.think_time_s for r in plan if r.turn > 1) / max(1, n - sessions)
    return Demand(sum(r.prompt_tokens for r in plan) / n, sum(r.output_tokens for r in plan) / n,
                  sum(reusable_tokens(r) for r in plan) / n, n / sessions, think,
                  sum(r.prefix_tokens for r in plan) / n)


def reusable_tokens(r) -> int:
    """A request's leading tokens a prefix cache can hold from earlier requests: a later turn repeats the
    previous turn's prompt and reply (its history, which begins with the shared prefix), a first turn only
    its shared prefix. (Adding the two counted the prefix twice.)"""
    return r.history_tokens if r.history_tokens else r.prefix_tokens


def _limit(limits: Mapping[str, float], metric: str, default: float) -> float:
    vals = [v for k, v in limits.items() if k.split("_", 1)[0] == metric]
    return min(vals) if vals else default


def steady_length(workload: Workload, arrivals_per_s: float, limits: Mapping[str, float],
                  minimum: int) -> tuple[int, int]:
    """(requests, warm-up requests) for a steady-state judgement at `arrivals_per_s`. The arrivals must
    span long enough for an overload to show as a queue: an arrival rate 10% over capacity adds a
    tenth of the run's length to the last requests' TTFT, so the run lasts 20× the TTFT limit and 10×
    a request's longest allowed E2E; a conversation workload 3 session lifetimes after a warm-up of
    one (sessions overlap only once the first have run their turns). Capped at STEADY_REQUESTS_CAP requests."""
    d = demand_of(workload)
    ttft = _limit(limits, "ttft", 1.0)
    e2e = _limit(limits, "e2e", ttft + d.output_tokens * _limit(limits, "tpot", _limit(limits, "itl", 0.05)))
    lifetime = d.requests_per_session * (d.think_s + e2e)
    span = max(20 * ttft, 10 * e2e, 3 * lifetime if d.requests_per_session > 1 else 0.0)
    warm = lifetime if d.requests_per_session > 1 else span / WARMUP_SHARE
    rate = arrivals_per_s * d.requests_per_session
    n = int(min(STEADY_REQUESTS_CAP, max(minimum, rate * (span + warm))))
    return n, int(min(n // 2, max(n // WARMUP_SHARE, rate * warm)))


def steady_workload(workload: Workload, *, requests: int, rate: float | None = None,
                    concurrency: int | None = None, limits: Mapping[str, float] | None = None) -> Workload:
    """Step 2 of the module docstring: `workload` at an arrival rate or a concurrency, long enough (at
    least `requests`; see steady_length) and with its warm-up marked."""
    if concurrency is not None:
        n = max(requests, STEADY_REQUESTS_PER_USER * concurrency) + concurrency
        return replace(workload.with_overrides(requests=n, concurrency=concurrency), warmup=concurrency)
    n, warm = steady_length(workload, rate, limits or {}, requests)
    return replace(workload.with_overrides(requests=n, rate=rate), warmup=warm)


@dataclass(frozen=True)
class Check:
    """One SLO term of a run: the predicted value, its 80% band's pessimistic edge, the limit, and what
    is held to the limit (SLO.judge: the edge, or the value itself)."""

    key: str
    value: float | None
    edge: float | None  # None: no band (uncalibrated profile)
    limit: float
    judge: str = "band"

    @property
    def judged(self) -> float | None:
        return self.edge if self.edge is not None and self.judge == "band" else self.value

    @property
    def met(self) -> bool:
        v = self.judged
        return v is not None and v <= self.limit

    @property
    def met_by_value(self) -> bool:
        return self.value is not None and self.value <= self.limit

    @property
    def ratio(self) -> float:
        v = self.judged
        return math.inf if v is None else v / self.limit

    def to_json(self) -> dict:
        return {"key": self.key, "value_s": self.value, "pessimistic_s": self.edge, "limit_s": self.limit,
                "judged_by": self.judge, "judged_s": self.judged, "met": self.met}

    @classmethod
    def from_json(cls, d: Mapping) -> Check:
        """Renamed keys (value_s, pessimistic_s, limit_s, judged_by); judged_s and met are derived."""
        return cls(d["key"], d["value_s"], d["pessimistic_s"], math.inf if d["limit_s"] is None else d["limit_s"],
                   d.get("judged_by", "band"))


# an SLO term's latency metric as the validator names it (its band's residuals)
_METRIC_OF = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e": "e2e_latency_ms"}


def term_band(dep: Deployment, metric: str, value: float, regime: str = "serving") -> Band | None:
    """The 80% band of a predicted SLO latency (metric ttft, tpot, itl or e2e; its value in s): the calibrated
    profile's residuals of that latency, widened where the profile never saw the GPU generation, format or
    family."""
    from vazao.bands import deployment_band

    return deployment_band(dep, regime, value, metric=_METRIC_OF.get(metric, "tpot_ms"))


def term_checks(dep: Deployment, slo: SLO, value_of: Callable[[str, str], float | None],
                regime: str = "serving") -> tuple[tuple[Check, ...], dict]:
    """Each SLO term with its band (term_band), and the bands by term; value_of(metric, percentile) is the
    predicted value of a term. A limit is met when the band's pessimistic edge is within it (or, with SLO.judge
    "prediction", the value): the one judgement plan, cost and budgets share."""
    checks, bands = [], {}
    for key, limit in slo.limits.items():
        metric, pct = key.split("_", 1)
        value = value_of(metric, pct)
        b = term_band(dep, metric, value, regime) if value else None
        if b:
            bands[key] = b
        checks.append(Check(key, value, b.high if b else None, limit, slo.judge))
    return tuple(checks), bands


def slo_checks(dep: Deployment, summary: RunSummary, slo: SLO,
               regime: str = "serving") -> tuple[tuple[Check, ...], dict]:
    """term_checks of a run: each term's value its summary's percentile."""
    return term_checks(dep, slo, lambda metric, pct: getattr(summary, f"{metric}_s").get(pct), regime)


@dataclass(frozen=True)
class Judged:
    """One steady-state run: at what arrival rate, capped at which batch, and its summary."""

    rate: float
    batch: int
    requests: int
    warmup: int
    summary: RunSummary
    met: bool  # every limit met by its band's pessimistic edge (slo_checks)
    checks: tuple[Check, ...] = ()
    bands: Mapping[str, Band] = field(default_factory=dict)
    peak_running: int = 0
    preemptions: int = 0
    cache_hit_share: float | None = None  # prompt tokens the prefix cache served in the run

    def describe(self) -> str:
        return (f"steady state: {self.requests - self.warmup:,} requests judged, the first {self.warmup:,} left out "
                "as warm-up")


def judge(dep: Deployment, workload: Workload, slo: SLO, rate: float, batch: int, requests: int,
          simulate: Callable | None = None, context: int | None = None) -> Judged:
    """One steady-state run at `rate`, the engine capped at `batch` sequences of `context` tokens
    (None: the simulator's default) — what the emitted command sets."""
    from vazao.sim.config import SimConfig

    if simulate is None:
        from vazao.sim.run import simulate
    w = steady_workload(workload, requests=requests, rate=rate, limits=slo.limits)
    cfg = SimConfig.from_engine(dep.engine, max_num_seqs=batch, max_context=context)
    res = simulate(dep, w, cfg, slo=slo)
    checks, bands = slo_checks(dep, res.summary, slo)
    return Judged(rate, batch, w.requests, w.warmup, res.summary, all(c.met for c in checks), checks, bands,
                  getattr(res, "peak_running", 0), getattr(res, "preemptions", 0),
                  getattr(res, "cache_hit_share", None))


def slo_rate(dep: Deployment, workload: Workload, slo: SLO, batch: int, start: float, requests: int,
             precision: float = PRECISION, simulate: Callable | None = None,
             context: int | None = None) -> Judged | None:
    """Step 3 of the module docstring: the run at the highest arrival rate found that meets the SLO
    (None: even start / 1.5^10 misses)."""
    return capacity_search(dep, workload, slo, batch, start, requests, precision, simulate, context)[0]


def capacity_search(dep: Deployment, workload: Workload, slo: SLO, batch: int, start: float, requests: int,
                    precision: float = PRECISION, simulate: Callable | None = None,
                    context: int | None = None) -> tuple[Judged | None, Judged]:
    """slo_rate's search: (the run at the highest rate that meets the SLO or None, the last run made —
    where nothing meets, the lowest rate tried, the closest miss)."""
    runs: dict[float, Judged] = {}

    def at(rate: float) -> Judged:
        if rate not in runs:
            runs[rate] = judge(dep, workload, slo, rate, batch, requests, simulate, context)
        return runs[rate]

    good = bad = None
    r = start
    for _ in range(BRACKET_STEPS):
        if at(r).met:
            good = r
            if bad is not None:
                break
            r *= 1.5
        else:
            bad = r
            if good is not None:
                break
            r /= 1.5
    if good is None:
        return None, runs[min(runs)]
    while bad is not None and bad / good > 1 + precision:
        mid = (good * bad) ** 0.5
        good, bad = (mid, bad) if at(mid).met else (good, mid)
    return at(good), at(good)
