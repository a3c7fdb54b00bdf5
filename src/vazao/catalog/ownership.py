"""Owning hardware (catalog/data/ownership.yaml): each accelerator's board power and purchase prices, the
energy model's two parameters and a site's defaults, every figure with its source and date.

An accelerator with no power row has no energy figure and one with no purchase row no owned cost:
callers say "unknown" (or take the user's figure), never a guess."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from vazao.catalog._load import load_yaml

__all__ = ["EnergyModel", "Power", "Purchase", "Site", "energy_model", "power_of", "purchases_of", "site"]


@dataclass(frozen=True)
class Power:
    tdp_w: float
    source: str
    as_of: str


@dataclass(frozen=True)
class Purchase:
    condition: str  # new | used
    usd: float
    as_of: str
    source: str
    note: str = ""


@dataclass(frozen=True)
class EnergyModel:
    """Board power = idle + (tdp - idle) x activity; activity = max(compute share, memory_share x
    bandwidth share) of a step (physics/energy.py)."""

    idle_share: float
    memory_share: float
    source: str


@dataclass(frozen=True)
class Site:
    datacenter_pue: float
    home_pue: float
    usd_per_kwh: float
    service_life_years_datacenter: float
    service_life_years_consumer: float
    energy_source: str  # the PUE's and the price's
    life_source: str


def _data() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml("ownership.yaml")
    return data


@cache
def energy_model() -> EnergyModel:
    m = _data()["energy_model"]
    return EnergyModel(float(m["idle_share"]), float(m["memory_share"]),
                       f"idle: {m['idle_source']}; memory-bound: {m['memory_source']}; "
                       f"compute-bound: {m['compute_source']} ({m['as_of']})")


@cache
def site() -> Site:
    s = _data()["site"]
    return Site(float(s["datacenter_pue"]), float(s["home_pue"]), float(s["usd_per_kwh"]),
                float(s["service_life_years_datacenter"]), float(s["service_life_years_consumer"]),
                f"PUE: {s['datacenter_pue_source']}; price: {s['usd_per_kwh_source']} ({s['as_of']})",
                f"datacenter: {s['service_life_years_datacenter_source']}; consumer: "
                f"{s['service_life_years_consumer_source']} ({s['as_of']})")


def power_of(accelerator_id: str) -> Power | None:
    row = _data()["power"].get(accelerator_id)
    return None if row is None else Power(float(row["tdp_w"]), row["source"], str(row["as_of"]))


def purchases_of(accelerator_id: str) -> tuple[Purchase, ...]:
    """Every published price of one card, newest first within each condition (new, then used)."""
    rows = [Purchase(r["condition"], float(r["usd"]), str(r["as_of"]), r["source"], r.get("note", ""))
            for r in _data()["purchase"].get(accelerator_id, ())]
    return tuple(sorted(rows, key=lambda p: (p.condition != "new", _neg_date(p.as_of))))


def _neg_date(as_of: str) -> tuple[int, ...]:
    return tuple(-int(x) for x in as_of.split("-"))
