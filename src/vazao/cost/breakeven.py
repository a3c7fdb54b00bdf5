"""Break-even traffic between an API and a self-hosted deployment.

An API bill grows with traffic: requests/day × API $/request. A rented deployment costs its $/h
whether it is busy or not, up to the traffic it can serve under the SLO. So self-hosting is cheaper
above
    break-even requests/day = deployment $/h × 24 / API $/request,
provided that is below the deployment's capacity (requests/s × 86,400 × utilisation); if not, the
API is cheaper at every load this deployment can carry (more replicas only repeat the comparison
at the same $/request). The API $/request is the workload's own requests billed one by one, with
prompt caching of its shared prefixes when asked."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from vazao.catalog.prices import PriceTable, share_str, usd_str
from vazao.cost.ledger import Bill, Line, TokenLedger, line, make_bill
from vazao.cost.selfhost import SelfHostCost, to_decimal
from vazao.errors import VazaoError
from vazao.resultfiles import from_document

DAY_S = 86_400


def workload_ledgers(specs: Iterable, cached: bool) -> list[TokenLedger]:
    """A workload plan's requests as ledgers. With caching, each shared prefix is written by the
    first request that uses it and read by every later one (traffic keeps it warm); the re-sent
    conversation history is plain input, as in seed 004_9706bef9153e5571.txt."""
    seen: set[str] = set()
    out = []
    for r in specs:
        prefix = r.prefix_tokens if (cached and r.prefix_id) else 0
        led = TokenLedger(new_input=r.prompt_tokens - prefix, output=r.output_tokens)
        if prefix:
            if r.prefix_id in seen:
                led = TokenLedger(new_input=r.prompt_tokens - prefix, cache_read=prefix, output=r.output_tokens)
            else:
                led = TokenLedger(new_input=r.prompt_tokens - prefix, cache_write=prefix, output=r.output_tokens)
                seen.add(r.prefix_id)
        out.append(led)
    return out


def bill_workload(specs: Sequence, table: PriceTable, cache_ttl: str | None = None, batch: bool = False) -> Bill:
    """The API bill of every request in a workload plan, grouped by ledger shape."""
    if cache_ttl is not None and table.base.cache_read is None:
        raise VazaoError(f"{table.id} lists no prompt-cache price; bill without prompt caching")
    counts: dict[TokenLedger, int] = {}
    for led in workload_ledgers(specs, cache_ttl is not None):
        counts[led] = counts.get(led, 0) + 1
    lines = [line(table, "requests", led, n, batch, cache_ttl) for led, n in counts.items()]
    merged = make_bill(table, lines, batch, cache_ttl)
    # one summary line: the per-shape lines are an implementation detail
    summary = Line("workload", merged.requests, merged.tokens, merged.charge,
                   max((ln.tier_above_tokens for ln in lines), default=0))
    return make_bill(table, [summary], batch, cache_ttl, merged.notes)


@dataclass(frozen=True)
class BreakEven:
    gpu: str
    selfhost: SelfHostCost
    api_price: str
    api_usd_per_request: Decimal
    capacity_requests_per_day: float
    breakeven_requests_per_day: float | None  # None: the API is cheaper at every load it can carry
    breakeven_tokens_per_day: float | None
    breakeven_share_of_capacity: Decimal | None
    selfhost_saving_at_capacity_per_day: Decimal  # negative: self-hosting costs more even when full
    capacity_band: tuple[float, float] | None = None  # 80% band of the capacity: the throughput's (None: none)

    @property
    def verdict(self) -> str:
        if self.selfhost.throughput.requests_per_s <= 0:
            return "cannot serve this workload under the SLO"
        if self.breakeven_requests_per_day is None:
            return "API cheaper at any load this deployment carries"
        return (f"self-host cheaper above {self.breakeven_requests_per_day:,.0f} requests/day "
                f"({self.breakeven_share_of_capacity:.0%} of capacity)")

    def to_json(self) -> dict:
        return {
            "gpu": self.gpu,
            "selfhost": self.selfhost.to_json(),
            "api_price": self.api_price,
            "api_usd_per_request": usd_str(self.api_usd_per_request),
            "capacity_requests_per_day": self.capacity_requests_per_day,
            "capacity_band": None if self.capacity_band is None else list(self.capacity_band),
            "breakeven_requests_per_day": self.breakeven_requests_per_day,
            "breakeven_tokens_per_day": self.breakeven_tokens_per_day,
            "breakeven_share_of_capacity": None if self.breakeven_share_of_capacity is None
            else share_str(self.breakeven_share_of_capacity),
            "selfhost_saving_at_capacity_per_day": usd_str(self.selfhost_saving_at_capacity_per_day),
            "verdict": self.verdict,
        }

    @classmethod
    def from_json(cls, d: Mapping) -> BreakEven:
        return from_document(cls, d)  # the verdict is derived: read back from the rest


def break_even(cost: SelfHostCost, gpu: str, api_price: str, api_usd_per_request: Decimal,
               tokens_per_request: float) -> BreakEven:
    if api_usd_per_request <= 0:
        raise VazaoError("the API cost per request is zero: nothing to break even against")
    util = cost.utilisation
    capacity = to_decimal(cost.throughput.requests_per_s) * DAY_S * util
    per_day = cost.usd_per_hour * 24
    be = per_day / api_usd_per_request
    saving = (capacity * api_usd_per_request - per_day).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    tp, cap_band = cost.throughput, None
    if tp.band is not None and tp.output_tokens_per_s > 0:
        cap_band = (float(capacity) * tp.band.low / tp.output_tokens_per_s,
                    float(capacity) * tp.band.high / tp.output_tokens_per_s)
    if capacity > 0 and be <= capacity:
        be_f = float(be)
        return BreakEven(gpu, cost, api_price, api_usd_per_request, float(capacity), be_f,
                         be_f * tokens_per_request, be / capacity, saving, cap_band)
    return BreakEven(gpu, cost, api_price, api_usd_per_request, float(capacity), None, None, None, saving, cap_band)


def ranked_break_evens(rows: Iterable[BreakEven]) -> list[BreakEven]:
    """Best first: the deployment that beats the API at the lowest traffic; then those that never do,
    by $/request (None: cannot serve)."""
    def key(r: BreakEven):
        per = r.selfhost.usd_per_request
        return (r.breakeven_requests_per_day is None,
                r.breakeven_requests_per_day if r.breakeven_requests_per_day is not None else 0.0,
                per is None, per if per is not None else Decimal(0))

    return sorted(rows, key=key)


def cheapest(candidates: Iterable[tuple[SelfHostCost, object]]) -> tuple[SelfHostCost, object] | None:
    """The candidate with the lowest $/request (None when none can serve the workload)."""
    best = None
    for cost, extra in candidates:
        if cost.usd_per_request is None:
            continue
        if best is None or cost.usd_per_request < best[0].usd_per_request:
            best = (cost, extra)
    return best


def choose_count(build: Callable[[int], SelfHostCost | None], counts: Sequence[int] = (1, 2, 4, 8)) -> SelfHostCost:
    """The GPU count (of `counts`) with the lowest $/request; build(count) returns None when the model
    cannot run on that many."""
    options = [(c, c) for c in (build(n) for n in counts) if c is not None]
    best = cheapest(options)
    if best is None:
        raise VazaoError("no GPU count in 1, 2, 4, 8 serves this workload (too large, or the SLO is missed)")
    return best[0]
