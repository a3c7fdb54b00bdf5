"""A plan's deployments against an API price: where self-hosting wins, and by how much.

The API bills the workload's own requests one by one (cost/breakeven.bill_workload, prompt caching
of shared prefixes when a TTL is given). A rented deployment costs its $/h whatever the load, so at
the planned traffic T it costs $/h / (T × 3600) per request, and it beats the API above
    break-even traffic = $/h / (API $/request × 3600)   requests/s,
for as long as the deployment carries the traffic (the plan sized it for T)."""

from __future__ import annotations

from dataclasses import dataclass

from vazao.cost.money import HOURS_PER_MONTH, to_decimal, usd_per_month
from vazao.plan.evaluate import Candidate


@dataclass(frozen=True)
class ApiComparison:
    price_id: str
    api_usd_per_request: float
    api_usd_per_month: float  # at the planned traffic
    selfhost_usd_per_request: float
    selfhost_usd_per_month: float
    breakeven_requests_per_s: float
    cheaper: str  # "self-hosted" | "api"

    @property
    def ratio(self) -> float:
        """API cost over self-hosted cost at the planned traffic (> 1: self-hosting is cheaper)."""
        return self.api_usd_per_request / self.selfhost_usd_per_request

    def to_json(self) -> dict:
        return {**self.__dict__, "api_over_selfhost": self.ratio}


def api_bill_per_request(workload: str, price: str, *, seed: int | None = None, cache_ttl: str | None = None,
                         requests: int = 2000) -> tuple[str, float]:
    """The API's mean bill per request of the workload: cost.policy.api_usd_per_request (the one
    definition) over `requests` planned requests; (price id, dollars)."""
    from vazao.catalog.prices import get_price
    from vazao.cost.policy import RequestShape, api_usd_per_request
    from vazao.workload import load_workload

    table = get_price(price)
    w = load_workload(workload, requests=requests, seed=seed)
    return table.id, float(api_usd_per_request(table, RequestShape(1, 1), w.specs(), cache_ttl))


def compare(c: Candidate, requests_per_s: float, price_id: str, api_per_request: float) -> ApiComparison:
    """The money in cost.money's Decimal, reported as floats (the plan JSON's numbers)."""
    rps = to_decimal(requests_per_s)
    api = to_decimal(api_per_request)
    self_per_request = c.usd_per_hour / (rps * 3600)
    return ApiComparison(
        price_id=price_id, api_usd_per_request=float(api),
        api_usd_per_month=float(api * rps * 3600 * HOURS_PER_MONTH),
        selfhost_usd_per_request=float(self_per_request), selfhost_usd_per_month=float(usd_per_month(c.usd_per_hour)),
        breakeven_requests_per_s=float(c.usd_per_hour / (api * 3600)),
        cheaper="self-hosted" if self_per_request < api else "api")


def against_api(result, price: str) -> ApiComparison:
    """The plan's winner (else its best candidate) against the API price `price`, at the planned traffic
    (a closed loop: the rate the winner's simulation reached, over its replicas)."""
    from vazao.errors import VazaoError

    c = result.winner or result.candidates[0]
    if c.usd_per_hour is None:
        raise VazaoError(f"comparing against an API: {c.shape.gpu} has no rental price; give its price per hour")
    rps = result.inputs.traffic.rate
    if rps is None:
        if c.summary is None:
            raise VazaoError("comparing against an API at a concurrency needs a simulated winner")
        rps = c.summary.request_throughput_per_s * c.replicas
    pid, per_request = api_bill_per_request(result.inputs.workload, price, seed=result.inputs.seed)
    return compare(c, rps, pid, per_request)
