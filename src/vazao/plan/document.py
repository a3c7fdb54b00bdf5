"""A plan read back: `vazao plan --json`'s document (plan.output.plan_json) as typed values.

Not a PlanResult: the search's result holds each candidate's Shape and every pruned shape, which the
document names only by label (and keeps the first 50 pruned), so a PlanResult cannot be rebuilt from it.
PlanDocument holds what the document does: the candidates as their rows, the summaries, checks and
bands typed, the inputs and catalog versions as written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from vazao.bands import Band
from vazao.catalog.engine_support import Lifecycle
from vazao.cost.capacity import Check
from vazao.plan.curves import Curve
from vazao.resultfiles import from_document
from vazao.results import RunSummary


@dataclass(frozen=True)
class PlannedCandidate:
    """One candidate as plan_json writes it (output.candidate_json): money as JSON numbers."""

    model: str
    format: str
    kv_format: str
    gpu: str
    count: int
    replicas: int
    tp: int
    pp: int
    engine: str
    max_batch: int
    usd_per_hour: float | None
    usd_per_mtok: float | None
    usd_per_month: float | None
    meets_slo: bool
    marginal: bool
    source: str
    summary: RunSummary | None
    checks: tuple[Check, ...]
    binding: str | None
    bands: Mapping[str, Band]
    quality: float | None
    quality_source: str | None
    detail: str
    context_tokens: int | None
    capacity_req_s: float | None
    disagg: Mapping[str, int] | None
    tokens_per_s_per_gpu: float | None
    tokens_per_s_per_user: float | None
    command: str | None
    power_w_per_gpu: float | None = None  # sim.run.SimEnergy over the judged run; None: no rating
    j_per_output_token: float | None = None
    electricity_usd_per_mtok: float | None = None

    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["summary"] = self.summary.to_json() if self.summary is not None else None
        d["checks"] = [k.to_json() for k in self.checks]
        d["bands"] = {k: b.to_json() for k, b in self.bands.items()}  # {low_s, high_s, note}, as plan_json
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PlannedCandidate:
        return from_document(cls, d)


@dataclass(frozen=True)
class PlanDocument:
    candidates: tuple[PlannedCandidate, ...]  # best first
    pareto: tuple[PlannedCandidate, ...]
    binding_constraint: str | None
    winner: int | None  # 0 (the first candidate) when it meets the SLO
    closest_miss: PlannedCandidate | None
    pruned: Mapping[str, Any]  # {"by_reason": {reason: n}, "examples": the first 50}
    lengths: Mapping[str, Any]
    inputs: Mapping[str, Any]  # PlanInputs.to_json: the question as asked
    backend: str
    catalog_versions: Mapping[str, str]
    curves: tuple[Curve, ...] = ()
    against_api: Mapping[str, Any] | None = None
    lifecycle: tuple[Lifecycle, ...] = ()  # each searched (engine, GPU)'s software lifecycle

    def to_json(self) -> dict[str, Any]:
        d = {"kind": "plan", **{f.name: getattr(self, f.name) for f in fields(self)}}
        for key in ("candidates", "pareto", "curves", "lifecycle"):
            d[key] = [x.to_json() for x in d[key]]
        d["closest_miss"] = self.closest_miss.to_json() if self.closest_miss is not None else None
        if not self.curves:  # plan_json writes these two only when there are some
            del d["curves"]
        if self.against_api is None:
            del d["against_api"]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PlanDocument:
        return from_document(cls, d)
