"""Where a self-hosted cost's throughput comes from, and on how many GPUs: the policy behind
`vazao cost selfhost` and `vazao cost breakeven`, as one library call.

Throughput: a measured run when one is given, else the simulator on the workload, else (asked for,
or no workload to simulate) the analytic model. GPU count: the one given, else the cheapest per
request of 1, 2, 4 and 8 GPUs on the analytic model (a search on the simulator would run it dozens
of times for a choice the closed form already ranks)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from vazao.cost.breakeven import choose_count
from vazao.cost.money import HOURS_PER_MONTH
from vazao.cost.selfhost import (
    SelfHostCost,
    Throughput,
    analytic_throughput,
    given_rate,
    gpu_rate,
    selfhost_cost,
    simulated_throughput,
    throughput_from_summary,
)
from vazao.errors import VazaoError
from vazao.results import SLO, RunSummary

if TYPE_CHECKING:
    from vazao.workload import Workload

FIXED_REQUESTS = 200  # requests of a fixed-length workload: enough for the simulator's p95


@dataclass(frozen=True)
class RequestShape:
    """The mean request the analytic model costs: prompt, output and prefix-cached prompt tokens."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


@dataclass(frozen=True)
class SelfHostQuery:
    """What to cost: a model on `gpu` (× count, None: the cheapest of 1, 2, 4, 8), at `usd_per_hour`
    per GPU (None: the catalog's), for a request shape or a workload, under an SLO (None: saturation).
    measured: a measured run's summary, which brings its own throughput (needs count), named in the
    result by measured_detail; analytic: skip the simulator."""

    model: str
    gpu: str
    shape: RequestShape | None = None
    workload: Workload | None = None  # what the simulator runs
    count: int | None = None
    fmt: str | None = None
    engine: str = "vllm"
    usd_per_hour: str | None = None
    utilisation: Decimal = Decimal(1)
    slo: SLO | None = None
    measured: RunSummary | None = None
    measured_detail: str = ""
    analytic: bool = False


def mean_shape(plan: Sequence, name: str = "workload") -> RequestShape:
    """The mean request of a planned workload (RequestSpecs), rounded to whole tokens."""
    if not plan:
        raise VazaoError(f"workload {name} plans no requests")
    return RequestShape(round(statistics.fmean(r.prompt_tokens for r in plan)),
                        round(statistics.fmean(r.output_tokens for r in plan)),
                        round(statistics.fmean(r.prefix_tokens for r in plan)))


def fixed_workload(input_tokens: int, output_tokens: int) -> Workload:
    """A closed-loop workload of identical requests: what the simulator runs for a bare request shape."""
    from vazao.workload import workload_from_dict

    return workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 1}, "prompt": input_tokens,
                               "output": output_tokens, "requests": FIXED_REQUESTS},
                              name=f"fixed {input_tokens} in / {output_tokens} out")


def _deployment(q: SelfHostQuery, count: int):
    from vazao.scenario import deployment_for

    return deployment_for(q.model, q.gpu, q.fmt, count=count, engine=q.engine)


def _cost(q: SelfHostQuery, dep, tp: Throughput) -> SelfHostCost:
    rate, rate_src = gpu_rate(dep.accelerator, q.usd_per_hour)
    return selfhost_cost(dep.label(), dep.count, rate, rate_src, tp, q.utilisation)


def _analytic(q: SelfHostQuery, dep) -> Throughput:
    if q.shape is None:
        raise VazaoError("the analytic model needs a request shape (input and output tokens per request)")
    s = q.shape
    return analytic_throughput(dep, s.input_tokens, s.output_tokens, q.slo, s.cached_tokens)


def pick_count(q: SelfHostQuery, counts: Sequence[int] = (1, 2, 4, 8)) -> int:
    """The GPU count (of `counts`) with the lowest $/request on the analytic model."""
    _deployment(q, 1)  # an unknown model, GPU or format fails here, not as "no GPU count serves"

    def build(n: int) -> SelfHostCost | None:
        try:
            dep = _deployment(q, n)
            c = _cost(q, dep, _analytic(q, dep))
        except VazaoError:
            return None
        return c if c.usd_per_request is not None else None

    return choose_count(build, counts).gpus


def throughput_for(q: SelfHostQuery, dep) -> Throughput:
    """The measured run, else the simulator (when not analytic and there is a workload), else analytic."""
    if q.measured is not None:
        return throughput_from_summary(q.measured, "measured", q.measured_detail)
    if not q.analytic and q.workload is not None:
        return simulated_throughput(dep, q.workload, q.slo)
    return _analytic(q, dep)


def selfhost_for(q: SelfHostQuery) -> SelfHostCost:
    """The self-hosted cost the query asks for (see SelfHostQuery and this module's policy)."""
    if q.usd_per_hour is not None:
        given_rate(q.usd_per_hour)  # a bad figure fails here, not as "no GPU count serves"
    count = q.count
    if count is None:
        if q.measured is not None:
            raise VazaoError("a measured run needs the GPU count that served it (count)")
        count = pick_count(q)
    dep = _deployment(replace(q, count=count), count)
    return _cost(q, dep, throughput_for(q, dep))


# ---- break-even against an API ----------------------------------------------------------------


def api_usd_per_request(table, shape: RequestShape, plan: Sequence | None = None,
                        cache_ttl: str | None = None) -> Decimal:
    """The API's mean bill per request: over the workload's plan (its prefixes cached with cache_ttl),
    else for one request of the shape, uncached."""
    from vazao.cost.breakeven import bill_workload
    from vazao.cost.ledger import TokenLedger, bill_requests

    if plan is not None:
        api = bill_workload(plan, table, cache_ttl)
        return api.total_usd / api.requests
    led = TokenLedger(new_input=shape.input_tokens, output=shape.output_tokens)
    return bill_requests(table, [("request", led)], cache_ttl=None).total_usd


def break_evens(q: SelfHostQuery, gpus: Sequence[str], api_price: str, api_per_request: Decimal) -> list:
    """A BreakEven row per accelerator in `gpus` (q.gpu is replaced by each), ranked."""
    from vazao.catalog.local import resolve_accelerator
    from vazao.cost.breakeven import break_even, ranked_break_evens

    if q.shape is None:
        raise VazaoError("a break-even needs a request shape (input and output tokens per request)")
    tokens = q.shape.input_tokens + q.shape.output_tokens
    rows = [break_even(selfhost_for(replace(q, gpu=gpu)), resolve_accelerator(gpu).id, api_price,
                       api_per_request, tokens) for gpu in gpus]
    return ranked_break_evens(rows)


def monthly_at(cost: SelfHostCost, rps: float, api_per_request: Decimal) -> dict:
    """Self-hosted and API bills per month at `rps` requests/s: enough copies of the deployment
    (cost.selfhost.at_traffic) against the API's bill for the same requests."""
    from vazao.cost.selfhost import at_traffic

    c = at_traffic(cost, rps)
    api = float(api_per_request) * rps * HOURS_PER_MONTH * 3600
    own = float(c.usd_per_hour) * HOURS_PER_MONTH
    return {"deployment": c.deployment, "gpus": c.gpus, "selfhost_usd_per_month": round(own, 2),
            "api_usd_per_month": round(api, 2), "cheaper": "self-hosted" if own < api else "api"}
