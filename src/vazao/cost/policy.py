"""Where a self-hosted cost's throughput comes from, and on how many GPUs: the policy behind
`vazao cost selfhost` and `vazao cost breakeven`, as one library call.

Throughput: a measured run when one is given, else the simulator on the workload, else (asked for,
or no workload to simulate) the analytic model. GPU count: the one given, else the cheapest per
request of 1, 2, 4 and 8 GPUs on the analytic model (a search on the simulator would run it dozens
of times for a choice the closed form already ranks)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from vazao.cost.breakeven import choose_count
from vazao.cost.energy import EnergySite
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
from vazao.results import DEFAULT_SLO, SLO, RunSummary

if TYPE_CHECKING:
    from vazao.cost.own import OwnAnswer, OwnOption, OwnTerms
    from vazao.cost.trends import BreakEvenTrend, TrendScenario
    from vazao.physics.deployment import Deployment
    from vazao.workload import Workload

FIXED_REQUESTS = 200  # requests of a fixed-length workload: enough for the simulator's p95


@dataclass(frozen=True)
class SLOChoice:
    """The SLO a cost is held to, and whether it is the default (the user gave none)."""

    slo: SLO | None  # None: no limit (throughput at saturation)
    is_default: bool = False

    @property
    def note(self) -> str:
        """The line that says which SLO holds, as cost and plan print it above their answer."""
        if self.slo is None:
            return "SLO: none (throughput at saturation, whatever the latency)"
        limits = ", ".join(f"{k} ≤ {v * 1e3:g} ms" for k, v in self.slo.limits.items())
        return f"SLO: {limits}, {self.slo.held}" + (" (the default; --slo to change, --slo none for none)"
                                                    if self.is_default else "")

    def to_json(self) -> dict:
        s = self.slo
        return {"slo": dict(s.limits) if s else None, "slo_judge": s.judge if s else None,
                "slo_is_default": self.is_default}

    @classmethod
    def from_json(cls, d: Mapping) -> SLOChoice:
        """From the three keys to_json writes (flat in an answer's document)."""
        limits = d.get("slo")
        return cls(None if limits is None else SLO(dict(limits), d.get("slo_judge") or "band"),
                   bool(d.get("slo_is_default", False)))


def slo_choice(text: str | None, judge: str = "band") -> SLOChoice:
    """The SLO `text` states (`none`: no limit; None: DEFAULT_SLO), held by `judge` (SLO.judge)."""
    if text is not None and text.strip().lower() == "none":
        return SLOChoice(None)
    return SLOChoice(SLO.parse(text or DEFAULT_SLO).judged_by(judge), is_default=text is None)


def traffic_rate(text: str | None, utilisation: Decimal = Decimal(1)) -> float | None:
    """The request rate a cost is priced at (None: none given). A cost's traffic is a rate, and it sets
    how busy the GPUs are, so it excludes a utilisation other than 1."""
    if text is None:
        return None
    from vazao.workload.traffic import Traffic

    t = Traffic.parse(text)
    if t.rate is None:
        raise VazaoError("the traffic of a cost is a request rate (20/s): the deployment's cost at that load")
    if Decimal(utilisation) != 1:
        raise VazaoError("give a traffic or a utilisation, not both: the traffic sets how busy the GPUs are")
    return t.rate


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
    engine: str | None = None  # None: the GPU's natural engine (physics.deployment.default_engine)
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
    from vazao.physics.deployment import make_deployment

    return make_deployment(q.model, q.gpu, q.fmt, count=count, engine=q.engine)


def _cost(q: SelfHostQuery, dep: Deployment, tp: Throughput) -> SelfHostCost:
    rate, rate_src = gpu_rate(dep.accelerator, q.usd_per_hour)
    return selfhost_cost(dep.label(), dep.count, rate, rate_src, tp, q.utilisation)


def _analytic(q: SelfHostQuery, dep: Deployment) -> Throughput:
    if q.shape is None:
        raise VazaoError("the analytic model needs a request shape (input and output tokens per request)")
    s = q.shape
    return analytic_throughput(dep, s.input_tokens, s.output_tokens, q.slo, s.cached_tokens)


# Counts whose analytic $/request is within this factor of the cheapest are simulated too, where the answer is a
# simulated one: the analytic screen ranks them, the figure reported decides (the analytic model and the
# simulator part by more than their bands' overlap on queueing-bound workloads)
SIMULATE_WITHIN = Decimal("1.5")


def pick_count(q: SelfHostQuery, counts: Sequence[int] = (1, 2, 4, 8)) -> int:
    """The GPU count (of `counts`) with the lowest $/request, as the answer is computed (pick_cost)."""
    return pick_cost(q, counts).gpus


def pick_cost(q: SelfHostQuery, counts: Sequence[int] = (1, 2, 4, 8)) -> SelfHostCost:
    """The cost at the GPU count (of `counts`) with the lowest $/request: ranked on the analytic model, and where
    the answer is simulated (a workload, not --analytic), the counts within SIMULATE_WITHIN of the cheapest
    simulated and the cheapest simulated one taken, so the count chosen is the cheapest by the figure shown."""
    _deployment(q, 1)  # an unknown model, GPU or format fails here, not as "no GPU count serves"

    def build(n: int, through=None) -> SelfHostCost | None:
        try:
            dep = _deployment(q, n)
            c = _cost(q, dep, (through or _analytic)(q, dep))
        except VazaoError:
            return None
        return c if c.usd_per_request is not None else None

    best = choose_count(build, counts)
    if q.analytic or q.workload is None:
        return best
    screen = {n: c for n in counts if (c := build(n)) is not None}
    near = [n for n, c in screen.items()
            if c.usd_per_request is not None and best.usd_per_request is not None
            and c.usd_per_request <= best.usd_per_request * SIMULATE_WITHIN]
    return choose_count(lambda n: build(n, throughput_for), near or [best.gpus])


def throughput_for(q: SelfHostQuery, dep: Deployment) -> Throughput:
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
        return pick_cost(q)
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


@dataclass(frozen=True)
class SelfHostAnswer:
    """`vazao cost selfhost`'s answer: the cost, at the traffic when one is given, under the SLO."""

    model: str
    shape: RequestShape | None
    slo: SLOChoice
    cost: SelfHostCost
    traffic_requests_per_s: float | None = None

    def to_json(self) -> dict:
        s = self.shape
        return {"kind": "selfhost", "model": self.model, "input_tokens": s.input_tokens if s else None,
                "output_tokens": s.output_tokens if s else None, **self.slo.to_json(),
                "traffic_requests_per_s": self.traffic_requests_per_s, **self.cost.to_json()}

    @classmethod
    def from_json(cls, d: Mapping) -> SelfHostAnswer:
        """The flat document to_json writes: the shape's, the SLO's and the cost's keys side by side.
        The shape's cached tokens are not in it (a cached share is costed, not reported): 0."""
        shape = None if d.get("input_tokens") is None else RequestShape(d["input_tokens"], d["output_tokens"])
        return cls(d["model"], shape, SLOChoice.from_json(d), SelfHostCost.from_json(d),
                   d.get("traffic_requests_per_s"))


def selfhost(q: SelfHostQuery, slo: SLOChoice | None = None, rps: float | None = None) -> SelfHostAnswer:
    """The self-hosted cost of `q` (selfhost_for), at `rps` requests/s when given (enough copies of the
    deployment carry it: cost.selfhost.at_traffic). `slo` names the SLO q holds (default: q.slo as given)."""
    from vazao.cost.selfhost import at_traffic

    choice = slo if slo is not None else SLOChoice(q.slo)
    if choice.slo != q.slo:
        q = replace(q, slo=choice.slo)
    c = selfhost_for(q)
    if rps is not None:
        c = at_traffic(c, rps)
    return SelfHostAnswer(q.model, q.shape, choice, c, rps)


@dataclass(frozen=True)
class BreakEvenAnswer:
    """`vazao cost breakeven`'s answer: a ranked BreakEven row per GPU type against one API price, and
    each side's monthly bill at the traffic when one is given. The winner is the GPU type that beats
    the API at the lowest traffic (None: the API is cheaper on every one). With a trend (a named, cited
    scenario: cost.trends) the break-even of each row month by month over a horizon; the document is
    then of kind "breakeven trend"."""

    model: str
    api_price: str
    api_price_as_of: str | None
    api_usd_per_request: Decimal
    shape: RequestShape
    slo: SLOChoice
    rows: tuple
    traffic_requests_per_s: float | None = None
    at_traffic: tuple[dict, ...] | None = None
    trend: BreakEvenTrend | None = None

    @property
    def winner(self) -> str | None:
        first = self.rows[0] if self.rows else None
        return first.gpu if first is not None and first.breakeven_requests_per_day is not None else None

    def to_json(self) -> dict:
        from vazao.catalog.prices import usd_str

        out = {"kind": "breakeven", "model": self.model, "api_price": self.api_price,
               "api_price_as_of": self.api_price_as_of,
               "api_usd_per_request": usd_str(self.api_usd_per_request), "input_tokens": self.shape.input_tokens,
               "output_tokens": self.shape.output_tokens, **self.slo.to_json(), "winner": self.winner,
               "rows": [r.to_json() for r in self.rows]}
        if self.at_traffic is not None:
            out.update({"traffic_requests_per_s": self.traffic_requests_per_s, "at_traffic": list(self.at_traffic)})
        if self.trend is not None:
            out.update({"kind": "breakeven trend", "trend": self.trend.to_json()})
        return out

    @classmethod
    def from_json(cls, d: Mapping) -> BreakEvenAnswer:
        """The winner is derived (the first row's GPU when it breaks even): read back from the rows."""
        from vazao.cost.breakeven import BreakEven
        from vazao.cost.trends import BreakEvenTrend

        at, trend = d.get("at_traffic"), d.get("trend")
        return cls(d["model"], d["api_price"], d.get("api_price_as_of"), Decimal(d["api_usd_per_request"]),
                   RequestShape(d["input_tokens"], d["output_tokens"]), SLOChoice.from_json(d),
                   tuple(BreakEven.from_json(r) for r in d["rows"]), d.get("traffic_requests_per_s"),
                   None if at is None else tuple(dict(a) for a in at),
                   None if trend is None else BreakEvenTrend.from_json(trend))


def breakeven(q: SelfHostQuery, gpus: Sequence[str], table, plan: Sequence | None = None,
              cache_ttl: str | None = None, slo: SLOChoice | None = None,
              rps: float | None = None, horizon_months: int | None = None,
              trend: TrendScenario | None = None) -> BreakEvenAnswer:
    """Self-hosting `q` on each of `gpus` against the API price `table` (a PriceTable): the API's mean
    bill per request over the workload's `plan` (prefixes cached with cache_ttl) or for q.shape, and
    with `rps` each side's monthly bill at that traffic. With `trend` (cost.trends.TrendScenario) and
    `horizon_months`, each row that can serve projected month by month under that scenario."""
    if (trend is None) != (horizon_months is None):
        raise VazaoError("a break-even over time needs both a horizon and a trend scenario", parameter="trend")
    if q.shape is None:
        raise VazaoError("a break-even needs a request shape (input and output tokens per request)")
    choice = slo if slo is not None else SLOChoice(q.slo)
    if choice.slo != q.slo:
        q = replace(q, slo=choice.slo)
    per_request = api_usd_per_request(table, q.shape, plan, cache_ttl)
    rows = tuple(break_evens(q, gpus, table.id, per_request))
    at = tuple(monthly_at(r.selfhost, rps, per_request) for r in rows) if rps is not None else None
    projected = None
    if trend is not None and horizon_months is not None:
        from vazao.cost.trends import BreakEvenTrend, project_with_range

        tokens = q.shape.input_tokens + q.shape.output_tokens
        projected = BreakEvenTrend(trend, horizon_months, tuple(
            project_with_range(r, trend, horizon_months, per_request, tokens, rps)
            for r in rows if r.selfhost.throughput.requests_per_s > 0))
    return BreakEvenAnswer(q.model, table.id, table.as_of, per_request, q.shape, choice, rows, rps, at, projected)


# ---- owning against renting and an API ----------------------------------------------------------


@dataclass(frozen=True)
class OwnChoice:
    """What `vazao cost own` weighs besides the query: the cards to buy (and on what terms), the GPUs to
    rent, an API price, the horizon and the traffic every option must carry."""

    owned: tuple[str, ...]
    rented: tuple[str, ...] = ()
    api_price: str | None = None
    condition: str | None = None  # new | used | None: the cheapest published
    price: str | None = None  # $ per card, in place of the catalog's (one owned GPU only)
    life_years: float | None = None  # None: the catalog's convention for the part
    resale_share: Decimal = Decimal(0)
    hosting_usd_per_gpu_month: Decimal = Decimal(0)
    site: EnergySite | None = None  # None: the catalog's datacenter site
    horizon_months: int = 36
    requests_per_s: float = 1.0


def _cheapest_owned(q: SelfHostQuery, gpu: str, terms: OwnTerms, months: int, out_tokens: int,
                    rps: float) -> tuple[OwnOption | None, str]:
    """(the owned option with the lowest total over the horizon among 1, 2, 4 and 8 boards per copy, or
    the given count; None and why when none serves): few boards may carry a light load, more may be
    needed to meet the SLO at all."""
    from vazao.cost.own import owned_option

    best, why = None, "no GPU count of 1, 2, 4, 8 serves"
    for n in (q.count,) if q.count is not None else (1, 2, 4, 8):
        try:
            c = selfhost_for(replace(q, gpu=gpu, count=n, usd_per_hour="1"))  # the rate is not read
        except VazaoError as exc:
            why = str(exc)
            continue
        if c.throughput.requests_per_s <= 0:
            why = c.throughput.detail
            continue
        o = owned_option(c, terms, months, out_tokens, rps)
        if best is None or o.total_usd < best.total_usd:
            best = o
    return best, why


def own(q: SelfHostQuery, choice: OwnChoice) -> OwnAnswer:
    """Each owned card, rented GPU and the API serving the same requests (`choice.requests_per_s` of
    q.shape under q.slo) over the horizon, cheapest per request first; see cost/own.py."""
    from vazao import limits
    from vazao.catalog.local import resolve_accelerator
    from vazao.catalog.prices import get_price
    from vazao.cost.energy import default_site
    from vazao.cost.own import (
        OwnAnswer,
        OwnTerms,
        check_terms,
        default_life,
        purchase_price,
        rank,
        running_option,
    )
    from vazao.cost.selfhost import at_traffic

    if q.shape is None:
        raise VazaoError("an owned cost needs a request shape (input and output tokens per request)")
    if not 1 <= choice.horizon_months <= limits.MAX_HORIZON_MONTHS:
        raise VazaoError(f"the horizon is 1 to {limits.MAX_HORIZON_MONTHS} months, got {choice.horizon_months}",
                         parameter="horizon")
    if not choice.owned:
        raise VazaoError("name at least one GPU to own", parameter="gpu")
    if choice.price is not None and len(choice.owned) > 1:
        raise VazaoError("a purchase price is one card's: give it with one GPU to own", parameter="price")
    if not Decimal(0) <= choice.resale_share < Decimal(1):
        raise VazaoError(f"the resale share is the part of the price sold back, 0 to below 1; got "
                         f"{choice.resale_share}", parameter="resale")
    if choice.life_years is not None and not limits.MIN_LIFE_YEARS <= choice.life_years <= limits.MAX_LIFE_YEARS:
        raise VazaoError(f"a service life is {limits.MIN_LIFE_YEARS:g} to {limits.MAX_LIFE_YEARS:g} years, got "
                         f"{choice.life_years:g}", parameter="life")
    check_terms(choice.condition, choice.price)
    if not 0 < choice.requests_per_s < float("inf"):
        raise VazaoError(f"the traffic is a positive request rate, got {choice.requests_per_s:g}/s",
                         parameter="traffic")
    rps = choice.requests_per_s
    site = choice.site or default_site()
    out_tokens = q.shape.output_tokens
    months = choice.horizon_months
    per_month = rps * 3600 * float(HOURS_PER_MONTH)
    options, refused = [], {}
    for gpu in choice.owned:
        acc = resolve_accelerator(gpu)
        try:
            usd, src, cond = purchase_price(acc.id, acc.name, choice.condition, choice.price)
            life, life_src = ((choice.life_years, "given") if choice.life_years is not None
                              else default_life(acc.name))
            terms = OwnTerms(usd, src, cond, life, life_src, choice.resale_share,
                             choice.hosting_usd_per_gpu_month, site)
            best, why = _cheapest_owned(q, gpu, terms, months, out_tokens, rps)
            if best is None:
                refused[f"{acc.id} (owned)"] = why
                continue
            options.append(best)
        except VazaoError as exc:
            refused[f"{acc.id} (owned)"] = str(exc)
    for gpu in choice.rented:
        acc = resolve_accelerator(gpu)
        try:
            c = selfhost_for(replace(q, gpu=gpu))
            if c.throughput.requests_per_s <= 0:
                refused[f"{acc.id} (rented)"] = c.throughput.detail
                continue
            c = at_traffic(c, rps)
            options.append(running_option("rented", f"{c.deployment}, rented", c.gpus, c.usd_per_request,
                                          per_month, months, out_tokens, c))
        except VazaoError as exc:
            refused[f"{acc.id} (rented)"] = str(exc)
    if choice.api_price is not None:
        table = get_price(choice.api_price)
        per_req = api_usd_per_request(table, q.shape)
        options.append(running_option("api", f"API {table.id}", 0, per_req, per_month, months, out_tokens))
    return OwnAnswer(q.model, q.shape.input_tokens, out_tokens, months, rps, rank(options, months), refused)
