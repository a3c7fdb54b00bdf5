"""The one money policy every cost figure shares: amounts in Decimal (exact cents on any bill), a month of
730 hours (8,760 h / 12, the convention cloud price sheets quote monthly figures in), and $/Mtok at a token
rate quantized to a millionth of a dollar. `vazao plan` and `vazao cost` both compute with these."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

HOURS_PER_MONTH = 730
MICRO = Decimal("0.000001")


def to_decimal(x: float | int | str | Decimal) -> Decimal:
    """A physical estimate (float) entering money arithmetic: its shortest exact decimal text."""
    return x if isinstance(x, Decimal) else Decimal(repr(float(x)) if isinstance(x, float) else str(x))


def usd_per_month(usd_per_hour: Decimal) -> Decimal:
    return usd_per_hour * HOURS_PER_MONTH


def usd_per_mtok(usd_per_hour: Decimal, tokens_per_s: float, utilisation: Decimal = Decimal(1)) -> Decimal | None:
    """Dollars per million tokens for a deployment costing `usd_per_hour` that serves `tokens_per_s` for the
    `utilisation` share of its paid hours; None when it serves none."""
    if tokens_per_s <= 0:
        return None
    per_hour = to_decimal(tokens_per_s) * 3600 * utilisation
    return (usd_per_hour / per_hour * 1_000_000).quantize(MICRO, rounding=ROUND_HALF_UP)
