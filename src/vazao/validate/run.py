"""validate(): every row predicted (in worker processes), compared with what was measured, and the
errors summarised by metric group, engine, GPU generation, model family and regime.

Profiles travel to the workers as plain data (a profile file's path and per-engine overrides), so a
calibration can try many parameter values without pickling profile objects."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from vazao.errors import VazaoError
from vazao.resultfiles import from_document
from vazao.validate.rows import MeasuredRow, Problem

Overrides = Mapping[str, Mapping[str, float]]  # engine family → {calibrated parameter: value}
CHUNK = 16


@dataclass(frozen=True)
class RowResult:
    row: MeasuredRow
    predicted: float | None = None
    regime: str = ""
    detail: str = ""
    kv: str = ""
    band: tuple[float, float] | None = None
    band_note: str = ""
    skipped: str | None = None
    # what the comparison itself says about the measurement, one wording per kind (counted in the summary)
    caveats: tuple[str, ...] = ()

    @property
    def ape(self) -> float | None:
        """Absolute percentage error |predicted − measured| / measured."""
        return None if self.predicted is None else abs(self.predicted - self.row.value) / self.row.value

    @property
    def signed(self) -> float | None:
        return None if self.predicted is None else (self.predicted - self.row.value) / self.row.value

    @property
    def log_residual(self) -> float | None:
        """log(measured / predicted): what a band multiplies a prediction by."""
        return None if not self.predicted else math.log(self.row.value / self.predicted)

    @property
    def in_band(self) -> bool | None:
        if self.band is None or self.predicted is None:
            return None
        return self.band[0] <= self.row.value <= self.band[1]

    def to_json(self) -> dict:
        r = self.row
        d = {"id": r.id, "line": r.line, "engine": r.engine, "model": r.model, "gpu": r.gpu, "metric": r.metric,
             "condition": r.condition.describe(), "measured": r.value, "assumed": list(r.assumed)}
        if self.skipped is not None:
            d["skipped"] = self.skipped
            return d
        d.update(predicted=self.predicted, ape=self.ape, signed_error=self.signed, regime=self.regime,
                 kv=self.kv, detail=self.detail, band=list(self.band) if self.band else None)
        if self.band_note:
            d["band_note"] = self.band_note
        if self.caveats:
            d["caveats"] = list(self.caveats)
        return d


def metric_group(row: MeasuredRow) -> str:
    if row.metric == "tg_tok_s_batch1":
        return "decode tok/s, batch 1"
    if row.metric == "pp_tok_s":
        return "prefill tok/s"
    if row.metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_ms"):
        return row.metric.removesuffix("_ms").replace("_latency", "").upper()
    return {"max": "throughput, max load", "rate": "throughput, request rate", "batch": "throughput, static batch",
            "concurrency": "throughput, fixed concurrency"}[row.condition.kind]


# ---- workers ---------------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _profiles(path: str | None, overrides_key: tuple) -> Mapping:
    from vazao.physics.profiles import engines, load_profiles

    base = dict(load_profiles(path)) if path else dict(engines())
    for fam, values in overrides_key:
        base[fam] = base[fam].overridden(**dict(values))
    return base


def _freeze(overrides: Overrides | None) -> tuple:
    return tuple(sorted((f, tuple(sorted(v.items()))) for f, v in (overrides or {}).items()))


def predict_one(row: MeasuredRow, profile_path: str | None, overrides_key: tuple,
                sim_requests: int = 500) -> RowResult:
    from vazao.validate.predict import predict

    try:
        p = predict(row, _profiles(profile_path, overrides_key), sim_requests)
    except VazaoError as exc:
        return RowResult(row, skipped=" ".join(str(exc).split())[:300])
    if not (p.value > 0 and math.isfinite(p.value)):
        return RowResult(row, skipped=f"predicted a non-positive or infinite value ({p.detail})")
    from vazao.bands import band, band_key
    from vazao.physics.profiles import get_engine

    prof = get_engine(row.family, _profiles(profile_path, overrides_key))
    b = band(prof, band_key(p.regime, row.metric), p.value, version=row.version, generation=generation_of(row),
             weight_format=row.weights.lower(), model_family=family_of(row))
    return RowResult(row, p.value, p.regime, p.detail, p.kv, band=(b.low, b.high) if b else None,
                     band_note=b.note if b else "", caveats=_caveats(row, profile_path, overrides_key))


# One wording, the row's own figures left out: the summary counts the rows of each caveat
OUT_OF_STEP = ("TTFT below what a round of its clients sent at once could average at the GPUs' dense peak: the "
               "run's clients were not in step (or its prompts hit a cache), which the simulated closed loop, "
               "whose clients are, does not model")


def _caveats(row: MeasuredRow, profile_path: str | None, overrides_key: tuple) -> tuple[str, ...]:
    from vazao.validate.predict import in_step_floor_ms

    try:
        floor = in_step_floor_ms(row, _profiles(profile_path, overrides_key))
    except VazaoError:  # the row was predicted on this deployment; were the floor to fail, it keeps its prediction
        return ()
    return (OUT_OF_STEP,) if floor is not None and row.value < floor else ()


def _chunk(rows: Sequence[MeasuredRow], path: str | None, key: tuple, sim_requests: int) -> list[RowResult]:
    return [predict_one(r, path, key, sim_requests) for r in rows]


def _work(row: MeasuredRow, sim_requests: int) -> float:
    """A simulated row's rough cost, the tokens its simulation steps through (requests × (input + output)):
    the pool takes the costliest configurations first, so the last chunk to finish is a cheap one. An
    unstated length counts as none; a row the closed form predicts (a static batch, max load) as nothing."""
    from vazao.validate.predict import sim_request_count

    if row.condition.kind in ("rate", "concurrency"):
        return float(sim_request_count(row, sim_requests) * ((row.input_len or 0) + (row.output_len or 0)))
    return 0.0


def _config_key(row: MeasuredRow) -> tuple:
    """Rows of one configuration side by side. Every part comparable whatever the row holds: an unknown
    version sorts as () and the others as text, so a file mixing parseable and free-text cells sorts."""
    return (row.condition.kind not in ("rate", "concurrency"), str(row.family), row.version or (), str(row.model),
            str(row.weights), str(row.gpu), row.gpu_count or 0, row.tp or 0, row.pp or 0, row.input_len or 0,
            row.output_len or 0, str(row.condition.value))


def predict_rows(rows: Sequence[MeasuredRow], *, profile_path: str | Path | None = None,
                 overrides: Overrides | None = None, workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None, sim_requests: int = 500,
                 pool: ProcessPoolExecutor | None = None) -> list[RowResult]:
    """Predict every row; `workers` processes (default: every core), 1 runs in this process."""
    path = str(profile_path) if profile_path else None
    key = _freeze(overrides)
    workers = workers or os.cpu_count() or 1
    # slow rows (simulated ones) first, so the pool does not end waiting on one worker; the rows of one
    # configuration side by side, so they share one simulation
    order = sorted(range(len(rows)), key=lambda i: (-_work(rows[i], sim_requests), _config_key(rows[i])))
    chunks = [[order[j] for j in range(i, min(i + CHUNK, len(order)))] for i in range(0, len(order), CHUNK)]
    out: list[RowResult | None] = [None] * len(rows)
    done = 0
    if workers <= 1 or len(rows) <= CHUNK:
        for idx in chunks:
            for i, res in zip(idx, _chunk([rows[i] for i in idx], path, key, sim_requests), strict=True):
                out[i] = res
            done += len(idx)
            if progress:
                progress(done, len(rows))
        return out  # type: ignore[return-value]
    own = pool is None
    pool = pool or ProcessPoolExecutor(max_workers=min(workers, len(chunks)))
    try:
        futures = {pool.submit(_chunk, [rows[i] for i in idx], path, key, sim_requests): idx for idx in chunks}
        for fut in as_completed(futures):
            idx = futures[fut]
            for i, res in zip(idx, fut.result(), strict=True):
                out[i] = res
            done += len(idx)
            if progress:
                progress(done, len(rows))
    finally:
        if own:
            pool.shutdown(cancel_futures=True)
    return out  # type: ignore[return-value]


# ---- summary ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slice:
    rows: int
    median_ape: float | None
    p90_ape: float | None
    median_signed: float | None
    band_coverage: float | None

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: Mapping) -> Slice:
        return from_document(cls, d)


def slice_of(results: Sequence[RowResult]) -> Slice:
    done = [r for r in results if r.predicted is not None]
    if not done:
        return Slice(0, None, None, None, None)
    ape = np.array([r.ape for r in done])
    signed = np.array([r.signed for r in done])
    banded = [r.in_band for r in done if r.in_band is not None]
    return Slice(len(done), float(np.median(ape)), float(np.percentile(ape, 90)), float(np.median(signed)),
                 float(np.mean(banded)) if banded else None)


def generation_of(row: MeasuredRow) -> str:
    from vazao.catalog.local import resolve_accelerator

    try:
        return resolve_accelerator(row.gpu).generation
    except VazaoError:
        return "unknown"


def family_of(row: MeasuredRow) -> str:
    from vazao.validate.predict import row_model

    try:
        return row_model(row)[0].family
    except VazaoError:
        return "unknown"


def format_of(row: MeasuredRow) -> str:
    from vazao.validate.predict import row_model

    try:
        return row_model(row)[1].lower()
    except VazaoError:
        return row.weights.lower() or "unknown"


def _tally(notes: Iterable[str]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for note in notes:
        counts[note] = counts.get(note, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


@dataclass(frozen=True)
class ValidationReport:
    results: tuple[RowResult, ...]
    problems: tuple[Problem, ...]
    by: Mapping[str, Mapping[str, Slice]] = field(default_factory=dict)
    overall: Slice | None = None

    @property
    def total(self) -> int:
        return len(self.results) + len(self.problems)

    @property
    def predicted(self) -> int:
        return sum(r.predicted is not None for r in self.results)

    @property
    def coverage(self) -> float:
        return self.predicted / self.total if self.total else 0.0

    @property
    def assumed_rows(self) -> int:
        """Rows read with at least one assumption the row does not state (MeasuredRow.assumed)."""
        return sum(bool(r.row.assumed) for r in self.results)

    def assumptions(self) -> list[tuple[str, int]]:
        """Each assumption and how many rows it was taken on, most frequent first."""
        return _tally(note for r in self.results for note in r.row.assumed)

    def caveats(self) -> list[tuple[str, int]]:
        """Each caveat the comparison raised and how many rows it was raised on, most frequent first."""
        return _tally(note for r in self.results for note in r.caveats)

    def skip_reasons(self) -> list[tuple[str, int]]:
        counts: dict[str, int] = {}
        for r in self.results:
            if r.skipped is not None:
                counts[r.skipped] = counts.get(r.skipped, 0) + 1
        for p in self.problems:
            counts[p.reason] = counts.get(p.reason, 0) + 1
        return sorted(counts.items(), key=lambda kv: -kv[1])

    def to_json(self) -> dict:
        o = self.overall or slice_of(self.results)
        return {
            "kind": "validation",
            "rows": [r.to_json() for r in self.results]
            + [{"id": p.id, "line": p.line, "skipped": p.reason} for p in self.problems],
            "summary": {
                "rows": self.total, "predicted": self.predicted, "coverage": self.coverage,
                "median_ape": o.median_ape, "p90_ape": o.p90_ape, "median_signed": o.median_signed,
                "band_coverage": o.band_coverage,
                **{f"by_{k}": {name: s.to_json() for name, s in v.items()} for k, v in self.by.items()},
                "skipped": [{"reason": reason, "rows": n} for reason, n in self.skip_reasons()],
                "assumed": {"rows": self.assumed_rows,
                            "notes": [{"note": note, "rows": n} for note, n in self.assumptions()]},
                "caveats": [{"note": note, "rows": n} for note, n in self.caveats()],
            },
        }


SLICERS: dict[str, Callable[[RowResult], str]] = {
    "metric": lambda r: metric_group(r.row),
    "engine": lambda r: r.row.family + (" " + ".".join(map(str, r.row.version)) if r.row.version else ""),
    "generation": lambda r: generation_of(r.row),
    "model_family": lambda r: family_of(r.row),
    "regime": lambda r: r.regime or "-",
}


def validation_report(results: Sequence[RowResult], problems: Sequence[Problem] = ()) -> ValidationReport:
    by: dict[str, dict[str, Slice]] = {}
    for name, key in SLICERS.items():
        groups: dict[str, list[RowResult]] = {}
        for r in results:
            if r.predicted is not None:
                groups.setdefault(key(r), []).append(r)
        by[name] = {k: slice_of(v) for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))}
    return ValidationReport(tuple(results), tuple(problems), by, slice_of(results))
