"""`vazao validate` over the whole shared file with the shipped (calibrated) profiles: its wall time
on this machine (the target is under 60 s) and the summary it reports."""

from __future__ import annotations

import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-measurements.csv"


def _slim(s) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.to_json().items()}


def run() -> dict:
    from vazao.validate import predict_rows, read_rows, summarize

    t0 = time.perf_counter()
    rows, problems = read_rows(SHARED)
    rep = summarize(predict_rows(rows), problems)
    wall = time.perf_counter() - t0
    return {
        "file": str(SHARED.name), "wall_s": round(wall, 2), "rows": rep.total, "coverage": round(rep.coverage, 4),
        "overall": _slim(rep.overall),
        "by_metric": {k: _slim(v) for k, v in rep.by["metric"].items()},
        "by_engine": {k: _slim(v) for k, v in rep.by["engine"].items()},
        "by_generation": {k: _slim(v) for k, v in rep.by["generation"].items()},
        "skipped": [{"reason": r, "rows": n} for r, n in rep.skip_reasons()],
    }
