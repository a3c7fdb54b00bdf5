"""$/GPU-hour: a given figure, checked, or the accelerator catalog's rental price with its source.
Shared by self-hosted serving and training cost; kept apart from both so that `vazao cost train`
does not load the serving model (numpy, the step cost) to read a price."""

from __future__ import annotations

from decimal import Decimal

from vazao import limits
from vazao.catalog.prices import money
from vazao.cost.money import to_decimal  # noqa: F401  (re-exported: the one conversion)
from vazao.errors import VazaoError


def given_rate(usd_per_hour: Decimal | str, what: str = "usd_per_hour") -> Decimal:
    """A given $/GPU-hour, checked; `what` names it in the error (the caller's name for the input)."""
    rate = money(usd_per_hour, what)
    if rate > limits.MAX_USD_PER_HOUR:
        raise VazaoError(f"{what} must be at most {limits.MAX_USD_PER_HOUR:,.0f}, got {rate}")
    return rate


def gpu_rate(acc, usd_per_hour: Decimal | str | None, what: str = "usd_per_hour") -> tuple[Decimal, str]:
    """$/GPU-hour and where it comes from: the given figure, else the catalog's rental price (with its as_of)."""
    if usd_per_hour is not None:
        return given_rate(usd_per_hour, what), "given"
    if acc.usd_per_hour is None:
        raise VazaoError(f"{acc.name} has no rental price in the catalog; give a price per GPU-hour ({what})")
    return to_decimal(acc.usd_per_hour), f"catalog: {acc.price_source or acc.source} ({acc.price_as_of or acc.as_of})"
