"""Price-trend scenarios and the break-even projected month by month under one.

A scenario is named and cited (catalog/data/trends.yaml, or a user's file of the same schema): how
fast the API price per token falls, how fast GPU rental falls, how the tokens of one task grow. It
is never a forecast: every output names it as a scenario with its citation and caveat.

Each rate is given per year, as the sources state it (Epoch AI: ÷40 a year at fixed capability), and
compounded monthly: month m multiplies the API price by fall^(−m/12). Month 0 is today's prices.

What moves, month by month, for one deployment against one API price (cost.breakeven):
- API $/request = today's × api factor × tokens factor (every rate of the table scales alike; a
  long-context tier crossed by a grown task is not re-priced)
- deployment $/h = today's × GPU factor; its capacity in requests = today's ÷ tokens factor (the
  same tokens/s serve fewer, longer tasks)
- break-even requests/day = deployment $/day ÷ API $/request, while within capacity
- at a traffic R: the API's bill R × $/request × a month (730 h), the deployment's bill its copies
  (enough to carry R tasks) × $/h × 730 h; each summed from month 0."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.cost.money import HOURS_PER_MONTH, MICRO, to_decimal
from vazao.errors import VazaoError
from vazao.resultfiles import from_document

CENT = Decimal("0.01")
MONTHS_PER_YEAR = 12
SCENARIO_KEYS = frozenset({"id", "name", "api_price_fall_per_year", "api_price_fall_range", "gpu_price_fall_per_year",
                           "tokens_per_task_growth_per_year", "tokens_per_task_multiplier", "citation", "caveat",
                           "seed"})
RATE_KEYS = ("api_price_fall_per_year", "gpu_price_fall_per_year", "tokens_per_task_growth_per_year",
             "tokens_per_task_multiplier")


# ---- scenarios ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrendScenario:
    """A named, cited price-trend scenario. Rates per year; the multiplier applies once, from month 0."""

    id: str
    name: str
    citation: str
    caveat: str
    api_price_fall_per_year: Decimal = Decimal(1)
    gpu_price_fall_per_year: Decimal = Decimal(1)
    tokens_per_task_growth_per_year: Decimal = Decimal(1)
    tokens_per_task_multiplier: Decimal = Decimal(1)
    api_price_fall_range: tuple[Decimal, Decimal] | None = None
    seed: str = ""

    @property
    def api_monthly_factor(self) -> Decimal:
        """What one month multiplies the API price by: fall^(−1/12)."""
        return monthly_factor(self.api_price_fall_per_year, falling=True)

    @property
    def gpu_monthly_factor(self) -> Decimal:
        return monthly_factor(self.gpu_price_fall_per_year, falling=True)

    @property
    def tokens_monthly_factor(self) -> Decimal:
        return monthly_factor(self.tokens_per_task_growth_per_year, falling=False)

    def with_api_fall(self, fall: Decimal) -> TrendScenario:
        """The same scenario at another API fall (an end of its cited range)."""
        from dataclasses import replace

        return replace(self, api_price_fall_per_year=fall, api_price_fall_range=None)

    @property
    def label(self) -> str:
        """The line every output prints: a scenario, its name and where it comes from."""
        return f"scenario {self.id} (not a forecast): {self.name}. Source: {self.citation}"

    def to_json(self) -> dict:
        from vazao.catalog.prices import usd_str

        rng = self.api_price_fall_range
        return {"id": self.id, "name": self.name, "is_forecast": False, "citation": self.citation,
                "caveat": self.caveat, "seed": self.seed,
                "api_price_fall_per_year": usd_str(self.api_price_fall_per_year),
                "gpu_price_fall_per_year": usd_str(self.gpu_price_fall_per_year),
                "tokens_per_task_growth_per_year": usd_str(self.tokens_per_task_growth_per_year),
                "tokens_per_task_multiplier": usd_str(self.tokens_per_task_multiplier),
                "api_price_fall_range": None if rng is None else [usd_str(rng[0]), usd_str(rng[1])],
                "api_monthly_factor": _ratio_str(self.api_monthly_factor),
                "gpu_monthly_factor": _ratio_str(self.gpu_monthly_factor),
                "tokens_monthly_factor": _ratio_str(self.tokens_monthly_factor)}

    @classmethod
    def from_json(cls, d: Mapping) -> TrendScenario:
        """The monthly factors are derived: read back from the yearly rates."""
        return from_document(cls, d)


def monthly_factor(per_year: Decimal, *, falling: bool) -> Decimal:
    """A yearly factor as one month's: a fall of x a year multiplies by x^(−1/12) each month, a growth
    of x a year by x^(1/12)."""
    exp = Decimal(-1 if falling else 1) / MONTHS_PER_YEAR
    return per_year ** exp


def _ratio_str(x: Decimal) -> str:
    from vazao.catalog.prices import usd_str

    return usd_str(x.quantize(Decimal("1E-9"), rounding=ROUND_HALF_UP))


def _factor(raw: Any, what: str, where: str) -> Decimal:
    from vazao.catalog.prices import money

    if isinstance(raw, float):
        raw = Decimal(repr(raw))
    try:
        value = money(raw, what)
    except VazaoError as exc:
        raise VazaoError(f"{where}: {exc}") from None
    lo, hi = Decimal(1) / limits.MAX_TREND_FACTOR, Decimal(limits.MAX_TREND_FACTOR)
    if not lo <= value <= hi:
        raise VazaoError(f"{where}: {what} is {value}; a factor per year must be in [1/{limits.MAX_TREND_FACTOR:,}, "
                         f"{limits.MAX_TREND_FACTOR:,}] (Epoch AI's fastest measured fall is 900x a year)")
    return value


def parse_scenario(raw: Any, origin: str) -> TrendScenario:
    """One entry of a trends file; unknown fields refused, the citation and caveat required."""
    from vazao.catalog.prices import _where, known_entry

    known_entry(raw, SCENARIO_KEYS, origin, "trend scenario", "trend scenario {id}", list_known=True)
    for need in ("id", "name", "citation", "caveat"):
        if not str(raw.get(need) or "").strip():
            raise VazaoError(f"{_where(raw, None, origin)}: trend scenario {raw.get('id', '?')!r} lacks {need!r} "
                             "(a projection is a cited scenario, never a bare forecast)")
    sid = str(raw["id"])
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", sid):
        raise VazaoError(f"{_where(raw, 'id', origin)}: trend id {sid!r}: lowercase letters, digits, '.', '_', '-'")
    if not any(k in raw for k in RATE_KEYS):
        raise VazaoError(f"{_where(raw, None, origin)}: trend scenario {sid!r} sets none of {', '.join(RATE_KEYS)}")
    rates = {k: _factor(raw[k], k, _where(raw, k, origin)) for k in RATE_KEYS if k in raw}
    rng = raw.get("api_price_fall_range")
    pair = None
    if rng is not None:
        where = _where(raw, "api_price_fall_range", origin)
        if not isinstance(rng, list) or len(rng) != 2:
            raise VazaoError(f"{where}: api_price_fall_range is [low, high]")
        lo, hi = (_factor(x, "api_price_fall_range", where) for x in rng)
        if lo > hi:
            raise VazaoError(f"{where}: api_price_fall_range [{lo}, {hi}]: low above high")
        pair = (lo, hi)
    return TrendScenario(sid, str(raw["name"]).strip(), str(raw["citation"]).strip(), str(raw["caveat"]).strip(),
                         seed=str(raw.get("seed") or "").strip(), api_price_fall_range=pair, **rates)


def parse_trends(text: str, origin: str) -> dict[str, TrendScenario]:
    from vazao.catalog.prices import entries_by_id

    out = entries_by_id(text, origin, "trends", limits.MAX_TREND_SCENARIOS, parse_scenario, "trend",
                        only_key=True)
    if not out:
        raise VazaoError(f"{origin}: no trend scenario in it")
    return out


@cache
def trend_scenarios() -> Mapping[str, TrendScenario]:
    """The shipped scenarios (catalog/data/trends.yaml)."""
    from types import MappingProxyType

    text = resources.files("vazao.catalog").joinpath("data").joinpath("trends.yaml").read_text(encoding="utf-8")
    return MappingProxyType(parse_trends(text, "trends.yaml"))


def load_trend(name_or_path: str | Path) -> TrendScenario:
    """A shipped scenario by id, or a user's trends file (the same schema) holding one scenario."""
    text = str(name_or_path).strip()
    if not text:
        raise VazaoError("trend is empty: give a scenario name (" + ", ".join(trend_scenarios()) + ") or a file",
                         parameter="trend")
    if text in trend_scenarios():
        return trend_scenarios()[text]
    p = Path(text).expanduser()
    try:
        is_file = p.suffix.lower() in (".yaml", ".yml") or p.exists()
    except (OSError, ValueError):  # a name too long for the file system, or a NUL: the reader says why
        is_file = True
    if not is_file:
        raise VazaoError(f"unknown trend scenario {text!r}: the shipped ones are {', '.join(trend_scenarios())}; "
                         "or give a trends YAML file")
    body = inputs.read_text(inputs.input_file(p, "trend file"), "trend file")
    found = parse_trends(body, f"trend file {inputs._show(p)}")
    if len(found) != 1:
        raise VazaoError(f"trend file {inputs._show(p)} holds {len(found)} scenarios ({', '.join(found)}); "
                         "give a file with one")
    return next(iter(found.values()))


def parse_horizon(text: str | int) -> int:
    """A horizon in whole months: '24mo', '2y', or a bare number of months (inputs.months), at least one."""
    n = inputs.months(text, "horizon", maximum=limits.MAX_HORIZON_MONTHS)
    if n < 1:
        raise VazaoError(f"horizon must be at least one month, got {text!r}", parameter="horizon")
    return n


def trend_options(horizon: str | None, trend: str | None) -> tuple[int | None, TrendScenario | None]:
    """(months, scenario) of `--horizon` and `--trend`, which go together; (None, None) for neither."""
    if horizon is None and trend is None:
        return None, None
    if horizon is None or trend is None:
        raise VazaoError("a horizon and a trend go together: the break-even over time under a named scenario "
                         "(e.g. 24 months of epoch-fixed-capability)", parameter="trend")
    return parse_horizon(horizon), load_trend(trend)


# ---- the projection -----------------------------------------------------------------------------
@dataclass(frozen=True)
class TrendMonth:
    """One month of a projection for one deployment. Money in USD (Decimal); None where there is no
    figure: no break-even within capacity, or no traffic to bill."""

    month: int  # 0: today's prices
    api_usd_per_mtok: Decimal  # the API's mean $ per million tokens of the workload (input + output)
    selfhost_usd_per_mtok: Decimal | None  # the deployment's blended $/Mtok at its SLO capacity
    api_usd_per_request: Decimal
    selfhost_usd_per_hour: Decimal  # one copy of the deployment
    capacity_requests_per_day: float
    breakeven_requests_per_day: float | None  # None: the API is cheaper at any load it can carry
    api_usd_per_month: Decimal | None = None  # at the traffic
    selfhost_usd_per_month: Decimal | None = None
    copies: int | None = None
    cumulative_api_usd: Decimal | None = None
    cumulative_selfhost_usd: Decimal | None = None
    # the 80% band (low, high) of selfhost_usd_per_mtok: the deployment's throughput band (cost.selfhost)
    selfhost_usd_per_mtok_band: tuple[Decimal, Decimal] | None = None

    @property
    def cheaper(self) -> str | None:
        """At the traffic: 'self-hosted' or 'api' (None without a traffic)."""
        if self.api_usd_per_month is None or self.selfhost_usd_per_month is None:
            return None
        return "self-hosted" if self.selfhost_usd_per_month < self.api_usd_per_month else "api"

    @property
    def cumulative_selfhost_saving_usd(self) -> Decimal | None:
        """Summed from month 0: the API's bill less the deployment's (negative: self-hosting cost more)."""
        if self.cumulative_api_usd is None or self.cumulative_selfhost_usd is None:
            return None
        return self.cumulative_api_usd - self.cumulative_selfhost_usd

    @property
    def cheaper_so_far(self) -> str | None:
        """Summed from month 0: which side has cost less."""
        if self.cumulative_api_usd is None or self.cumulative_selfhost_usd is None:
            return None
        return "self-hosted" if self.cumulative_selfhost_usd < self.cumulative_api_usd else "api"

    def to_json(self) -> dict:
        from vazao.catalog.prices import usd_str

        def s(x: Decimal | None) -> str | None:
            return None if x is None else usd_str(x)

        return {"month": self.month, "api_usd_per_mtok": s(self.api_usd_per_mtok),
                "selfhost_usd_per_mtok": s(self.selfhost_usd_per_mtok),
                "api_usd_per_request": s(self.api_usd_per_request),
                "selfhost_usd_per_hour": s(self.selfhost_usd_per_hour),
                "capacity_requests_per_day": self.capacity_requests_per_day,
                "breakeven_requests_per_day": self.breakeven_requests_per_day,
                "api_usd_per_month": s(self.api_usd_per_month),
                "selfhost_usd_per_month": s(self.selfhost_usd_per_month),
                "copies": self.copies, "cumulative_api_usd": s(self.cumulative_api_usd),
                "cumulative_selfhost_usd": s(self.cumulative_selfhost_usd),
                "selfhost_usd_per_mtok_band": None if self.selfhost_usd_per_mtok_band is None
                else [s(x) for x in self.selfhost_usd_per_mtok_band],
                "cumulative_selfhost_saving_usd": s(self.cumulative_selfhost_saving_usd), "cheaper": self.cheaper,
                "cheaper_so_far": self.cheaper_so_far}

    @classmethod
    def from_json(cls, d: Mapping) -> TrendMonth:
        return from_document(cls, d)  # cheaper, cheaper_so_far and the saving are derived


def _first_change(values: Sequence[Any]) -> int | None:
    """The first month whose value differs from month 0's (None: none in the horizon)."""
    return next((i for i, v in enumerate(values) if v != values[0]), None)


@dataclass(frozen=True)
class TrendBound:
    """The months that matter at one end of a scenario's cited range (the same deployment)."""

    api_price_fall_per_year: Decimal
    winner_changes_month: int | None
    cumulative_changes_month: int | None
    api_cheaper_at_any_load_from_month: int | None

    def to_json(self) -> dict:
        from vazao.catalog.prices import usd_str

        return {"api_price_fall_per_year": usd_str(self.api_price_fall_per_year),
                "winner_changes_month": self.winner_changes_month,
                "cumulative_changes_month": self.cumulative_changes_month,
                "api_cheaper_at_any_load_from_month": self.api_cheaper_at_any_load_from_month}

    @classmethod
    def from_json(cls, d: Mapping) -> TrendBound:
        return from_document(cls, d)


@dataclass(frozen=True)
class TrendProjection:
    """One deployment (a break-even row) against the API, month by month under the scenario."""

    gpu: str
    deployment: str
    months: tuple[TrendMonth, ...]
    bounds: tuple[TrendBound, ...] = ()  # at the low and high ends of the scenario's range, when it has one

    @property
    def winner_changes_month(self) -> int | None:
        """At the traffic: the first month the cheaper side is not month 0's."""
        return _first_change([m.cheaper for m in self.months]) if self.months[0].cheaper else None

    @property
    def cumulative_changes_month(self) -> int | None:
        """At the traffic: the first month the side that has cost less so far is not month 0's."""
        return _first_change([m.cheaper_so_far for m in self.months]) if self.months[0].cheaper_so_far else None

    @property
    def api_cheaper_at_any_load_from_month(self) -> int | None:
        """The first month with no break-even within capacity, when month 0 had one."""
        be = [m.breakeven_requests_per_day is None for m in self.months]
        return None if be[0] else _first_change(be)

    def summary(self) -> str:
        """One line: where the break-even goes over the horizon."""
        first, last = self.months[0], self.months[-1]
        parts = []
        if first.cheaper is not None:
            w = self.winner_changes_month
            parts.append(f"at the traffic {first.cheaper} is cheaper in month 0" +
                         (f" and {self.months[w].cheaper} from month {w}" if w is not None else
                          f" and stays so through month {last.month}"))
            c = self.cumulative_changes_month
            if c is not None:
                parts.append(f"summed from month 0, {self.months[c].cheaper_so_far} has cost less from month {c}")
        a = self.api_cheaper_at_any_load_from_month
        if first.breakeven_requests_per_day is None:
            parts.append("no break-even within capacity in month 0 (the API is cheaper at any load)" +
                         ("" if last.breakeven_requests_per_day is None else
                          f"; one appears by month {last.month}: {last.breakeven_requests_per_day:,.0f}/day"))
        elif a is not None:
            parts.append(f"break-even {first.breakeven_requests_per_day:,.0f} requests/day in month 0; "
                         f"from month {a} the API is cheaper at any load this deployment carries")
        else:
            parts.append(f"break-even {first.breakeven_requests_per_day:,.0f} requests/day in month 0, "
                         f"{last.breakeven_requests_per_day:,.0f} in month {last.month}")
        for b in self.bounds:
            moved = [f"winner changes in month {b.winner_changes_month}" if b.winner_changes_month is not None else "",
                     f"API cheaper at any load from month {b.api_cheaper_at_any_load_from_month}"
                     if b.api_cheaper_at_any_load_from_month is not None else ""]
            text = "; ".join(x for x in moved if x) or "no change within the horizon"
            parts.append(f"at {b.api_price_fall_per_year}x/year: {text}")
        return f"{self.gpu}: " + "; ".join(parts)

    def to_json(self) -> dict:
        return {"gpu": self.gpu, "deployment": self.deployment,
                "winner_changes_month": self.winner_changes_month,
                "cumulative_changes_month": self.cumulative_changes_month,
                "api_cheaper_at_any_load_from_month": self.api_cheaper_at_any_load_from_month,
                "summary": self.summary(), "bounds": [b.to_json() for b in self.bounds],
                "months": [m.to_json() for m in self.months]}

    @classmethod
    def from_json(cls, d: Mapping) -> TrendProjection:
        return from_document(cls, d)  # the change months and the summary are derived


def _q(x: Decimal, step: Decimal) -> Decimal:
    return x.quantize(step, rounding=ROUND_HALF_UP)


def project(row: Any, scenario: TrendScenario, horizon_months: int, api_usd_per_request: Decimal,
            tokens_per_request: float, rps: float | None = None) -> TrendProjection:
    """One BreakEven row (cost.breakeven) projected over `horizon_months` months under `scenario`; with
    `rps` (tasks per second) each side's monthly bill and their sums. The API price and the deployment's
    cost are today's, as the row holds them."""
    n = int(inputs.number(horizon_months, "horizon (months)", minimum=1, maximum=limits.MAX_HORIZON_MONTHS,
                          integer=True))
    if api_usd_per_request <= 0:
        raise VazaoError("the API cost per request is zero: nothing to break even against")
    if tokens_per_request <= 0:
        raise VazaoError("a trend needs the tokens of a request (input + output) to price $/Mtok")
    cost = row.selfhost
    cap_rps = cost.throughput.requests_per_s
    if cap_rps <= 0:
        raise VazaoError(f"{cost.deployment} serves no request within the SLO: nothing to project")
    util = cost.utilisation
    tokens = to_decimal(tokens_per_request)
    api_f, gpu_f, tok_f = scenario.api_monthly_factor, scenario.gpu_monthly_factor, scenario.tokens_monthly_factor
    months = []
    cum_api = cum_own = Decimal(0)
    for m in range(n):
        a, g, t = api_f ** m, gpu_f ** m, scenario.tokens_per_task_multiplier * tok_f ** m
        per_request = api_usd_per_request * a * t
        per_hour = cost.usd_per_hour * g
        capacity = float(to_decimal(cap_rps) * 86_400 * util / t)
        be = float(per_hour * 24 / per_request)
        api_mtok = _q(api_usd_per_request * a / tokens * 1_000_000, MICRO)
        own_mtok = None if cost.usd_per_mtok_blended is None else _q(cost.usd_per_mtok_blended * g, MICRO)
        band = cost.usd_per_mtok_blended_band
        own_band = None if band is None or own_mtok is None else (_q(band[0] * g, MICRO), _q(band[1] * g, MICRO))
        fields: dict[str, Any] = {}
        if rps is not None:
            copies = max(1, math.ceil(float(to_decimal(rps) * t) / cap_rps - 1e-9))
            api_month = _q(per_request * to_decimal(rps) * 3600 * HOURS_PER_MONTH, CENT)
            own_month = _q(per_hour * copies * HOURS_PER_MONTH, CENT)
            cum_api, cum_own = cum_api + api_month, cum_own + own_month
            fields = {"api_usd_per_month": api_month, "selfhost_usd_per_month": own_month, "copies": copies,
                      "cumulative_api_usd": cum_api, "cumulative_selfhost_usd": cum_own}
        months.append(TrendMonth(m, api_mtok, own_mtok, _q(per_request, Decimal("1E-10")), _q(per_hour, MICRO),
                                 capacity, be if 0 < be <= capacity else None, **fields,
                                 selfhost_usd_per_mtok_band=own_band))
    return TrendProjection(row.gpu, cost.deployment, tuple(months))


def project_with_range(row: Any, scenario: TrendScenario, horizon_months: int, api_usd_per_request: Decimal,
                       tokens_per_request: float, rps: float | None = None) -> TrendProjection:
    """project(), with the change months at each end of the scenario's cited range (when it has one)."""
    from dataclasses import replace

    central = project(row, scenario, horizon_months, api_usd_per_request, tokens_per_request, rps)
    if scenario.api_price_fall_range is None:
        return central
    bounds = []
    for fall in scenario.api_price_fall_range:
        p = project(row, scenario.with_api_fall(fall), horizon_months, api_usd_per_request, tokens_per_request, rps)
        bounds.append(TrendBound(fall, p.winner_changes_month, p.cumulative_changes_month,
                                 p.api_cheaper_at_any_load_from_month))
    return replace(central, bounds=tuple(bounds))


@dataclass(frozen=True)
class BreakEvenTrend:
    """The break-even over time: a scenario, a horizon, and a projection per deployment that can serve."""

    scenario: TrendScenario
    horizon_months: int
    projections: tuple[TrendProjection, ...]

    def to_json(self) -> dict:
        return {"scenario": self.scenario.to_json(), "horizon_months": self.horizon_months,
                "label": self.scenario.label, "projections": [p.to_json() for p in self.projections]}

    @classmethod
    def from_json(cls, d: Mapping) -> BreakEvenTrend:
        return from_document(cls, d)
