"""One capacity policy: the batch a deployment is capped at and the traffic it carries within an SLO,
used by `vazao plan` and `vazao cost selfhost`/`breakeven` alike.

1. The batch cap (what the emitted --max-num-seqs sets): the largest batch whose analytic steady
   point holds the TPOT/ITL limits (with 15% headroom) with the prefill the engine mixes into each step (each finished
   sequence's successor is prefilled inside the running batch's steps) and whose TTFT (own prefill
   plus one step, no queue) holds the TTFT limits: estimate.slo_batch at the workload's mean lengths.
2. A run is judged at steady state: an open loop leaves its first tenth out (it starts from an empty
   engine), a closed loop its first `concurrency` requests (every user sends at t = 0, a burst no
   steady state has) and runs at least 10 requests per user.
3. The capacity within the SLO: the highest Poisson arrival rate whose steady-state simulation, the
   engine capped at the batch of 1 (sequences of the workload's longest request, as the emitted command
   sets them), meets every limit; bracketed from the analytic rate by factors of
   1.5 and bisected to `precision`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vazao.results import SLO, RunSummary
    from vazao.workload import Workload

STEADY_REQUESTS_PER_USER = 10
WARMUP_SHARE = 10  # an open loop's first 1/10 is warm-up
LATENCY_TERMS = ("ttft", "tpot", "itl")
MAX_BRACKET = 10
PRECISION = 0.03
CAP_HEADROOM = 0.85
MAX_STEADY = 20_000


def batch_cap(dep, prompt_tokens: int, output_tokens: int, limits: Mapping[str, float], cap: int,
              cached_tokens: int = 0):
    """Step 1 of the module docstring: the steady point at the cap (estimate.SteadyPoint), None when
    even batch 1 misses a limit. `cap` is the most sequences memory and the engine allow."""
    from vazao.estimate import slo_batch, steady_point

    # TPOT/ITL held with CAP_HEADROOM: the steady point is a mean over steps, and the steps that carry a
    # long prompt's chunk are slower than it (summarize at saturation ran 10% over without it)
    terms = {k: v * (CAP_HEADROOM if k.split("_", 1)[0] != "ttft" else 1.0) for k, v in limits.items()
             if k.split("_", 1)[0] in LATENCY_TERMS}
    if cap < 1:
        return None
    if not terms:
        return steady_point(dep, prompt_tokens, output_tokens, cap, cached_tokens)
    return slo_batch(dep, prompt_tokens, output_tokens, terms, cap, cached_tokens)


def sequence_limit(dep, prompt_tokens: int, output_tokens: int, context: int) -> int:
    """The most sequences one replica holds, and so the most a plan may set (--max-num-seqs, -np): KV
    memory (a paged cache at the mean request: a long one takes more blocks, a short one fewer and the
    simulator preempts where they do not fit; a reserved cache `context` tokens a slot, the emitted
    per-sequence context) and the most the engine accepts (EngineProfile.seq_ceiling)."""
    from vazao.physics.memory import fit

    per_seq = context if dep.engine.kv_layout == "reserved" else prompt_tokens + output_tokens
    f = fit(dep, max(1, per_seq))
    return min(f.max_concurrent_sequences // max(1, dep.replicas), dep.engine.seq_ceiling)


@dataclass(frozen=True)
class Demand:
    """What a workload's requests look like on average (from a 2,000-request sample of its plan)."""

    prompt_tokens: float  # with shared prefix and conversation history
    output_tokens: float
    cached_tokens: float  # prefix + history tokens a prefix cache can serve
    requests_per_session: float  # conversation turns (1 without conversations)
    think_s: float  # mean think time between a session's turns


def demand_of(workload: Workload) -> Demand:
    plan = workload.with_overrides(requests=2000).plan()
    n = max(1, len(plan))
    sessions = max(1, sum(1 for r in plan if r.turn == 1))
    think = sum(r.think_time_s for r in plan if r.turn > 1) / max(1, n - sessions)
    return Demand(sum(r.prompt_tokens for r in plan) / n, sum(r.output_tokens for r in plan) / n,
                  sum(r.prefix_tokens + r.history_tokens for r in plan) / n, n / sessions, think)


def _limit(limits: Mapping[str, float], metric: str, default: float) -> float:
    vals = [v for k, v in limits.items() if k.split("_", 1)[0] == metric]
    return min(vals) if vals else default


def steady_length(workload: Workload, arrivals_per_s: float, limits: Mapping[str, float],
                  minimum: int) -> tuple[int, int]:
    """(requests, warm-up requests) for a steady-state judgement at `arrivals_per_s`. The arrivals must
    span long enough for an overload to show as a queue: an arrival rate 10% over capacity adds a
    tenth of the run's length to the last requests' TTFT, so the run lasts 20× the TTFT limit and 10×
    a request's longest allowed E2E; a conversation workload 3 session lifetimes after a warm-up of
    one (sessions overlap only once the first have run their turns). Capped at MAX_STEADY requests."""
    d = demand_of(workload)
    ttft = _limit(limits, "ttft", 1.0)
    e2e = _limit(limits, "e2e", ttft + d.output_tokens * _limit(limits, "tpot", _limit(limits, "itl", 0.05)))
    lifetime = d.requests_per_session * (d.think_s + e2e)
    span = max(20 * ttft, 10 * e2e, 3 * lifetime if d.requests_per_session > 1 else 0.0)
    warm = lifetime if d.requests_per_session > 1 else span / WARMUP_SHARE
    rate = arrivals_per_s * d.requests_per_session
    n = int(min(MAX_STEADY, max(minimum, rate * (span + warm))))
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
class Judged:
    """One steady-state run: at what arrival rate, capped at which batch, and its summary."""

    rate: float
    batch: int
    requests: int
    warmup: int
    summary: RunSummary
    met: bool

    def describe(self) -> str:
        return (f"steady state: {self.requests - self.warmup:,} requests judged, the first {self.warmup:,} left out "
                "as warm-up")


def judge(dep, workload: Workload, slo: SLO, rate: float, batch: int, requests: int,
          simulate: Callable | None = None, context: int | None = None) -> Judged:
    """One steady-state run at `rate`, the engine capped at `batch` sequences of `context` tokens
    (None: the simulator's default) — what the emitted command sets."""
    from vazao.sim.config import SimConfig

    if simulate is None:
        from vazao.sim.run import simulate
    w = steady_workload(workload, requests=requests, rate=rate, limits=slo.limits)
    cfg = SimConfig.from_engine(dep.engine, max_num_seqs=batch, max_context=context)
    res = simulate(dep, w, cfg, slo=slo)
    return Judged(rate, batch, w.requests, w.warmup, res.summary, slo.met_by(res.summary))


def slo_rate(dep, workload: Workload, slo: SLO, batch: int, start: float, requests: int,
             precision: float = PRECISION, simulate: Callable | None = None,
             context: int | None = None) -> Judged | None:
    """Step 3 of the module docstring: the run at the highest arrival rate found that meets the SLO
    (None: even start / 1.5^10 misses)."""
    runs: dict[float, Judged] = {}

    def at(rate: float) -> Judged:
        if rate not in runs:
            runs[rate] = judge(dep, workload, slo, rate, batch, requests, simulate, context)
        return runs[rate]

    good = bad = None
    r = start
    for _ in range(MAX_BRACKET):
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
        return None
    while bad is not None and bad / good > 1 + precision:
        mid = (good * bad) ** 0.5
        good, bad = (mid, bad) if at(mid).met else (good, mid)
    return at(good)
