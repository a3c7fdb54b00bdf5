"""Published quality of a quantization format on a model family (catalog/data/quality.yaml).

`quality_of` gives the recovery (share of the 16-bit score) with its metric and source, or None where
nothing is published: the planner flags such a deployment as unknown under `--quality-floor`, it never
guesses. 16-bit formats are 1.0 by definition."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from vazao.catalog._load import load_yaml

SIXTEEN_BIT = ("bf16", "fp16", "fp32")


@dataclass(frozen=True)
class Quality:
    recovery: float
    metric: str
    source: str
    measured_on: str = ""


@cache
def _table() -> dict[tuple[str, str], Quality]:
    out = {}
    for row in load_yaml("quality.yaml")["quality"]:
        out[(row["family"], row["format"])] = Quality(float(row["recovery"]), row["metric"],
                                                      f"{row['source']} ({row['as_of']})", row.get("measured_on", ""))
    return out


def quality_of(model_family: str, fmt: str) -> Quality | None:
    if fmt in SIXTEEN_BIT:
        return Quality(1.0, "16-bit baseline", "by definition")
    return _table().get((model_family, fmt))


def meets_floor(model_family: str, fmt: str, floor: float) -> str:
    """'met', 'not met' or 'unknown' (no published figure)."""
    q = quality_of(model_family, fmt)
    if q is None:
        return "unknown"
    return "met" if q.recovery >= floor else "not met"
