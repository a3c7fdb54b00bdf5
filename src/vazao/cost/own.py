"""Owning GPUs against renting them and against an API: `vazao cost own`.

An owned deployment's hour costs its capex written off over the service life, its electricity (at the
site's PUE and $/kWh, from the boards' draw at the throughput served: cost/energy.py) and its hosting:

    usd_per_gpu_hour = price x (1 - resale) / (life_years x 12 x HOURS_PER_MONTH)
                       + electricity per GPU-hour + hosting per GPU-month / HOURS_PER_MONTH

Over a horizon of H months the owner pays the cards up front, the running costs every month, and gets
the resale share of the price back at the end:

    total = gpus x price x (1 - resale) + H x (electricity + hosting per month)

and the payback month against an alternative (renting, an API) is the first month whose cumulative
owned cost (cards + running) is no more than the alternative's bill for the same requests. Each
option serves the same request shape under the same SLO; with a traffic every option carries it (enough
copies, each as busy as the traffic makes it), else each runs at the utilisation given."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from vazao import limits
from vazao.catalog.ownership import purchases_of
from vazao.catalog.ownership import site as catalog_site
from vazao.catalog.prices import money
from vazao.cost.energy import EnergySite, energy_cost
from vazao.cost.money import HOURS_PER_MONTH, MICRO, to_decimal
from vazao.cost.selfhost import SelfHostCost, Throughput, at_traffic, copies_band, selfhost_cost, with_copies_band
from vazao.errors import VazaoError
from vazao.resultfiles import from_document

__all__ = ["OwnAnswer", "OwnOption", "OwnTerms", "owned_gpu_hour", "owned_option", "payback_month", "purchase_price"]

CONDITIONS = ("new", "used")


@dataclass(frozen=True)
class OwnTerms:
    """What owning costs besides the boards' throughput: the price paid per card and where it comes
    from, the life it is written off over, the share of the price a buyer pays back at the end, the
    hosting per GPU-month and the site's electricity."""

    purchase_usd: Decimal
    purchase_source: str
    condition: str
    life_years: float
    life_source: str
    resale_share: Decimal
    hosting_usd_per_gpu_month: Decimal
    site: EnergySite

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        for k in ("purchase_usd", "resale_share", "hosting_usd_per_gpu_month"):
            d[k] = str(d[k])
        d["site"] = self.site.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> OwnTerms:
        return from_document(cls, d, site=EnergySite.from_json(d["site"]))

    def fixed_usd_per_gpu_hour(self) -> Decimal:
        """What a card costs an hour whatever it serves: the capex net of resale over the life, and hosting."""
        life_h = to_decimal(self.life_years) * 12 * HOURS_PER_MONTH
        return (self.purchase_usd * (1 - self.resale_share) / life_h
                + self.hosting_usd_per_gpu_month / HOURS_PER_MONTH)


def check_terms(condition: str | None, given: str | None) -> None:
    """The user's condition and price, checked before any option is weighed."""
    if condition is not None and condition not in CONDITIONS:
        raise VazaoError(f"condition is new or used, got {condition!r}", parameter="condition")
    if given is not None:
        given_price(given)


def given_price(given: str) -> Decimal:
    try:
        usd = money(str(given), "price")
    except VazaoError:
        usd = Decimal("NaN")
    if not usd.is_finite() or not Decimal(0) < usd <= limits.MAX_PURCHASE_USD:
        raise VazaoError(f"a purchase price is $ per card, above 0 and at most {limits.MAX_PURCHASE_USD:,}; "
                         f"got {given!r}", parameter="price")
    return usd


def purchase_price(accelerator_id: str, name: str, condition: str | None,
                   given: str | None) -> tuple[Decimal, str, str]:
    """(price per card, its source, new|used): the figure given, else the catalog's newest published price
    for the condition asked (None: the cheapest condition published)."""
    check_terms(condition, given)
    if given is not None:
        return given_price(given), "given", condition or "new"
    rows = [p for p in purchases_of(accelerator_id) if condition is None or p.condition == condition]
    if not rows:
        what = f"{condition} " if condition else ""
        raise VazaoError(f"{name} has no published {what}purchase price in the catalog (catalog/data/"
                         "ownership.yaml); give the price paid per card", parameter="price")
    newest: dict[str, Any] = {}
    for p in rows:  # newest first within each condition
        newest.setdefault(p.condition, p)
    pick = min(newest.values(), key=lambda p: p.usd)
    return to_decimal(pick.usd), f"catalog: {pick.source} ({pick.as_of})", pick.condition


def default_life(name: str) -> tuple[float, str]:
    s = catalog_site()
    consumer = "geforce" in name.lower()
    return ((s.service_life_years_consumer if consumer else s.service_life_years_datacenter),
            ("consumer card: " if consumer else "datacenter part: ") + s.life_source)


@dataclass(frozen=True)
class OwnOption:
    """One way to serve the requests over the horizon: owned boards, rented ones, or an API."""

    kind: str  # owned | rented | api
    label: str
    gpus: int  # 0 for an API
    usd_per_request: Decimal | None
    usd_per_mtok_output: Decimal | None  # over the horizon, all cost charged to output tokens
    monthly_usd: Decimal  # running cost a month (owned: electricity + hosting; rented/API: the bill)
    upfront_usd: Decimal  # owned: the cards; else 0
    total_usd: Decimal  # over the horizon, resale returned
    requests_per_month: float
    cost: SelfHostCost | None = None
    terms: OwnTerms | None = None
    payback_months: Mapping[str, int | None] | None = None  # owned: against each other option's label
    # the 80% bands (low, high) of the per-request and per-Mtok figures, from the throughput's band (None: an
    # API's bill, a measured or uncalibrated throughput)
    usd_per_request_band: tuple[Decimal, Decimal] | None = None
    usd_per_mtok_output_band: tuple[Decimal, Decimal] | None = None
    monthly_usd_band: tuple[Decimal, Decimal] | None = None
    upfront_usd_band: tuple[Decimal, Decimal] | None = None
    total_usd_band: tuple[Decimal, Decimal] | None = None

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        for k in ("usd_per_request", "usd_per_mtok_output", "monthly_usd", "upfront_usd", "total_usd"):
            d[k] = None if d[k] is None else str(d[k])
        for k in ("usd_per_request_band", "usd_per_mtok_output_band", "monthly_usd_band", "upfront_usd_band",
                  "total_usd_band"):
            d[k] = None if d[k] is None else [str(x) for x in d[k]]
        d["cost"] = None if self.cost is None else self.cost.to_json()
        d["terms"] = None if self.terms is None else self.terms.to_json()
        d["payback_months"] = None if self.payback_months is None else dict(self.payback_months)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> OwnOption:
        return from_document(cls, d, cost=None if d.get("cost") is None else SelfHostCost.from_json(d["cost"]),
                             terms=None if d.get("terms") is None else OwnTerms.from_json(d["terms"]),
                             payback_months=None if d.get("payback_months") is None else dict(d["payback_months"]))


def _q(x: Decimal) -> Decimal:
    return x.quantize(MICRO, rounding=ROUND_HALF_UP)


def owned_option(c: SelfHostCost, terms: OwnTerms, horizon_months: int, output_tokens: int,
                 requests_per_s: float | None = None) -> OwnOption:
    """The owned deployment whose throughput `c` holds (costed at any rate: only its throughput and GPU
    count are read), over `horizon_months`, at `requests_per_s` when given (enough copies carry it); its bands
    are the same option at the two edges of the throughput's band (at a fixed traffic: with the cards each
    edge needs)."""
    o = _owned(c, terms, horizon_months, output_tokens, requests_per_s)
    b = c.throughput.band
    if b is None or b.low <= 0 or c.throughput.output_tokens_per_s <= 0 or o.usd_per_request is None:
        return o
    fast, slow = (_owned(_at_rate(c, edge / c.throughput.output_tokens_per_s), terms, horizon_months, output_tokens,
                         requests_per_s) for edge in (b.high, b.low))
    cheap_req, dear_req, cheap_mtok, dear_mtok = (fast.usd_per_request, slow.usd_per_request,
                                                  fast.usd_per_mtok_output, slow.usd_per_mtok_output)
    if cheap_req is None or dear_req is None or cheap_mtok is None or dear_mtok is None:
        return o

    def span(a: Decimal, b: Decimal) -> tuple[Decimal, Decimal]:
        # the edges in order: at full load the fast edge serves more, so its electricity (the monthly) is higher
        return (a, b) if a <= b else (b, a)

    return replace(o, usd_per_request_band=span(cheap_req, dear_req),
                   usd_per_mtok_output_band=span(cheap_mtok, dear_mtok),
                   monthly_usd_band=span(fast.monthly_usd, slow.monthly_usd),
                   upfront_usd_band=span(fast.upfront_usd, slow.upfront_usd),
                   total_usd_band=span(fast.total_usd, slow.total_usd))


def _at_rate(c: SelfHostCost, factor: float) -> SelfHostCost:
    """`c` with its throughput × factor (a band edge's), the band dropped."""
    tp = c.throughput
    return replace(c, throughput=replace(tp, requests_per_s=tp.requests_per_s * factor,
                                         input_tokens_per_s=tp.input_tokens_per_s * factor,
                                         output_tokens_per_s=tp.output_tokens_per_s * factor, band=None))


def _owned(c: SelfHostCost, terms: OwnTerms, horizon_months: int, output_tokens: int,
           requests_per_s: float | None = None) -> OwnOption:
    one, copies = c, 1
    if requests_per_s is not None:
        c = at_traffic(c, requests_per_s)
        copies = c.gpus // one.gpus
    tp: Throughput = c.throughput
    gpus, util = c.gpus, c.utilisation
    if tp.power_w is None or tp.idle_w is None:
        raise VazaoError(f"{c.deployment}: the board has no published power rating (catalog/data/ownership.yaml); "
                         "an owned cost needs its electricity")
    e = energy_cost(tp.power_w, tp.idle_w, gpus, tp.input_tokens_per_s, tp.output_tokens_per_s, util, terms.site)
    hosting_h = terms.hosting_usd_per_gpu_month / HOURS_PER_MONTH
    per_gpu_h = _q(terms.fixed_usd_per_gpu_hour() + e.usd_per_hour / gpus)
    owned = selfhost_cost(c.deployment, gpus, per_gpu_h, "owned: capex over the life + electricity + hosting",
                          tp, util, terms.site)
    if requests_per_s is not None:  # a fixed traffic: the band moves the cards bought, not the tokens served
        owned = with_copies_band(owned, copies, copies_band(one.throughput, requests_per_s, copies))
    monthly = _q((e.usd_per_hour + hosting_h * gpus) * HOURS_PER_MONTH)
    upfront = _q(terms.purchase_usd * gpus)
    total = _q(upfront * (1 - terms.resale_share) + monthly * horizon_months)
    reqs = tp.requests_per_s * 3600 * float(HOURS_PER_MONTH) * float(util)
    per_req = _q(total / to_decimal(reqs * horizon_months)) if reqs > 0 else None
    per_mtok = _q(per_req / output_tokens * 1_000_000) if per_req is not None else None
    return OwnOption("owned", f"{c.deployment}, owned ({terms.condition})", gpus, per_req, per_mtok, monthly, upfront,
                     total, reqs, owned, terms)


def running_option(kind: str, label: str, gpus: int, usd_per_request: Decimal | None, requests_per_month: float,
                   horizon_months: int, output_tokens: int, cost: SelfHostCost | None = None) -> OwnOption:
    """A rented deployment or an API: a bill per request, nothing up front (a rented one's band: its cost's)."""
    monthly = _q(usd_per_request * to_decimal(requests_per_month)) if usd_per_request is not None else Decimal(0)
    per_mtok = _q(usd_per_request / output_tokens * 1_000_000) if usd_per_request is not None else None
    req_band = None if cost is None else cost.usd_per_request_band
    mtok_band = month_band = total_band = None
    if req_band is not None:
        mtok_band = (_q(req_band[0] / output_tokens * 1_000_000), _q(req_band[1] / output_tokens * 1_000_000))
        per_month = to_decimal(requests_per_month)
        month_band = (_q(req_band[0] * per_month), _q(req_band[1] * per_month))
        total_band = (_q(month_band[0] * horizon_months), _q(month_band[1] * horizon_months))
    return OwnOption(kind, label, gpus, usd_per_request, per_mtok, monthly, Decimal(0), _q(monthly * horizon_months),
                     requests_per_month, cost, usd_per_request_band=req_band, usd_per_mtok_output_band=mtok_band,
                     monthly_usd_band=month_band, total_usd_band=total_band)


def payback_month(owned: OwnOption, alt: OwnOption, horizon_months: int) -> int | None:
    """The first month (1…) whose cumulative owned cost (the cards, then the running costs) is no more
    than the alternative's bill for the owned option's requests; None: not within the horizon."""
    if alt.usd_per_request is None or owned.requests_per_month <= 0:
        return None
    alt_month = alt.usd_per_request * to_decimal(owned.requests_per_month)
    saving = alt_month - owned.monthly_usd
    if saving <= 0:
        return None
    m = math.ceil(owned.upfront_usd / saving) if owned.upfront_usd > 0 else 1
    return max(1, m) if m <= horizon_months else None


@dataclass(frozen=True)
class OwnAnswer:
    """`vazao cost own`'s answer: every option over the horizon, cheapest per request first, and each
    owned option's payback month against the others."""

    model: str
    input_tokens: int
    output_tokens: int
    horizon_months: int
    traffic_requests_per_s: float | None
    options: tuple[OwnOption, ...]
    refused: Mapping[str, str]  # option → why it could not serve (the SLO missed, no price …)

    @property
    def cheapest(self) -> OwnOption | None:
        return self.options[0] if self.options else None

    def to_json(self) -> dict[str, Any]:
        return {"kind": "own", "model": self.model, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "horizon_months": self.horizon_months,
                "traffic_requests_per_s": self.traffic_requests_per_s,
                "options": [o.to_json() for o in self.options], "refused": dict(self.refused),
                "cheapest": None if self.cheapest is None else self.cheapest.label}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> OwnAnswer:
        return cls(d["model"], d["input_tokens"], d["output_tokens"], d["horizon_months"],
                   d.get("traffic_requests_per_s"), tuple(OwnOption.from_json(o) for o in d["options"]),
                   dict(d.get("refused") or {}))


def rank(options: Sequence[OwnOption], horizon_months: int) -> tuple[OwnOption, ...]:
    """Cheapest over the horizon first (every option carries the same traffic, so the total ranks them;
    options that serve none last), each owned one with its paybacks."""
    out = []
    for o in options:
        if o.kind == "owned":
            o = replace(o, payback_months={a.label: payback_month(o, a, horizon_months)
                                           for a in options if a.kind != "owned"})
        out.append(o)
    return tuple(sorted(out, key=lambda o: (o.usd_per_request is None, o.total_usd)))


def owned_gpu_hour(accelerator_id: str, name: str, serving_w: float | None) -> tuple[Decimal, str]:
    """One owned GPU-hour of `accelerator_id` serving at `serving_w` (the board's draw, from the steps:
    physics/energy.py): the catalog's cheapest published price written off over the part's life, and the
    electricity at the catalog's datacenter site; what `vazao plan --buy` prices a candidate with in place
    of a rental rate."""
    from vazao.cost.energy import default_site

    if serving_w is None:
        raise VazaoError(f"{name} has no published power rating (catalog/data/ownership.yaml): an owned hour "
                         "needs its electricity")
    usd, src, cond = purchase_price(accelerator_id, name, None, None)
    life, life_src = default_life(name)
    terms = OwnTerms(usd, src, cond, life, life_src, Decimal(0), Decimal(0), default_site())
    power = energy_cost(serving_w, serving_w, 1, 0.0, 0.0, Decimal(1), terms.site)  # busy every hour
    rate = _q(terms.fixed_usd_per_gpu_hour() + power.usd_per_hour)
    return rate, (f"owned ({cond}): ${usd:,.0f} over {life:g} years ({src}) + electricity at "
                  f"{serving_w:.0f} W, PUE {terms.site.pue:g}, {terms.site.usd_per_kwh} $/kWh")
