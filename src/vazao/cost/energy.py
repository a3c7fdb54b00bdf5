"""Electricity of a self-hosted deployment: watts while serving (physics/energy.py, from the steps'
utilisation), joules per token, kWh per million tokens and their price at a site's PUE and $/kWh.

Paid hours split as the utilisation says: a share `u` serving at the deployment's serving draw, the
rest idle at the boards' idle draw; the wall draw is the boards' times the site's PUE:

    usd_per_hour = gpus x (u x serving_w + (1 - u) x idle_w) / 1000 x PUE x usd_per_kwh

A rented GPU's price already holds its power: there the figure says what the provider pays for it.
An owned one adds it to the capex (cost/own.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from vazao import limits
from vazao.catalog.ownership import site as catalog_site
from vazao.cost.money import MICRO, usd_per_mtok
from vazao.cost.rates import to_decimal
from vazao.errors import VazaoError
from vazao.physics.energy import J_PER_KWH
from vazao.resultfiles import from_document

__all__ = ["EnergyCost", "EnergySite", "default_site", "energy_cost"]

@dataclass(frozen=True)
class EnergySite:
    pue: float
    usd_per_kwh: Decimal
    source: str

    def __post_init__(self) -> None:
        if not limits.MIN_PUE <= self.pue <= limits.MAX_PUE:
            raise VazaoError(f"PUE is a site's total power over its IT power, {limits.MIN_PUE:g} to "
                             f"{limits.MAX_PUE:g}; got {self.pue:g}", parameter="pue")
        if not self.usd_per_kwh.is_finite() or not Decimal(0) <= self.usd_per_kwh <= limits.MAX_USD_PER_KWH:
            raise VazaoError(f"the electricity price must be 0 to {limits.MAX_USD_PER_KWH:g} $/kWh; got "
                             f"{self.usd_per_kwh}", parameter="usd_per_kwh")

    def to_json(self) -> dict[str, Any]:
        return {"pue": self.pue, "usd_per_kwh": str(self.usd_per_kwh), "source": self.source}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> EnergySite:
        return cls(float(d["pue"]), Decimal(str(d["usd_per_kwh"])), d.get("source", ""))


def default_site(home: bool = False, pue: float | None = None, usd_per_kwh: str | Decimal | None = None) -> EnergySite:
    """The catalog's site (a datacenter's average PUE, or 1 for a card at home) with the user's
    figures in place of its defaults."""
    s = catalog_site()
    p = pue if pue is not None else (s.home_pue if home else s.datacenter_pue)
    try:
        price = to_decimal(usd_per_kwh if usd_per_kwh is not None else s.usd_per_kwh)
    except ArithmeticError:
        raise VazaoError(f"the electricity price is $/kWh, a number; got {usd_per_kwh!r}",
                         parameter="usd_per_kwh") from None
    given = [name for name, v in (("PUE", pue), ("$/kWh", usd_per_kwh)) if v is not None]
    src = ("given " + " and ".join(given) + "; " if given else "") + "catalog: " + s.energy_source
    return EnergySite(p, price, src)


@dataclass(frozen=True)
class EnergyCost:
    serving_w_per_gpu: float  # one board's mean draw while serving
    idle_w_per_gpu: float
    gpus: int
    utilisation: Decimal
    site: EnergySite
    j_per_output_token: float | None  # the boards' energy at full load, all of it charged to output tokens
    j_per_token: float | None  # per input + output token
    kwh_per_mtok_output: float | None  # at the wall (PUE), at the utilisation
    usd_per_hour: Decimal
    usd_per_mtok_output: Decimal | None
    usd_per_mtok_blended: Decimal | None

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["site"] = self.site.to_json()
        for k in ("utilisation", "usd_per_hour", "usd_per_mtok_output", "usd_per_mtok_blended"):
            d[k] = None if d[k] is None else str(d[k])
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> EnergyCost:
        return from_document(cls, d, site=EnergySite.from_json(d["site"]))


def energy_cost(serving_w: float, idle_w: float, gpus: int, input_tokens_per_s: float,
                output_tokens_per_s: float, utilisation: Decimal, site: EnergySite) -> EnergyCost:
    """The electricity of `gpus` boards serving `*_tokens_per_s` (all of them together, at full load)
    for the `utilisation` share of the hours and idle for the rest."""
    u = float(utilisation)
    board_w = gpus * (u * serving_w + (1 - u) * idle_w)
    usd_h = (to_decimal(board_w) / 1000 * to_decimal(site.pue) * site.usd_per_kwh).quantize(MICRO, ROUND_HALF_UP)
    serving_total_w = gpus * serving_w
    out, tot = output_tokens_per_s, output_tokens_per_s + input_tokens_per_s
    j_out = serving_total_w / out if out > 0 else None
    j_tok = serving_total_w / tot if tot > 0 else None
    kwh = None
    if out > 0 and u > 0:
        kwh = board_w * site.pue / (out * u) * 1e6 / J_PER_KWH  # wall energy per hour over tokens per hour
    return EnergyCost(serving_w, idle_w, gpus, utilisation, site, j_out, j_tok, kwh, usd_h,
                      usd_per_mtok(usd_h, out, utilisation), usd_per_mtok(usd_h, tot, utilisation))
