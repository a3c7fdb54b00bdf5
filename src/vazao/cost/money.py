"""The money conventions every cost figure shares: one month of hours, and $/Mtok at a token rate.

A month is 730 hours (8,760 h / 12), the convention cloud price sheets quote monthly figures in."""

from __future__ import annotations

HOURS_PER_MONTH = 730


def usd_per_mtok(usd_per_hour: float, tokens_per_s: float) -> float | None:
    """Dollars per million tokens for a deployment costing `usd_per_hour` that serves `tokens_per_s`."""
    if tokens_per_s <= 0:
        return None
    return usd_per_hour / (tokens_per_s * 3600) * 1e6
