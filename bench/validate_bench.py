"""`vazao validate` over both shared files with the shipped (calibrated) profiles: the wall time of
each and of both on this machine (the target is under 60 s together), the summary each reports, and
for the serving file the table by engine × metric × GPU generation that docs/accuracy.md shows."""

from __future__ import annotations

import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FILES = ("published-measurements.csv", "published-serving.csv")


def _slim(s) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.to_json().items()}


def _table(results) -> list[dict]:
    from vazao.validate.run import generation_of, slice_of

    groups: dict[tuple, list] = {}
    for r in results:
        if r.predicted is None:
            continue
        for key in ((r.row.family, r.row.metric, "all"), (r.row.family, r.row.metric, generation_of(r.row))):
            groups.setdefault(key, []).append(r)
    out = []
    for (engine, metric, gen), sel in sorted(groups.items()):
        s = slice_of(sel)
        out.append({"engine": engine, "metric": metric, "generation": gen, "rows": len(sel),
                    "median_ape": round(s.median_ape, 4), "p90_ape": round(s.p90_ape, 4),
                    "median_signed": round(s.median_signed, 4),
                    "band_coverage": None if s.band_coverage is None else round(s.band_coverage, 4)})
    return out


def _one(name: str) -> dict:
    from vazao.validate import predict_rows, read_rows, validation_report

    t0 = time.perf_counter()
    rows, problems = read_rows(DATA / name)
    results = predict_rows(rows)
    rep = validation_report(results, problems)
    wall = time.perf_counter() - t0
    return {
        "file": name, "wall_s": round(wall, 2), "rows": rep.total, "coverage": round(rep.coverage, 4),
        "overall": _slim(rep.overall),
        "by_metric": {k: _slim(v) for k, v in rep.by["metric"].items()},
        "by_engine": {k: _slim(v) for k, v in rep.by["engine"].items()},
        "by_generation": {k: _slim(v) for k, v in rep.by["generation"].items()},
        "engine_metric_generation": _table(results),
        "skipped": [{"reason": r, "rows": n} for r, n in rep.skip_reasons()],
    }


def run() -> dict:
    files = [_one(name) for name in FILES]
    return {"wall_s": round(sum(f["wall_s"] for f in files), 2), "target_s": 60, "files": files}
