"""Calibrate vLLM, SGLang and TensorRT-LLM on the serving file, half of it kept out, and report both halves.

Every configuration (engine, release, model, format, GPU, layout, lengths, concurrency) of
shared/data/published-serving.csv falls in the fitting half or the held-out half by a hash of its key,
so a configuration's TTFT and TPOT rows stay together. TensorRT-LLM is fitted on its serving half and
its release-1.x half of published-measurements.csv together (the 0.14 and 0.17 entries keep theirs).
Few global parameters per engine family (FAMILY_PARAMS); the bands are the residual quantiles on the
fitting half. `--write` stores the fit in src/vazao/catalog/data/calibration.yaml (the fit of this
session is kept as bench/results/serving_profiles.yaml instead, not shipped: docs/accuracy.md); `--iters 0`
re-scores the profile's current values. Results: bench/results/serving_fit.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zlib
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data"
SERVING = DATA / "published-serving.csv"
MEASUREMENTS = DATA / "published-measurements.csv"
CALIBRATION = HERE.parent / "src" / "vazao" / "catalog" / "data" / "calibration.yaml"
FAMILY_PARAMS = ("memory_efficiency", "compute_efficiency", "step_overhead_s", "per_sequence_overhead_s",
                 "request_overhead_s", "moe_efficiency")
FIT_CONFIGS = 90  # configurations per family in one loss evaluation (the rest of the half is predicted after)
SEED = 7


def config_key(row) -> str:
    from vazao.validate.run import _config_key

    return repr(_config_key(row))


def held_out(row) -> bool:
    return zlib.crc32(config_key(row).encode()) % 2 == 1


def _subsample(rows, n: int):
    by: dict[str, list] = {}
    for r in rows:
        by.setdefault(config_key(r), []).append(r)
    keys = sorted(by)
    random.Random(SEED).shuffle(keys)
    return [r for k in keys[:n] for r in by[k]]


def _figures(results) -> dict:
    from vazao.validate.run import slice_of

    out = {}
    for metric in (None, "ttft_ms", "tpot_ms"):
        sel = [r for r in results if metric is None or r.row.metric == metric]
        if not sel:
            continue
        s = slice_of(sel)
        out[metric or "all"] = {"rows": len(sel), "median_ape": _r(s.median_ape), "p90_ape": _r(s.p90_ape),
                                "median_signed": _r(s.median_signed), "band_coverage": _r(s.band_coverage)}
    return out


def _r(v):
    return None if v is None else round(v, 4)


def fit(family: str, train, *, workers: int, iters: int, configs: int = FIT_CONFIGS, progress=print) -> dict:
    """The fitted values (iters 0: the profile's current values, as a re-scoring of a stored fit)."""
    from vazao.calibrate import fit_family
    from vazao.physics.profiles import get_engine

    start = get_engine(family)
    params = [p for p in FAMILY_PARAMS if p != "moe_efficiency" or any(_moe(r) for r in train)]
    values = {p: getattr(start, p) for p in params}
    if iters <= 0:
        return values
    return dict(fit_family(_subsample(train, configs), family, base_values=values, params=tuple(params),
                           workers=workers, sim_requests=500, steps=(), joint_iters=iters,
                           progress=lambda m: progress(f"[fit] {m}")).values)


def _moe(r) -> bool:
    from vazao.catalog.models import get_model
    from vazao.errors import VazaoError

    try:
        return get_model(r.model).is_moe
    except VazaoError:
        return False


def _with(family: str, values, residual_rows, *, path: Path, workers: int):
    """A profile file with `values` for `family` and the residuals of `residual_rows` as its bands."""
    from vazao.calibrate import residuals_by_regime
    from vazao.validate import predict_rows

    doc = yaml.safe_load(CALIBRATION.read_text())
    entry = doc["engines"].setdefault(family, {})
    entry.update({k: float(v) for k, v in values.items()})
    for v in entry.get("versions") or ():
        if str(v.get("min_version")) == "1.0":
            v.update({k: float(x) for k, x in values.items()})
    old = entry.pop("calibration", None) or {}
    _RELEASES[family] = old.get("versions")  # the releases fitted on other rows keep their own residuals
    path.write_text(yaml.safe_dump(_as_profiles(doc, family), sort_keys=False))
    fitted = predict_rows(residual_rows, profile_path=str(path), workers=workers)
    return doc, entry, fitted, residuals_by_regime(fitted)


_RELEASES: dict = {}


def _as_profiles(doc, family: str):
    """The one family's entry as a profile file (load_profiles reads it over the shipped catalog)."""
    return {"engines": {family: doc["engines"][family]}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="sglang,vllm,trtllm")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--configs", type=int, default=FIT_CONFIGS)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    from vazao.validate import predict_rows, read_rows

    serving, _ = read_rows(SERVING)
    measured, _ = read_rows(MEASUREMENTS)
    report = {"split": "crc32 of the configuration key, odd = held out", "fit_configs": FIT_CONFIGS,
              "params": list(FAMILY_PARAMS), "families": {}}
    tmp = HERE / "results" / ".serving_fit_profiles.yaml"
    for family in args.families.split(","):
        t0 = time.perf_counter()
        rows = [r for r in serving if r.family == family]
        if family == "trtllm":
            rows += [r for r in measured if r.family == family and r.version and r.version[0] >= 1]
        train = [r for r in rows if not held_out(r)]
        test = [r for r in rows if held_out(r)]
        values = fit(family, train, workers=args.workers, iters=args.iters, configs=args.configs)
        doc, entry, fitted, residuals = _with(family, values, train, path=tmp, workers=args.workers)
        from vazao.calibrate import EngineFit, _row_weights, loss_of
        from vazao.validate.run import family_of, format_of, generation_of, slice_of

        seen = {"generations": tuple(sorted({generation_of(r) for r in train})),
                "formats": tuple(sorted({format_of(r) for r in train})),
                "model_families": tuple(sorted({family_of(r) for r in train}))}
        final = EngineFit(family, None, values, len(train), loss_of(fitted, _row_weights(train)),
                          slice_of(fitted).median_ape, residuals, seen)
        releases = _RELEASES.get(family)
        entry["calibration"] = final.calibration(f"{SERVING.name} (and {MEASUREMENTS.name} for trtllm 1.x): "
                                                 "the fitting half, bench/serving_fit.py")
        if releases:  # release 1.x is this fit's: its residuals are the ones just measured
            releases = {k: (entry["calibration"] if str(k).startswith("1.") else v) for k, v in releases.items()}
            entry["calibration"]["versions"] = {k: {kk: vv for kk, vv in v.items() if kk != "versions"}
                                                for k, v in releases.items()}
        tmp.write_text(yaml.safe_dump(_as_profiles(doc, family), sort_keys=False))
        held = predict_rows(test, profile_path=str(tmp), workers=args.workers)
        fitted = predict_rows(train, profile_path=str(tmp), workers=args.workers)
        report["families"][family] = {"values": {k: round(v, 9) for k, v in values.items()},
                                      "fitting_half": _figures(fitted), "held_out": _figures(held),
                                      "seconds": round(time.perf_counter() - t0, 1)}
        print(json.dumps({family: report["families"][family]}, indent=1), flush=True)
        if args.write:
            CALIBRATION.write_text(CALIBRATION.read_text().split("engines:", 1)[0] + yaml.safe_dump(
                {"engines": doc["engines"]}, sort_keys=False, width=120))
    tmp.unlink(missing_ok=True)
    out = HERE / "results" / "serving_fit.json"
    if out.exists():  # families fitted in separate runs keep each other's figures
        old = json.loads(out.read_text()).get("families", {})
        report["families"] = {**old, **report["families"]}
    out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
