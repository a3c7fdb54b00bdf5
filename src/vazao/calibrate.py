"""Fitting an engine profile's calibrated parameters to measured rows, and the residual quantiles
(the error bands) a fit leaves. Reading a profile file is physics.profiles.load_profiles."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from vazao.bands import band_key
from vazao.errors import VazaoError
from vazao.physics.profiles import CALIBRATED, load_profiles

if TYPE_CHECKING:
    from vazao.validate.rows import MeasuredRow

FIT_PARAMS = ("memory_efficiency", "compute_efficiency", "attention_efficiency", "narrow_compute_efficiency",
              "moe_efficiency", "moe_memory_efficiency", "comm_efficiency", "compute_ramp_tokens",
              "moe_width_ramp_cols",
              "stream_ceiling_bytes_per_s",
              "compute_ceiling_flops", "attention_compute_efficiency", "roofline_overlap", "pipeline_bubble",
              "dequant_factor", "step_overhead_s", "per_sequence_overhead_s", "host_overlap",
              "request_overhead_s")
# a parameter at 0 is searched from this value up (multiplicative steps cannot leave 0)
_FLOOR = {"compute_ramp_tokens": 16.0, "moe_width_ramp_cols": 32.0, "pipeline_bubble": 0.05,
          "stream_ceiling_bytes_per_s": 5e12, "compute_ceiling_flops": 4e14, "step_overhead_s": 1e-4,
          "dequant_factor": 0.05,
          "request_overhead_s": 1e-3, "per_sequence_overhead_s": 1e-7, "moe_layer_overhead_s": 1e-5,
          "host_overlap": 0.5}
# searched as their inverse (scale / value): 1 means a 1 TB/s or 1 PFLOP/s ceiling
_INVERSE = {"stream_ceiling_bytes_per_s": 1e12, "compute_ceiling_flops": 1e15}
_INV_FLOOR = 0.05
_DELTA = 0.15  # soft-L1 scale on log(measured / predicted): errors beyond ~15% count linearly
_SKIP_LOSS = 2.0 * math.log(3.0)  # a row the candidate cannot predict costs as much as a 3× miss
_STEPS = (1.5, 1.2, 1.07)  # multiplicative search step per round


@dataclass(frozen=True)
class Residuals:
    """Quantiles of log(measured / predicted) over the rows of one regime."""

    n: int
    q10: float
    q50: float
    q90: float

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class EngineFit:
    family: str
    min_version: tuple[int, ...] | None  # None: the engine's base values (every version pooled)
    values: Mapping[str, float]
    rows: int
    loss: float
    median_ape: float | None
    residuals: Mapping[str, Residuals]
    fitted_on: Mapping[str, tuple[str, ...]]  # generations, formats, model families seen

    def calibration(self, source: str) -> dict:
        return {"source": source, "as_of": dt.date.today().isoformat(), "rows": self.rows,
                "loss": round(self.loss, 6),
                "median_ape": self.median_ape,
                "residuals": {k: v.to_json() for k, v in self.residuals.items()},
                "fitted_on": {k: list(v) for k, v in self.fitted_on.items()}}


def _row_weights(rows) -> list[float]:
    """Each metric group weighs the same in the loss, whatever its row count."""
    from vazao.validate.run import metric_group

    counts: dict[str, int] = {}
    for r in rows:
        g = metric_group(r)
        counts[g] = counts.get(g, 0) + 1
    return [1.0 / counts[metric_group(r)] for r in rows]


def loss_of(results, weights) -> float:
    total = 0.0
    for res, w in zip(results, weights, strict=True):
        r = res.log_residual
        if r is None:
            total += w * _SKIP_LOSS
        else:
            total += w * 2 * _DELTA**2 * (math.sqrt(1 + (r / _DELTA) ** 2) - 1) / _DELTA
    return total / sum(weights)


def _evaluate(rows, path, overrides, sim_requests) -> tuple[float, list]:
    from vazao.validate.run import predict_rows

    results = predict_rows(rows, profile_path=path, overrides=overrides, workers=1, sim_requests=sim_requests)
    return loss_of(results, _row_weights(rows)), results


def _loss_task(rows, path, overrides, sim_requests) -> float:
    return _evaluate(rows, path, overrides, sim_requests)[0]


def _candidates(name: str, value: float, step: float, bounds: Mapping | None = None) -> list[float]:
    lo, hi = (bounds or {}).get(name, CALIBRATED[name])
    start = value if value > 0 else _FLOOR.get(name, lo)
    out = {min(hi, max(lo, start * f)) for f in (1 / step**2, 1 / step, step, step**2)}
    if value > 0 and name in _FLOOR:
        out.add(0.0)
    if value == 0:
        out.add(start)
    out.discard(value)
    return sorted(out)


def residuals_by_regime(results) -> dict[str, Residuals]:
    groups: dict[str, list[float]] = {}
    for r in results:
        if r.log_residual is not None:
            groups.setdefault(band_key(r.regime, r.row.metric), []).append(r.log_residual)
            groups.setdefault("all", []).append(r.log_residual)
    out = {}
    for k, v in groups.items():
        a = np.array(v)
        out[k] = Residuals(len(a), float(np.percentile(a, 10)), float(np.median(a)), float(np.percentile(a, 90)))
    return out


def fit_family(rows, family: str, *, base_values: Mapping[str, float], params=FIT_PARAMS,
               profile_path: str | None = None, workers: int = 1, sim_requests: int = 150,
               progress: Callable[[str], None] | None = None, min_version=None, steps=_STEPS,
               joint_iters: int = 120, bounds: Mapping[str, tuple[float, float]] | None = None) -> EngineFit:
    """Coordinate search, in log steps, of `params` of one engine family on `rows` (all of that family),
    minimising a soft-L1 loss on log error with every metric group weighted alike. `bounds` narrows
    CALIBRATED's range of some parameters for this fit (what a measurement says no kernel exceeds)."""
    from vazao.validate.run import slice_of

    values = {p: float(base_values[p]) for p in params}

    def overrides(v: Mapping[str, float]) -> dict:
        return {family: dict(v)}

    best, _ = _evaluate(rows, profile_path, overrides(values), sim_requests)
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        for step in steps:
            for name in params:
                cands = _candidates(name, values[name], step, bounds)
                trials = [{**values, name: c} for c in cands]
                if pool:
                    losses = list(pool.map(_loss_task, *zip(*[(rows, profile_path, overrides(t), sim_requests)
                                                              for t in trials], strict=True)))
                else:
                    losses = [_loss_task(rows, profile_path, overrides(t), sim_requests) for t in trials]
                i = int(np.argmin(losses))
                if losses[i] < best - 1e-6:
                    best, values = losses[i], trials[i]
                if progress:
                    progress(f"{family}: step ×{step}: {name} = {values[name]:.4g}, loss {best:.4f}")
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    values, best = _nelder_mead(rows, family, values, best, profile_path, sim_requests, workers, progress,
                                joint_iters, bounds)
    # the residuals (the bands) from the predictions validate makes: full-size simulations
    from vazao.validate.predict import SIM_REQUESTS

    loss, results = _evaluate(rows, profile_path, overrides(values), SIM_REQUESTS)
    return EngineFit(family, min_version, values, len(rows), loss, slice_of(results).median_ape,
                     residuals_by_regime(results), seen_of(rows))


def seen_of(rows) -> dict[str, tuple[str, ...]]:
    """What a fit on `rows` saw (EngineFit.fitted_on): the bands widen for anything else (bands.py)."""
    from vazao.validate.run import family_of, format_of, generation_of

    return {"generations": tuple(sorted({generation_of(r) for r in rows})),
            "formats": tuple(sorted({format_of(r) for r in rows})),
            "model_families": tuple(sorted({family_of(r) for r in rows}))}


def _nelder_mead(rows, family, values, best, path, sim_requests, workers, progress, iters: int = 120,
                 bounds: Mapping | None = None):
    """Refine jointly (coordinate steps cannot trade one parameter against another) in
    x = log(value + floor), bounded by CALIBRATED."""
    names = [n for n in values]
    floor = np.array([_INV_FLOOR if n in _INVERSE else _FLOOR.get(n, 0.0) for n in names])
    rng = {n: (bounds or {}).get(n, CALIBRATED[n]) for n in names}
    lo = np.array([rng[n][0] for n in names])
    hi = np.array([rng[n][1] for n in names])

    def inner(n, v):  # a ceiling is searched as its inverse (0: none), so it can grow in from "no ceiling"
        return (_INVERSE[n] / v if v else 0.0) if n in _INVERSE else v

    def to_values(x):
        u = np.exp(x) - floor
        out = {}
        for i, n in enumerate(names):
            v = (_INVERSE[n] / u[i] if u[i] > 1e-9 else 0.0) if n in _INVERSE else u[i]
            out[n] = float(max(0.0, min(hi[i], max(lo[i], v)) if v else 0.0))
        return out

    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    from vazao.validate.run import predict_rows

    def f(x):
        res = predict_rows(rows, profile_path=path, overrides={family: to_values(x)}, workers=workers,
                           sim_requests=sim_requests, pool=pool)
        return loss_of(res, weights)

    weights = _row_weights(rows)
    x0 = np.log(np.array([inner(n, values[n]) for n in names]) + floor + 1e-12)
    # a ceiling at "none" starts its edge of the simplex at a ceiling that matters (u = 0.2: 5 TB/s, 5 PFLOP/s)
    steps = [max(0.15, float(np.log((0.2 + floor[i]) / (np.exp(x0[i])))))
             if names[i] in _INVERSE and np.exp(x0[i]) - floor[i] < 0.05 else 0.15 for i in range(len(names))]
    simplex = [x0] + [x0 + np.eye(len(names))[i] * steps[i] for i in range(len(names))]
    fs = [best] + [f(x) for x in simplex[1:]]
    try:
        for it in range(iters):
            order = np.argsort(fs)
            simplex = [simplex[i] for i in order]
            fs = [fs[i] for i in order]
            centroid = np.mean(simplex[:-1], axis=0)
            xr = centroid + (centroid - simplex[-1])
            fr = f(xr)
            if fr < fs[0]:
                xe = centroid + 2 * (centroid - simplex[-1])
                fe = f(xe)
                simplex[-1], fs[-1] = (xe, fe) if fe < fr else (xr, fr)
            elif fr < fs[-2]:
                simplex[-1], fs[-1] = xr, fr
            else:
                xc = centroid + 0.5 * (simplex[-1] - centroid)
                fc = f(xc)
                if fc < fs[-1]:
                    simplex[-1], fs[-1] = xc, fc
                else:
                    simplex = [simplex[0]] + [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex[1:]]
                    fs = [fs[0]] + [f(x) for x in simplex[1:]]
            if progress and it % 10 == 0:
                progress(f"{family}: joint refinement {it}/{iters}, loss {min(fs):.4f}")
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    i = int(np.argmin(fs))
    return (to_values(simplex[i]), fs[i]) if fs[i] < best else (values, best)


def profile_document(fits: list[EngineFit], source: str) -> dict:
    """A profile file (`--profile`): per engine its base values, a `versions` entry per fitted release,
    and the calibration provenance the bands are read from."""
    doc: dict[str, dict] = {}
    for f in sorted(fits, key=lambda f: (f.family, f.min_version or ())):
        e = doc.setdefault(f.family, {})
        vals = {k: round(v, 6) for k, v in f.values.items()}
        if f.min_version is None:
            e.update(vals)
            e["calibration"] = f.calibration(source)
        else:
            # the release itself (every patch of it); a release the rows never named gets the base values
            entry = {"min_version": ".".join(map(str, f.min_version)),
                     "max_version": ".".join(map(str, f.min_version)) + ".9999", **vals}
            e.setdefault("versions", []).append(entry)
            e.setdefault("calibration", {}).setdefault("versions", {})[entry["min_version"]] = f.calibration(source)
    return {"engines": doc}


def relevant_params(rows) -> tuple[str, ...]:
    """The parameters these rows can tell anything about: no MoE efficiency from dense models, no
    8-bit tensor-core efficiency without FP8/INT8 rows, no communication without tensor parallelism,
    no per-request overhead without latency rows. The rest keep their values."""
    from vazao.catalog.models import get_model
    from vazao.physics.profiles import get_engine

    def moe(r) -> bool:
        try:
            return get_model(r.model).is_moe
        except VazaoError:
            return False

    has = {
        "moe_efficiency": any(moe(r) for r in rows),
        "moe_memory_efficiency": any(moe(r) for r in rows),
        "narrow_compute_efficiency": any(r.weights.lower() in ("fp8", "int8", "nvfp4", "fp4", "mxfp4", "w8a8")
                                         for r in rows),
        "comm_efficiency": any(r.tp > 1 for r in rows),
        # a bubble means something only where the engine pipelines micro-batches
        "pipeline_bubble": any(r.pp > 1 for r in rows) and (get_engine(rows[0].family).pipeline_microbatches
                                                            or get_engine(rows[0].family).pipeline_ubatches),
        "request_overhead_s": any(r.metric in ("ttft_ms", "e2e_latency_ms") for r in rows),
        "dequant_factor": any(r.weights.lower().startswith(("q", "int4", "awq", "gptq")) for r in rows),
    }
    # a value every row's hardware generation overrides (llama.cpp's measured cpu-generic values) is never
    # used by these rows: fitting it would write a number nothing checked
    from vazao.validate.run import generation_of

    gens = {generation_of(r) for r in rows}
    overrides = [set(get_engine(rows[0].family).generations.get(g, {})) for g in gens]
    unused = set.intersection(*overrides) if overrides else set()
    return tuple(p for p in FIT_PARAMS if has.get(p, True) and p not in unused)


class EngineCalibration(NamedTuple):
    """What calibrate_engine fitted: the profile document `vazao calibrate -o` writes (engine family →
    fitted values, residual quantiles, what the fit saw), and each release's fit. A tuple, so
    `doc, fits = calibrate_engine(...)` reads it too."""

    document: dict[str, Any]
    fits: list[EngineFit]


def calibrate_engine(rows: Sequence[MeasuredRow], family: str, *, profile_path: str | None = None,
                     workers: int = 1, progress: Callable[[str], None] | None = None,
                     source: str = "") -> EngineCalibration:
    """One fit per engine release present in `rows` (rows without a version form one group); the
    newest release's values are also the base, used for releases the rows do not name."""
    from vazao.physics.profiles import get_engine

    base = get_engine(family, load_profiles(profile_path) if profile_path else None)
    groups: dict[tuple | None, list] = {}
    for r in rows:
        groups.setdefault(r.version[:2] if r.version else None, []).append(r)
    fits = []
    for version, sel in sorted(groups.items(), key=lambda kv: kv[0] or ()):
        start = base.at_version(version)
        simulated = any(r.condition.kind in ("rate", "concurrency") for r in sel)
        params = relevant_params(sel)
        fit = fit_family(sel, family, base_values={p: getattr(start, p) for p in params}, params=params,
                         profile_path=profile_path,
                         workers=workers, progress=progress, min_version=version,
                         sim_requests=100 if simulated else 150, steps=_STEPS[:2] if simulated else _STEPS,
                         joint_iters=30 if simulated else 120)
        fits.append(fit)
    if len(fits) > 1 or fits[0].min_version is not None:
        newest = fits[-1]
        fits.append(EngineFit(family, None, newest.values, newest.rows, newest.loss, newest.median_ape,
                              newest.residuals, newest.fitted_on))
    return EngineCalibration(profile_document(fits, source), fits)
