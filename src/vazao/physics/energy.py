"""Watts and joules per token from a step's utilisation (catalog/data/ownership.yaml's energy model).

A board draws `idle` when it waits and its rating (TDP) when its tensor cores run flat out; between, the
draw follows the step's activity:

    power_w = idle + (tdp - idle) x min(1, max(compute_s / time_s, memory_share x memory_s / time_s))

compute_s and memory_s are the step's own roofline terms (step_cost, at the calibrated rates), so a
memory-bound decode step at batch 1 draws about a third of the way from idle to the rating (the
published H200 decode figure the model's memory_share comes from) and a compute-bound prefill the
rating. Energy of a step = power_w x the replica's GPUs x time_s; joules per token divide by the
tokens the step makes. An accelerator with no published rating has no figure (None)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vazao.catalog.ownership import energy_model, power_of, site

if TYPE_CHECKING:
    from vazao.catalog.hardware import Accelerator
    from vazao.physics.step import StepCost

__all__ = ["J_PER_KWH", "StepEnergy", "board_power_w", "electricity_usd_per_mtok", "idle_power_w", "step_energy"]

J_PER_KWH = 3.6e6


def idle_power_w(acc: Accelerator) -> float | None:
    p = power_of(acc.id)
    return None if p is None else p.tdp_w * energy_model().idle_share


def board_power_w(acc: Accelerator, cost: StepCost) -> float | None:
    """One board's draw during the step `cost` (see the module docstring); None without a rating."""
    p = power_of(acc.id)
    if p is None:
        return None
    m = energy_model()
    idle = p.tdp_w * m.idle_share
    if cost.time_s <= 0:
        return idle
    activity = min(1.0, max(cost.compute_s / cost.time_s, m.memory_share * cost.memory_s / cost.time_s))
    return idle + (p.tdp_w - idle) * activity


@dataclass(frozen=True)
class StepEnergy:
    power_w: float  # per board
    joules: float  # the whole replica (every GPU of it) over the step
    joules_per_token: float | None  # per token the step makes (None: it makes none)


def step_energy(acc: Accelerator, gpus: int, cost: StepCost, tokens: int) -> StepEnergy | None:
    """The energy of one step on `gpus` boards making `tokens` tokens; None without a rating."""
    w = board_power_w(acc, cost)
    if w is None:
        return None
    j = w * gpus * cost.time_s
    return StepEnergy(w, j, j / tokens if tokens > 0 else None)


def electricity_usd_per_mtok(j_per_token: float | None) -> float | None:
    """What a million tokens' board energy costs at the wall of the catalog's datacenter site (its PUE and
    $/kWh, catalog/data/ownership.yaml): an estimate beside the joules; `vazao cost` prices a site the user
    names, in exact money."""
    if j_per_token is None:
        return None
    s = site()
    return j_per_token * 1e6 / J_PER_KWH * s.datacenter_pue * s.usd_per_kwh
