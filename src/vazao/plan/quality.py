"""What a quantization format costs in quality, per model family: the published rows of
catalog/data/quality.yaml and the user's own rows (a `vazao quality -o` file, read by `plan --quality FILE`).

A row says: on this benchmark (`metric`), the reference scored `reference` and the quantized model `score`;
`recovery` is score / reference (reference / score for a lower-is-better metric such as perplexity), the
share of the reference's quality kept. Catalog rows compare against the 16-bit model; a measured row may
compare against another format (`reference_format`), and is then chained through that format's own figure.

`quality_of` gives a family × format's recovery against 16 bits with its metric and source, or None where
nothing is published or measured: the planner flags such a deployment as unknown under `--quality-floor`,
it never guesses. Which row when several match (docs/quality.md): the user's rows before the catalog's for
that family × format; then the row measured on the same catalog model; else the row of the nearest size
(parameters); with no size to go by, the lowest recovery (the figure every sibling was published to reach).
16-bit formats are 1.0 by definition."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.catalog._load import load_yaml
from vazao.errors import VazaoError

SIXTEEN_BIT = ("bf16", "fp16", "fp32")
_CHAIN_DEPTH = 4  # a measured row against a format measured against another … (a loop is refused)


@dataclass(frozen=True)
class Quality:
    recovery: float
    metric: str
    source: str
    measured_on: str = ""


@dataclass(frozen=True)
class QualityRow:
    """One family × format figure, with where it came from (the shape of quality.yaml's rows)."""

    family: str
    format: str
    recovery: float
    metric: str
    source: str
    as_of: str
    measured_on: str = ""
    model: str = ""  # the catalog model measured, where vazao knows it
    params_b: float | None = None  # its size in billions of parameters
    reference: float | None = None  # the reference's score on the metric
    score: float | None = None  # the quantized (candidate) model's score
    higher_is_better: bool = True
    reference_format: str = "bf16"  # what the reference ran in: 16-bit for every published row
    counts: tuple[tuple[str, float], ...] = ()  # a measured row's counts (prompts, exact matches …)

    def to_json(self) -> dict[str, Any]:
        """The row as quality.yaml and a row file hold it (defaults left out)."""
        out: dict[str, Any] = {"family": self.family, "format": self.format}
        if self.reference_format != "bf16":
            out["reference_format"] = self.reference_format
        for key in ("reference", "score"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if not self.higher_is_better:
            out["higher_is_better"] = False
        out.update(recovery=self.recovery, metric=self.metric)
        for key in ("measured_on", "model", "params_b"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        out.update(source=self.source, as_of=self.as_of)
        if self.counts:
            out["counts"] = dict(self.counts)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "quality row") -> QualityRow:
        """A row checked field by field (a user's file is input: inputs.number bounds every figure)."""
        return row_from_mapping(data, where)


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = True, limit: int = 2000) -> str:
    v = data.get(key)
    if v is None or v == "":
        if required:
            raise VazaoError(f"{where}: give `{key}`")
        return ""
    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
        raise VazaoError(f"{where}: `{key}` must be text, got {type(v).__name__}")
    text = str(v).strip()
    if len(text) > limit:
        raise VazaoError(f"{where}: `{key}` is longer than {limit} characters")
    return text


def _opt_number(data: Mapping[str, Any], key: str, where: str, minimum: float, maximum: float) -> float | None:
    if data.get(key) is None:
        return None
    return float(inputs.number(data[key], f"{where}: {key}", minimum=minimum, maximum=maximum))


def row_from_mapping(data: Any, where: str) -> QualityRow:
    from vazao.catalog.formats import get_format

    if not isinstance(data, Mapping):
        raise VazaoError(f"{where}: expected a mapping (family, format, recovery, metric, source, as_of)")
    fmt = get_format(_text(data, "format", where, limit=limits.MAX_LABEL)).name
    ref_fmt = get_format(_text(data, "reference_format", where, required=False, limit=limits.MAX_LABEL)
                         or "bf16").name
    if ref_fmt == fmt:
        raise VazaoError(f"{where}: reference_format and format are both {fmt}")
    hib = data.get("higher_is_better", True)
    if not isinstance(hib, bool):
        raise VazaoError(f"{where}: `higher_is_better` must be true or false")
    counts = data.get("counts") or {}
    if not isinstance(counts, Mapping) or len(counts) > limits.MAX_QUALITY_COUNTS:
        raise VazaoError(f"{where}: `counts` must be a mapping of at most {limits.MAX_QUALITY_COUNTS} names to "
                         "numbers")
    return QualityRow(
        family=_text(data, "family", where, limit=limits.MAX_LABEL).lower(), format=fmt,
        recovery=float(inputs.number(data.get("recovery"), f"{where}: recovery", minimum=0.0, maximum=2.0)),
        metric=_text(data, "metric", where), source=_text(data, "source", where),
        as_of=_text(data, "as_of", where, limit=64), measured_on=_text(data, "measured_on", where, required=False),
        model=_text(data, "model", where, required=False, limit=limits.MAX_NAME),
        params_b=_opt_number(data, "params_b", where, minimum=0.0, maximum=1e5),
        reference=_opt_number(data, "reference", where, minimum=-1e12, maximum=1e12),
        score=_opt_number(data, "score", where, minimum=-1e12, maximum=1e12),
        higher_is_better=hib, reference_format=ref_fmt,
        counts=tuple((_text({"k": k}, "k", where, limit=limits.MAX_LABEL),
                      float(inputs.number(v, f"{where}: counts.{k}", minimum=-1e15, maximum=1e15)))
                     for k, v in counts.items()))


def rows_from_document(doc: Any, where: str) -> tuple[QualityRow, ...]:
    """The rows of a `quality:` document (quality.yaml's shape, a `vazao quality -o` file)."""
    rows = doc.get("quality") if isinstance(doc, Mapping) else None
    if not isinstance(rows, list) or not rows:
        raise VazaoError(f"{where}: expected `quality:` with a list of rows (vazao quality -o writes one)")
    if len(rows) > limits.MAX_QUALITY_ROWS:
        raise VazaoError(f"{where}: {len(rows):,} rows, more than the {limits.MAX_QUALITY_ROWS:,} accepted")
    return tuple(row_from_mapping(r, f"{where} row {i}") for i, r in enumerate(rows, 1))


@cache
def catalog_rows() -> tuple[QualityRow, ...]:
    return rows_from_document(load_yaml("quality.yaml"), "quality.yaml")


def read_rows(path: Path | str) -> tuple[QualityRow, ...]:
    """A user's row file (YAML or JSON: `quality:` and its rows), through the input layer."""
    return _read_rows(str(path))


@cache
def _read_rows(path: str) -> tuple[QualityRow, ...]:
    return rows_from_document(inputs.read_yaml(path, "quality file"), f"quality file {Path(path).name}")


def rows_document(rows: Iterable[QualityRow]) -> dict[str, Any]:
    return {"quality": [r.to_json() for r in rows]}


def _pick(rows: list[QualityRow], model: str, params_b: float | None) -> QualityRow:
    same = [r for r in rows if model and r.model == model]
    if same:
        return min(same, key=lambda r: r.recovery)
    sized = [r for r in rows if r.params_b]
    if params_b and sized:
        return min(sized, key=lambda r: (abs(math.log(r.params_b / params_b)), r.recovery))  # type: ignore[operator]
    return min(rows, key=lambda r: r.recovery)


def quality_of(model_family: str, fmt: str, *, model: str = "", params_b: float | None = None,
               rows: tuple[QualityRow, ...] = (), _depth: int = 0) -> Quality | None:
    """The recovery of `fmt` on `model_family` against 16 bits (see the module docstring for which row)."""
    if fmt in SIXTEEN_BIT:
        return Quality(1.0, "16-bit baseline", "by definition")
    if _depth > _CHAIN_DEPTH:
        return None
    family = model_family.lower()
    found = [r for r in rows if r.family == family and r.format == fmt] or \
        [r for r in catalog_rows() if r.family == family and r.format == fmt]
    if not found:
        return None
    row = _pick(found, model, params_b)
    source = f"{row.source} ({row.as_of})"
    if row.reference_format in SIXTEEN_BIT:
        return Quality(row.recovery, row.metric, source, row.measured_on)
    base = quality_of(family, row.reference_format, model=model, params_b=params_b, rows=rows,
                      _depth=_depth + 1)
    if base is None:
        return None
    return Quality(row.recovery * base.recovery, f"{row.metric} × {row.reference_format}'s {base.metric}",
                   f"{source}; {row.reference_format} vs 16-bit: {base.source}", row.measured_on)


def meets_floor(model_family: str, fmt: str, floor: float, **kw: Any) -> str:
    """'met', 'not met' or 'unknown' (no published figure)."""
    q = quality_of(model_family, fmt, **kw)
    if q is None:
        return "unknown"
    return "met" if q.recovery >= floor else "not met"
