"""Calibrate vLLM, SGLang and TensorRT-LLM on the serving file, half of it kept out, and report both halves.

Every configuration (engine, release, model, format, GPU, layout, lengths, concurrency) of
shared/data/published-serving.csv falls in the fitting half or the held-out half by a hash of its key,
so a configuration's TTFT and TPOT rows stay together. TensorRT-LLM is fitted on its serving half and
its release-1.x half of published-measurements.csv together (the 0.14 and 0.17 entries keep theirs).
Few global parameters per engine family (FAMILY_PARAMS, or `--params`), kept within what the lent H200
measured (BOUNDS, on the rate achieved: bounds_for); the bands are the residual quantiles on the fitting
half. `--write` stores the fit in
src/vazao/catalog/data/calibration.yaml (the shipped values were written so: docs/accuracy.md gives the
commands); `--iters 0` re-scores the profile's current values; `--values FILE` takes each family's values
from a serving_fit.json instead of fitting. Results: bench/results/serving_fit.json. `--split gpu` and
`--split model-family` leave each GPU (H100 ↔ H200) or model family out of the fit in turn and predict it:
how far the fit extrapolates and whether its bands, widened for what the fit never saw, hold there
(bench/results/serving_fit_gpu.json, serving_fit_model-family.json). `--release 1.0` fits one release's
`versions` entry on that release's rows alone; `--release base` fits the base values on the rows of every
release without an entry of its own and of none stated (TensorRT-LLM's 1.1–1.3 and unstated rows: its
shipped base), leaving each entry with the values it ran with.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
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
FAMILY_PARAMS = ("memory_efficiency", "compute_efficiency", "attention_efficiency", "step_overhead_s",
                 "per_sequence_overhead_s", "request_overhead_s", "allreduce_latency_s", "moe_efficiency",
                 "moe_memory_efficiency", "moe_width_ramp_cols", "moe_layer_overhead_s")
# fitted only where the rows hold a MoE model. moe_layer_overhead_s is shipped for TensorRT-LLM's base (53 µs) and
# 1.1 (11 µs): on 2026-12-07 vLLM's base fit left it at 0 (its entries state the 0) and SGLang's (15 µs) held out no
# better, so SGLang's entries do not carry it; a later --write of those entries adds it (a --write copies into every
# release entry the values it ran with), and its held-out figure is what decides whether to keep it
MOE_PARAMS = ("moe_efficiency", "moe_memory_efficiency", "moe_width_ramp_cols", "moe_layer_overhead_s")
STEPS = (1.5,)  # one coordinate pass (a new parameter starts at its default) before the joint refinement
# No kernel reaches the datasheet: the lent H200 measured 750 and 803 TFLOP/s on an 8192³ bf16 product against the
# catalog's 989, and copied 4.22 and 4.17 TB/s against its 4.80 (bench/results/gpu/h200_llama_torch_run1.json,
# _run2.json: `ceilings`). Unbounded, the serving fit pushed vLLM's compute efficiency and SGLang's memory
# efficiency to 1.0 to pay for what the simulator misses in other ways (docs/accuracy.md), which would make
# every prefill, or every decode, too fast wherever the fit did not look.
BOUNDS = {"compute_efficiency": (0.02, 0.81), "memory_efficiency": (0.05, 0.88)}
BOUND_GPU = "h200-sxm"  # the GPU whose GEMMs and copies set BOUNDS
FIT_CONFIGS = 90  # configurations per family in one loss evaluation (the rest of the half is predicted after)
SEED = 7


def bounds_for(start) -> dict[str, tuple[float, float]]:
    """BOUNDS as achieved rates on BOUND_GPU. A profile with a stream (or compute) ceiling reaches
    1 / (1 / eff + peak / ceiling) of the peak (physics/step.py), less than `eff`: bounding `eff` itself at
    0.88 held TensorRT-LLM's achieved copy rate on the H200 at 0.70 of its 4.80 TB/s, where the lent H200
    copied at 0.88. The bound is the efficiency whose achieved rate on the H200 is the measured one (bf16 GEMMs
    for compute), within the profile's own limits (physics/profiles.py CALIBRATED)."""
    from vazao.catalog.local import resolve_accelerator
    from vazao.physics.profiles import CALIBRATED

    acc = resolve_accelerator(BOUND_GPU)
    out = dict(BOUNDS)
    for name, ceiling, peak in (
            ("memory_efficiency", start.stream_ceiling_bytes_per_s, acc.memory_bandwidth_bytes_per_s),
            ("compute_efficiency", start.compute_ceiling_flops, acc.peak_16bit[1])):
        lo, hi = BOUNDS[name]
        if ceiling:  # a ceiling below the measured rate: no efficiency reaches it, the profile's limit holds
            hi = 1.0 / (1.0 / hi - peak / ceiling) if 1.0 / hi > peak / ceiling else float("inf")
        out[name] = (lo, min(hi, CALIBRATED[name][1]))
    return out


def config_key(row) -> str:
    from vazao.validate.run import _config_key

    return repr(_config_key(row))


def held_out(row) -> bool:
    return zlib.crc32(config_key(row).encode()) % 2 == 1


# A closed loop's TTFT does not depend on how long its answers are: a new request meets the same prompts and
# running decodes whatever the output length, so over rows that differ only in it the TTFT added per second of
# added request time (output tokens x TPOT), times the clients, is about 0 (median 0.00 in every campaign of the
# serving file but one). A campaign where it is near 1 has every new request wait about one completion interval
# (request time / clients) that no engine schedules (TensorRT-LLM 1.0.0rc3's Llama-3.1-8B file: 0.84-0.93 at 8-32
# clients, docs/accuracy.md): its TTFT rows measure the harness, and a fit that takes them bends the engine's
# prompt-step costs to it. They stay in every prediction and figure of the held-out half; the fits and floor
# scans leave them out. Decided from the fitting rows alone. A queue for KV memory is another matter: requests
# that wait for others to end and free their cache wait longer the longer those answers are, by far more than
# one completion interval (SGLang 0.5.8's Qwen3-32B on one H100: 51; 0.5.6's Llama-3.1-8B at 512 clients: 20),
# and that is the engine's, so only a slope near one interval is screened.
SCREEN_SLOPE = (0.5, 2.0)


def ttft_slopes(rows) -> dict[tuple, float]:
    """{(family, release, model, GPU): the median over its groups of rows that differ only in the output length
    of (TTFT at the longest - at the shortest) x clients / (request time at the longest - at the shortest)},
    request time = output tokens x TPOT, both measured; fixed-concurrency rows with both metrics only."""
    groups: dict[tuple, dict[int, dict[str, float]]] = {}
    for r in rows:
        if r.condition.kind != "concurrency" or r.metric not in ("ttft_ms", "tpot_ms") or not r.output_len:
            continue
        key = (r.family, r.version or (), r.model, r.gpu, r.tp, r.pp, r.moe_tp, r.moe_ep, r.attention_dp, r.weights,
               r.kv, r.input_len, r.condition.value)
        groups.setdefault(key, {}).setdefault(r.output_len, {})[r.metric] = r.value
    by: dict[tuple, list[float]] = {}
    for key, outs in groups.items():
        both = sorted(o for o, m in outs.items() if len(m) == 2)
        if len(both) < 2:
            continue
        lo, hi = outs[both[0]], outs[both[-1]]
        added = both[-1] * hi["tpot_ms"] - both[0] * lo["tpot_ms"]
        if added > 0:
            by.setdefault(key[:4], []).append((hi["ttft_ms"] - lo["ttft_ms"]) * float(key[-1]) / added)
    return {k: statistics.median(v) for k, v in by.items()}


def screened(rows) -> list:
    """`rows` less the TTFT rows of the campaigns whose TTFT grows with the output length by about one
    completion interval (SCREEN_SLOPE)."""
    lo, hi = SCREEN_SLOPE
    bad = {k for k, s in ttft_slopes(rows).items() if lo < s < hi}
    return [r for r in rows if not (r.metric == "ttft_ms" and (r.family, r.version or (), r.model, r.gpu) in bad)]


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


def fit(family: str, train, *, workers: int, iters: int, configs: int = FIT_CONFIGS, progress=print,
        stored: dict | None = None, only: tuple[str, ...] = ()) -> dict:
    """The fitted values (iters 0: the profile's current values, as a re-scoring of a stored fit; `stored`:
    the values a serving_fit.json holds for this family, written again without refitting)."""
    from vazao.calibrate import fit_family
    from vazao.physics.profiles import get_engine

    if stored is not None:
        return dict(stored)
    start = get_engine(family)
    if RELEASE.get(family):  # a release's own entry: start from the values that release runs with
        start = start.at_version(RELEASE[family])
    params = [p for p in (only or FAMILY_PARAMS) if p not in MOE_PARAMS or any(_moe(r) for r in train)]
    values = {p: getattr(start, p) for p in params}
    if iters <= 0:
        return values
    bounds = bounds_for(start)
    values = {p: min(max(v, bounds[p][0]), bounds[p][1]) if p in bounds else v for p, v in values.items()}
    return dict(fit_family(_subsample(train, configs), family, base_values=values, params=tuple(params),
                           workers=workers, sim_requests=500, steps=STEPS, joint_iters=iters, bounds=bounds,
                           progress=lambda m: progress(f"[fit] {m}")).values)


def _moe(r) -> bool:
    from vazao.catalog.models import get_model
    from vazao.errors import VazaoError

    try:
        return get_model(r.model).is_moe
    except VazaoError:
        return False


def _write_values(entry, family: str, values, release, rows) -> None:
    """Put fitted `values` into a family's calibration.yaml `entry`: a release's own `versions` entry
    (release (1, 0)), the base with every entry keeping what it ran with (release ()), or (None) the base and
    every entry whose release the fitted `rows` hold: one set of values for all of them, as the fit ran them
    (EngineProfile.overridden), so that a leave-one-out fold never predicts with an entry fitted on the rows
    it left out."""
    from vazao.bands import of_release, release_key
    from vazao.physics.profiles import get_engine

    values = {k: float(v) for k, v in values.items()}
    if release:  # one release's entry: its values change, the base and the other releases keep theirs
        _release_entry(entry, release).update(values)
        return
    if release == ():  # the base: an entry that inherited a value from it keeps the value it ran with
        base = get_engine(family)
        for v in entry.get("versions") or ():
            v.update({k: v.get(k, entry.get(k, getattr(base, k))) for k in values})
        entry.update(values)
        return
    entry.update(values)
    for v in entry.get("versions") or ():
        if any(of_release(r.version, release_key(v.get("min_version"))) for r in rows):
            v.update(values)


def _with(family: str, values, residual_rows, *, path: Path, workers: int):
    """A profile file with `values` for `family` and the residuals of `residual_rows` as its bands."""
    from vazao.calibrate import residuals_by_regime
    from vazao.validate import predict_rows

    doc = yaml.safe_load(CALIBRATION.read_text())
    entry = doc["engines"].setdefault(family, {})
    _write_values(entry, family, values, RELEASE.get(family), residual_rows)
    old = entry.pop("calibration", None) or {}
    _OLD_CALIBRATION[family] = old
    _RELEASES[family] = old.get("versions")  # the releases fitted on other rows keep their own residuals
    path.write_text(yaml.safe_dump(_as_profiles(doc, family), sort_keys=False))
    fitted = predict_rows(residual_rows, profile_path=str(path), workers=workers)
    return doc, entry, fitted, residuals_by_regime(fitted)


_RELEASES: dict = {}
_OLD_CALIBRATION: dict = {}
# --release: per family, the release whose own `versions` entry the fit writes (a tuple such as (1, 0)),
# () for the base values that every release without an entry runs with; absent: one set of values for every
# release the rows hold
RELEASE: dict = {}


def _release_entry(entry, release: tuple[int, ...]):
    """The `versions` entry of calibration.yaml whose min_version is `release`."""
    from vazao.bands import release_key

    for v in entry.get("versions") or ():
        if release_key(v.get("min_version")) == release:
            return v
    raise SystemExit(f"no versions entry with min_version {'.'.join(map(str, release))}")


def _in_release(row, release: tuple[int, ...] | None, releases) -> bool:
    """Whether a row runs with `release`'s values: its own entry's rows, or (release ()) those of no entry."""
    from vazao.bands import of_release

    if release is None:
        return True
    if release == ():
        return not any(of_release(row.version, k) for k in releases)
    return of_release(row.version, release)


def _as_profiles(doc, family: str):
    """The one family's entry as a profile file (load_profiles reads it over the shipped catalog)."""
    return {"engines": {family: doc["engines"][family]}}


def _gpu_of(row) -> str:
    from vazao.catalog.local import resolve_accelerator
    from vazao.errors import VazaoError

    try:
        return resolve_accelerator(row.gpu).name
    except VazaoError:
        return row.gpu


def folds(split: str, rows, serving_ids):
    """(label, fitting rows, held-out rows) for a split: `half` (the configuration hash), `gpu` (each GPU of
    the serving rows left out in turn: fit on the others, predict it), `model-family` (likewise by model
    family). Only serving rows are ever held out; TensorRT-LLM's measurement rows stay in every fit."""
    from vazao.validate.run import family_of

    if split == "half":
        yield "half", screened([r for r in rows if not held_out(r)]), [r for r in rows if held_out(r)]
        return
    key = _gpu_of if split == "gpu" else family_of
    for value in sorted({key(r) for r in rows if id(r) in serving_ids}):
        test = [r for r in rows if id(r) in serving_ids and key(r) == value]
        train = screened([r for r in rows if key(r) != value])
        if train and test:
            yield f"{split}={value}", train, test


def run_fold(family: str, train, test, args):
    """Fit on `train`, write the profile with its bands (residuals of `train`, widened for what `train`
    never saw), predict both; (doc, report entry)."""
    from vazao.calibrate import EngineFit, _row_weights, loss_of, seen_of
    from vazao.validate import predict_rows
    from vazao.validate.run import slice_of

    t0 = time.perf_counter()
    tmp = HERE / "results" / ".serving_fit_profiles.yaml"
    stored = None
    made = {"fit_configs": args.configs, "iters": args.iters}
    if args.values:  # the stored fit's values, and how they were fitted (not this run's defaults)
        source = json.loads(Path(args.values).read_text())["families"][family]
        stored = source["values"]
        made = {k: source.get(k, v) for k, v in made.items()}
    only = tuple(p for p in (args.params or "").split(",") if p)
    fit_rows = train
    if args.without_metric:  # a stage of a staged fit: these parameters see only the other metrics' rows
        drop = set(args.without_metric.split(","))
        fit_rows = [r for r in train if r.metric not in drop]
    values = fit(family, fit_rows, workers=args.workers, iters=args.iters, configs=args.configs, stored=stored,
                 only=only)
    doc, entry, fitted, residuals = _with(family, values, train, path=tmp, workers=args.workers)
    final = EngineFit(family, None, values, len(train), loss_of(fitted, _row_weights(train)),
                      slice_of(fitted).median_ape, residuals, seen_of(train))
    releases = _RELEASES.get(family)
    release = RELEASE.get(family)
    with_measured = family == "trtllm" and release != ()  # main(): TensorRT-LLM 1.x rows of that file
    files = f"{SERVING.name} (and {MEASUREMENTS.name} for trtllm 1.x)" if with_measured else SERVING.name
    which = "" if release is None else (
        ", the rows of the releases without an entry of their own or of none stated (--release base)"
        if release == () else f", the rows of release {'.'.join(map(str, release))} (--release)")
    entry["calibration"] = final.calibration(f"{files}: the fitting half{which}, bench/serving_fit.py")
    if release:  # one release's entry was fitted: the base keeps its calibration, that release gets this one
        key = ".".join(map(str, release))
        releases = {**(releases or {}), key: copy.deepcopy(entry["calibration"])}
        entry["calibration"] = copy.deepcopy(_OLD_CALIBRATION[family])
        entry["calibration"].pop("versions", None)
    elif release == ():  # the base: the releases it was fitted on (the bands of those rows are not widened)
        entry["calibration"]["releases"] = sorted({".".join(map(str, r.version[:2])) for r in train if r.version})
    elif releases:  # every release the rows hold is this fit's: its residuals are the ones just measured (a
        # copy: one shared dict would be written as a YAML anchor and alias, one edit changing both)
        from vazao.bands import of_release, release_key

        releases = {k: (copy.deepcopy(entry["calibration"]) if any(
            of_release(r.version, release_key(k)) for r in train) else v) for k, v in releases.items()}
    if releases:
        entry["calibration"]["versions"] = {k: {kk: vv for kk, vv in v.items() if kk != "versions"}
                                            for k, v in releases.items()}
    tmp.write_text(yaml.safe_dump(_as_profiles(doc, family), sort_keys=False))
    held = predict_rows(test, profile_path=str(tmp), workers=args.workers)
    fitted = predict_rows(train, profile_path=str(tmp), workers=args.workers)
    tmp.unlink(missing_ok=True)
    return doc, {"values": {k: round(v, 9) for k, v in values.items()}, "fitting_half": _figures(fitted),
                 "held_out": _figures(held), **made,
                 "seconds": round(time.perf_counter() - t0, 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="sglang,vllm,trtllm")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--configs", type=int, default=FIT_CONFIGS)
    ap.add_argument("--split", choices=("half", "gpu", "model-family"), default="half",
                    help="what is held out: half of the configurations (the shipped fit), or each GPU / "
                         "model family in turn (how far the fit extrapolates, and whether its bands hold)")
    ap.add_argument("--write", action="store_true", help="store the fit (--split half only)")
    ap.add_argument("--params", help="fit only these (comma-separated, of FAMILY_PARAMS); the others keep the "
                                     "profile's values")
    ap.add_argument("--without-metric", help="fit on the fitting half less these metrics' rows (e.g. ttft_ms: "
                                             "the step-cost parameters from what times steps, not queues)")
    ap.add_argument("--values", help="a serving_fit.json: take each family's values from it instead of fitting "
                                     "(write a stored fit again, or score it)")
    ap.add_argument("--release", help="fit one release's own values (e.g. 1.0: the rows of 1.0.x, written to its "
                                      "`versions` entry), or `base` (the rows of every release without an entry, "
                                      "and of no stated release: the values those run with)")
    args = ap.parse_args()
    if args.release and args.release != "base" and not all(x.isdigit() for x in args.release.split(".")):
        ap.error(f"--release {args.release[:40]!r}: a release such as 1.0 or 0.5.6, or base")
    if args.write and args.split != "half":
        ap.error("--write stores the fit of --split half only")
    from vazao.validate import read_rows

    serving, _ = read_rows(SERVING)
    measured, _ = read_rows(MEASUREMENTS)
    split_name = {"half": "crc32 of the configuration key, odd = held out",
                  "gpu": "leave one GPU out", "model-family": "leave one model family out"}[args.split]
    report = {"split": split_name, "fit_configs": args.configs, "iters": args.iters,
              "params": list(FAMILY_PARAMS), "families": {}}
    every_serving_id = {id(r) for r in serving}
    for family in args.families.split(","):
        rows = [r for r in serving if r.family == family]
        if family == "trtllm":
            rows += [r for r in measured if r.family == family and r.version and r.version[0] >= 1]
        if args.release:
            from vazao.bands import release_key
            from vazao.physics.profiles import get_engine

            RELEASE[family] = () if args.release == "base" else release_key(args.release)
            entries = [tuple(v["min_version"]) for v in get_engine(family).versions]
            rows = [r for r in rows if _in_release(r, RELEASE[family], entries)]
        serving_ids = {id(r) for r in rows} & every_serving_id
        for label, train, test in folds(args.split, rows, serving_ids):
            doc, entry = run_fold(family, train, test, args)
            name = family if args.split == "half" else f"{family} {label}"
            if args.release:
                name += f" release {args.release}"
            report["families"][name] = entry
            print(json.dumps({name: entry}, indent=1), flush=True)
            if args.write:
                CALIBRATION.write_text(CALIBRATION.read_text().split("engines:", 1)[0] + yaml.safe_dump(
                    {"engines": doc["engines"]}, sort_keys=False, width=120))
    out = HERE / "results" / ("serving_fit.json" if args.split == "half" else f"serving_fit_{args.split}.json")
    if out.exists():  # families fitted in separate runs keep each other's figures
        old = json.loads(out.read_text()).get("families", {})
        report["families"] = {**old, **report["families"]}
    out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
