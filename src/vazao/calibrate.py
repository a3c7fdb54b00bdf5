"""Calibrated engine profiles: reading a profile file (and, below, fitting one)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vazao import inputs
from vazao.errors import VazaoError
from vazao.physics.profiles import CALIBRATED, EngineProfile, engines, profile_from_dict


def load_profiles(path: str | Path) -> Mapping[str, EngineProfile]:
    """A profile file: {engines: {name: {settings}}}; a name the shipped catalog has may give only
    the keys it changes, the rest coming from engines.yaml."""
    data = inputs.read_yaml(path, "profile file")
    if not isinstance(data, Mapping) or not isinstance(data.get("engines"), Mapping):
        raise VazaoError(f"profile file {path}: expected a mapping with an `engines` mapping")
    shipped = engines()
    out = dict(shipped)
    for name, e in data["engines"].items():
        base = {}
        if name in shipped:
            import dataclasses

            base = {f.name: getattr(shipped[name], f.name) for f in dataclasses.fields(EngineProfile)
                    if f.name != "name"}
            base["versions"] = [dict(v) for v in base["versions"]]
            base["kv_dtype"] = dict(base["kv_dtype"])
        if not isinstance(e, Mapping):
            raise VazaoError(f"profile file {path}: engine {name}: expected a mapping of settings")
        out[str(name)] = profile_from_dict(str(name), {**base, **e}, f"profile file {path}")
    return out


# ---- fitting -----------------------------------------------------------------------------------------
FIT_PARAMS = ("memory_efficiency", "compute_efficiency", "attention_efficiency", "narrow_compute_efficiency",
              "moe_efficiency", "comm_efficiency", "compute_ramp_tokens", "stream_ceiling_bytes_per_s",
              "step_overhead_s", "request_overhead_s")
# a parameter at 0 is searched from this value up (multiplicative steps cannot leave 0)
_FLOOR = {"compute_ramp_tokens": 16.0, "stream_ceiling_bytes_per_s": 1.5e12, "step_overhead_s": 1e-4,
          "request_overhead_s": 1e-3, "per_sequence_overhead_s": 1e-7}
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
        return {"source": source, "rows": self.rows, "loss": round(self.loss, 6),
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


def _candidates(name: str, value: float, step: float) -> list[float]:
    lo, hi = CALIBRATED[name]
    start = value if value > 0 else _FLOOR.get(name, lo)
    out = {min(hi, max(lo, start * f)) for f in (1 / step**2, 1 / step, step, step**2)}
    if value > 0 and name in _FLOOR:
        out.add(0.0)
    if value == 0:
        out.add(start)
    out.discard(value)
    return sorted(out)


def band_key(regime: str, metric: str) -> str:
    """Residuals are kept per regime, latencies apart from speeds (they err in opposite directions)."""
    from vazao.validate.rows import LATENCY_METRICS

    return f"{regime} latency" if metric in LATENCY_METRICS else regime


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
               progress: Callable[[str], None] | None = None, min_version=None) -> EngineFit:
    """Coordinate search, in log steps, of `params` of one engine family on `rows` (all of that family),
    minimising a soft-L1 loss on log error with every metric group weighted alike."""
    from vazao.validate.run import family_of, generation_of, slice_of

    values = {p: float(base_values[p]) for p in params}

    def overrides(v: Mapping[str, float]) -> dict:
        return {family: dict(v)}

    best, _ = _evaluate(rows, profile_path, overrides(values), sim_requests)
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        for step in _STEPS:
            for name in params:
                cands = _candidates(name, values[name], step)
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
    values, best = _nelder_mead(rows, family, values, best, profile_path, sim_requests, workers, progress)
    loss, results = _evaluate(rows, profile_path, overrides(values), sim_requests)
    seen = {
        "generations": tuple(sorted({generation_of(r) for r in rows})),
        "formats": tuple(sorted({r.weights.lower() for r in rows})),
        "model_families": tuple(sorted({family_of(r) for r in rows})),
    }
    return EngineFit(family, min_version, values, len(rows), loss, slice_of(results).median_ape,
                     residuals_by_regime(results), seen)


def _nelder_mead(rows, family, values, best, path, sim_requests, workers, progress, iters: int = 120):
    """Refine jointly (coordinate steps cannot trade one parameter against another) in
    x = log(value + floor), bounded by CALIBRATED."""
    names = [n for n in values]
    floor = np.array([_FLOOR.get(n, 0.0) for n in names])
    lo = np.array([CALIBRATED[n][0] for n in names])
    hi = np.array([CALIBRATED[n][1] for n in names])

    def to_values(x):
        v = np.clip(np.exp(x) - floor, lo, hi)
        return {n: float(max(0.0, a)) for n, a in zip(names, v, strict=True)}

    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    from vazao.validate.run import predict_rows

    def f(x):
        res = predict_rows(rows, profile_path=path, overrides={family: to_values(x)}, workers=workers,
                           sim_requests=sim_requests, pool=pool)
        return loss_of(res, weights)

    weights = _row_weights(rows)
    x0 = np.log(np.array([values[n] for n in names]) + floor + 1e-12)
    simplex = [x0] + [x0 + np.eye(len(names))[i] * 0.15 for i in range(len(names))]
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
            entry = {"min_version": ".".join(map(str, f.min_version)), **vals}
            e.setdefault("versions", []).append(entry)
            e.setdefault("calibration", {}).setdefault("versions", {})[entry["min_version"]] = f.calibration(source)
    return {"engines": doc}


# ---- bands -------------------------------------------------------------------------------------------
BAND_QUANTILES = ("q10", "q90")  # an 80% band
WIDEN = 1.5  # log-width multiplier where the profile was not fitted on this generation, format or family


def _calibration_at(profile: EngineProfile, version) -> Mapping | None:
    cal = profile.calibration
    if not cal:
        return None
    best = None
    for v, entry in (cal.get("versions") or {}).items():
        key = tuple(int(x) for x in str(v).split("."))
        if version is not None and key <= tuple(version) and (best is None or key > best[0]):
            best = (key, entry)
    if best is not None:
        return best[1]
    if "residuals" in cal:
        return cal
    entries = sorted((tuple(int(x) for x in str(v).split(".")), e) for v, e in (cal.get("versions") or {}).items())
    return entries[-1][1] if entries else None


def band(profile: EngineProfile, regime: str, value: float, *, version=None, generation: str | None = None,
         weight_format: str | None = None, model_family: str | None = None) -> tuple[float, float, str] | None:
    """(low, high, note): the 80% band around `value` from the fit's residual quantiles of this regime
    (all regimes pooled where it has too few rows), widened where the fit never saw this generation,
    format or model family; None for an uncalibrated profile."""
    cal = _calibration_at(profile, version)
    if not cal:
        return None
    res = cal.get("residuals") or {}
    r = res.get(regime) if (res.get(regime) or {}).get("n", 0) >= 10 else res.get("all")
    if not r:
        return None
    lo, hi = r[BAND_QUANTILES[0]], r[BAND_QUANTILES[1]]
    seen = cal.get("fitted_on") or {}
    unseen = [what for what, have in (("generation", generation), ("format", weight_format),
                                      ("model family", model_family))
              if have and have not in (seen.get({"generation": "generations", "format": "formats",
                                                  "model family": "model_families"}[what]) or ())]
    note = ""
    if unseen:
        mid = (lo + hi) / 2
        lo, hi = mid + (lo - mid) * WIDEN, mid + (hi - mid) * WIDEN
        note = "widened: not fitted on this " + ", ".join(unseen)
    return value * math.exp(lo), value * math.exp(hi), note


def calibrate_engine(rows, family: str, *, profile_path: str | None = None, workers: int = 1,
                     progress: Callable[[str], None] | None = None, source: str = "") -> tuple[dict, list[EngineFit]]:
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
        fit = fit_family(sel, family, base_values={p: getattr(start, p) for p in FIT_PARAMS}, profile_path=profile_path,
                         workers=workers, progress=progress, min_version=version,
                         sim_requests=100 if simulated else 150)
        fits.append(fit)
    if len(fits) > 1 or fits[0].min_version is not None:
        newest = fits[-1]
        fits.append(EngineFit(family, None, newest.values, newest.rows, newest.loss, newest.median_ape,
                              newest.residuals, newest.fitted_on))
    return profile_document(fits, source), fits
