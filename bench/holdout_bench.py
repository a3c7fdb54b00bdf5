"""Held-out accuracy: fit on part of the shared file, predict the rest, report both.

Every fit starts from bench/first_guess_profiles.yaml (the profiles before any calibration), so
nothing fitted on a held-out row reaches its prediction. Splits:
- TensorRT-LLM, leave one release out (0.14, 0.17, 1.0): the held-out release is one the profile
  has no entry for, so it gets the nearest release's values, as an unseen version would;
- llama.cpp, two folds by GPU generation ({ampere, hopper} vs {ada, apple-m}): the bands are widened
  where the fit never saw the generation;
- llama.cpp, half of the GPUs held out (each GPU drawn into one half by a hash of its name, two draws, both
  halves of each): a GPU the fit never saw, from generations it did. Pooled on its own (its rows are the
  same rows as the generation folds').
Reported per fold: rows, median and p90 absolute error, median signed error, share of measured
values inside the 80% band; and the in-sample figures of the same fit for comparison."""

from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "data" / "published-measurements.csv"
FIRST_GUESS = HERE / "first_guess_profiles.yaml"


def _figures(results) -> dict:
    from vazao.validate.run import slice_of

    s = slice_of(results)
    done = sum(r.predicted is not None for r in results)
    return {"rows": len(results), "predicted": done, "median_ape": _r(s.median_ape), "p90_ape": _r(s.p90_ape),
            "median_signed": _r(s.median_signed), "band_coverage": _r(s.band_coverage)}


def _r(v):
    return None if v is None else round(v, 4)


def _fold(name: str, family: str, train, test, workers: int) -> dict:
    from vazao.calibrate import calibrate_engine
    from vazao.validate import predict_rows

    doc, _ = calibrate_engine(train, family, profile_path=str(FIRST_GUESS), workers=workers)
    base = yaml.safe_load(FIRST_GUESS.read_text())
    base["engines"][family] = {**base["engines"][family], **doc["engines"][family]}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(base, f, sort_keys=False)
        path = f.name
    try:
        held = predict_rows(test, profile_path=path, workers=workers)
        fitted = predict_rows(train, profile_path=path, workers=workers)
    finally:
        os.unlink(path)
    print(f"[holdout] {name}: held out {_figures(held)}", flush=True)
    return {"fold": name, "held_out": _figures(held), "in_sample": _figures(fitted), "_held": held}


def run() -> dict:
    from vazao.validate import read_rows
    from vazao.validate.run import generation_of

    workers = os.cpu_count() or 1
    rows, _ = read_rows(SHARED)
    trt = [r for r in rows if r.family == "trtllm"]
    folds = []
    for version in sorted({r.version[:2] for r in trt}):
        folds.append(_fold(f"trtllm without {'.'.join(map(str, version))}", "trtllm",
                           [r for r in trt if r.version[:2] != version], [r for r in trt if r.version[:2] == version],
                           workers))
    lcpp = [r for r in rows if r.family == "llama.cpp"]
    for held in (("ampere", "hopper"), ("ada", "apple-m")):
        folds.append(_fold(f"llama.cpp without {'+'.join(held)}", "llama.cpp",
                           [r for r in lcpp if generation_of(r) not in held],
                           [r for r in lcpp if generation_of(r) in held], workers))
    every = [r for f in folds for r in f.pop("_held")]
    halves = []
    for draw in (1, 2):
        for half in (0, 1):
            def held(r, draw=draw, half=half) -> bool:
                return zlib.crc32(f"{draw}{r.gpu}".encode()) % 2 == half
            halves.append(_fold(f"llama.cpp without GPU half {half} of draw {draw}", "llama.cpp",
                                [r for r in lcpp if not held(r)], [r for r in lcpp if held(r)], workers))
    gpu_rows = [r for f in halves for r in f.pop("_held")]
    return {"folds": folds, "note": "held_out: rows the fit never saw; in_sample: the rows it was fitted on; "
                                    "pooled: every held-out row of every fold",
            "held_out_rows": len(every), "pooled": _figures(every),
            "llama_cpp_gpu_halves": {"folds": halves, "pooled": _figures(gpu_rows)}}
