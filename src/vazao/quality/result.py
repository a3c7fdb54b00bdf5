"""One `vazao quality` run: what was compared, the totals, each prompt's figures, and the quality row it
makes (plan/quality.py's QualityRow)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vazao.plan.quality import QualityRow
from vazao.quality.compare import PairStats
from vazao.resultfiles import from_document

METRICS = {
    "exact": "share of prompts whose answer is identical to the reference's (greedy, temperature 0)",
    "agreement": "share of the reference's answer tokens (or words) the candidate's answer repeats before "
                 "the two part (greedy, temperature 0)",
}


@dataclass(frozen=True)
class PromptResult:
    index: int  # 1-based, in the prompts file
    stats: PairStats
    reference_text: str  # the answers, cut to 200 characters
    candidate_text: str

    def to_json(self) -> dict[str, Any]:
        s = self.stats
        return {"index": self.index, "exact": s.exact, "unit": s.unit, "reference_units": s.reference_units,
                "agreeing_units": s.agreeing_units, "positions": s.positions,
                "top_overlap_sum": s.top_overlap_sum, "kl_sum": s.kl_sum,
                "reference_text": self.reference_text, "candidate_text": self.candidate_text}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PromptResult:
        return cls(int(data["index"]), from_document(PairStats, data), str(data["reference_text"]),
                   str(data["candidate_text"]))


@dataclass(frozen=True)
class QualityMeasurement:
    family: str
    format: str  # the candidate's format
    reference_format: str
    metric: str  # a METRICS key: what the row's recovery is
    reference_url: str  # without user:password or query
    candidate_url: str
    reference_model: str
    candidate_model: str
    api: str
    max_tokens: int
    top_logprobs: int
    prompts_file: str  # its name
    date: str  # ISO date of the run
    prompts: tuple[PromptResult, ...]
    logprobs: bool  # both servers returned log-probabilities

    @property
    def exact_matches(self) -> int:
        return sum(p.stats.exact for p in self.prompts)

    @property
    def exact_rate(self) -> float:
        return self.exact_matches / len(self.prompts) if self.prompts else 0.0

    @property
    def unit(self) -> str:
        units = {p.stats.unit for p in self.prompts}
        return units.pop() if len(units) == 1 else "mixed"

    @property
    def reference_units(self) -> int:
        return sum(p.stats.reference_units for p in self.prompts)

    @property
    def agreeing_units(self) -> int:
        return sum(p.stats.agreeing_units for p in self.prompts)

    @property
    def agreement(self) -> float:
        return self.agreeing_units / self.reference_units if self.reference_units else 1.0

    @property
    def positions(self) -> int:
        return sum(p.stats.positions for p in self.prompts)

    @property
    def top_overlap(self) -> float | None:
        return sum(p.stats.top_overlap_sum for p in self.prompts) / self.positions if self.positions else None

    @property
    def kl_nats(self) -> float | None:
        return sum(p.stats.kl_sum for p in self.prompts) / self.positions if self.positions else None

    @property
    def recovery(self) -> float:
        return self.exact_rate if self.metric == "exact" else self.agreement

    def counts(self) -> dict[str, float]:
        out: dict[str, float] = {"prompts": len(self.prompts), "exact_matches": self.exact_matches,
                                 f"reference_{self.unit}": self.reference_units,
                                 f"agreeing_{self.unit}": self.agreeing_units}
        if self.positions:
            out.update(logprob_positions=self.positions, top_logprobs=self.top_logprobs,
                       top_overlap=round(self.top_overlap or 0.0, 6), kl_nats=round(self.kl_nats or 0.0, 6))
        return out

    def row(self) -> QualityRow:
        """The quality row: recovery is the candidate's score on `metric` with the reference's answers as the
        answer key, against the reference's own 1.0."""
        return QualityRow(
            family=self.family, format=self.format, reference_format=self.reference_format,
            recovery=round(self.recovery, 6), reference=1.0, score=round(self.recovery, 6),
            metric=METRICS[self.metric], measured_on=f"{self.candidate_model} vs {self.reference_model}",
            source=f"measured by vazao quality on {self.date}: {self.prompts_file}", as_of=self.date,
            counts=tuple(self.counts().items()))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "quality", "family": self.family, "format": self.format,
                "reference_format": self.reference_format, "metric": self.metric,
                "reference_url": self.reference_url, "candidate_url": self.candidate_url,
                "reference_model": self.reference_model, "candidate_model": self.candidate_model, "api": self.api,
                "max_tokens": self.max_tokens, "top_logprobs": self.top_logprobs,
                "prompts_file": self.prompts_file, "date": self.date, "logprobs": self.logprobs,
                "exact_matches": self.exact_matches, "exact_rate": self.exact_rate, "unit": self.unit,
                "agreement": self.agreement, "logprob_positions": self.positions, "top_overlap": self.top_overlap,
                "kl_nats": self.kl_nats, "row": self.row().to_json(),
                "prompts": [p.to_json() for p in self.prompts]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QualityMeasurement:
        return from_document(cls, data, prompts=tuple(PromptResult.from_json(p) for p in data["prompts"]))
