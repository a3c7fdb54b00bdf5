"""Which closed-loop TTFT rows of the serving file rule out rounds that stay in step.

A closed loop whose clients all send at once, and get their answers in the same step (every request has the
same lengths), sends its next round at once too. Such a round of c prompts cannot give a mean TTFT below
(c + 1) / 2 × t1, where t1 is one prompt's compute at the GPUs' dense peak for its format (the idealized
profile's compute time: vazao.validate.predict.in_step_floor_ms, which `vazao validate` also reads to put a
caveat on such rows): at that rate the best order finishes the prompts one after another
at t1, 2·t1, … c·t1, and batching them only finishes some later. A row measured below that bound had most of
its rounds out of step, whatever the engine does, unless its prompts were partly served from a cache.

For each engine this reports how many mean-TTFT rows fall below the bound and how the shipped profiles'
predictions (as `vazao validate` makes them) err on them and on the rest: where the simulator keeps rounds in
step that the measurements show were not, it over-predicts. The same errors, grouped by a share known before
the measurement (a round's prompts at the peak against one request's predicted life), say whether that share
could tell the simulator when rounds spread. A diagnostic of the file, not a fit: no prediction reads it.

    python bench/instep_bound.py            (about 40 s on two cores; writes bench/results/instep_bound.json)
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVING = HERE.parent.parent / "shared" / "data" / "published-serving.csv"
OUT = HERE / "results" / "instep_bound.json"


def burst(row) -> tuple[float, float]:
    """(the in-step floor in ms, a round's prompts at the dense peak in ms): vazao.validate.predict's floor is
    (clients + 1) / 2 × t1 for the clients of one replica."""
    from vazao.validate.predict import in_step_floor_ms, row_deployment

    floor = in_step_floor_ms(row)
    if floor is None:
        return math.nan, math.nan
    clients = row.condition.value / row_deployment(row).replicas
    return floor, floor * 2 * clients / (clients + 1)


# A round's prompts at the dense peak (clients × t1) against one request's predicted life (its TTFT plus its
# output × TPOT): a share known before the measurement. Its groups' edges:
SHARE_EDGES = (0.02, 0.05, 0.1, 0.2, 0.4)


def _summary(errors: list[float]) -> dict:
    if not errors:
        return {"rows": 0}
    return {"rows": len(errors), "median_signed": round(statistics.median(errors), 4),
            "median_ape": round(statistics.median(abs(e) for e in errors), 4),
            "past_35pct": sum(abs(e) > 0.35 for e in errors)}


def _edge_order(edge: str) -> int:
    return next((i for i, e in enumerate(SHARE_EDGES) if edge == f"< {e}"), len(SHARE_EDGES))


def main() -> int:
    from vazao.validate.rows import read_rows
    from vazao.validate.run import OUT_OF_STEP, _config_key, predict_rows

    t0 = time.perf_counter()
    rows, _ = read_rows(SERVING)
    # the closed loops' mean TTFT rows with the rest of their configuration (a run's rows share one simulation)
    rows = [r for r in rows if r.condition.kind == "concurrency" and not r.median]
    results = [res for res in predict_rows(rows) if res.signed is not None]
    signed = {res.row.id: res.signed for res in results}
    tpot = {_config_key(res.row): res.predicted for res in results if res.row.metric == "tpot_ms"}
    groups: dict[str, dict[str, list[float]]] = {}
    configs: dict[str, dict[str, int]] = {}
    shares: dict[str, dict[str, list[tuple[bool, float]]]] = {}
    for res in results:
        row = res.row
        if row.metric != "ttft_ms" or res.predicted is None:
            continue
        floor, round_ms = burst(row)
        if math.isnan(floor):  # pipeline stages or attention data parallelism: no such floor
            continue
        below = OUT_OF_STEP in res.caveats  # validate's own reading of the floor
        step = tpot.get(_config_key(row))
        if step is not None:
            share = round_ms / (res.predicted + (row.output_len - 1) * step)
            edge = next((f"< {e}" for e in SHARE_EDGES if share < e), f">= {SHARE_EDGES[-1]}")
            shares.setdefault(row.family, {}).setdefault(edge, []).append((below, signed[row.id]))
        side = "below" if below else "above"
        for key in (row.family, "all"):
            groups.setdefault(key, {"below": [], "above": []})[side].append(signed[row.id])
        name = f"{row.family} {'.'.join(map(str, row.version)) if row.version else '(unstated)'} {row.model} {row.gpu}"
        c = configs.setdefault(name, {"rows": 0, "below": 0})
        c["rows"] += 1
        c["below"] += below
    out = {
        "what": "closed-loop mean TTFT rows measured below (clients + 1) / 2 x one prompt's compute at the dense "
                "peak (no round of them in step could be that fast); the shipped predictions' errors on each side",
        "source": SERVING.name, "predictions": "the shipped profiles, as vazao validate makes them",
        "by_engine": {k: {side: _summary(v[side]) for side in ("below", "above")} for k, v in groups.items()},
        "by_campaign": dict(sorted(configs.items())),
        "by_burst_share": {
            fam: {edge: {"rows": len(v), "below": sum(b for b, _ in v),
                         "median_signed": round(statistics.median(e for _, e in v), 4)}
                  for edge, v in sorted(d.items(), key=lambda kv: _edge_order(kv[0]))}
            for fam, d in sorted(shares.items())},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    for k, v in out["by_engine"].items():
        print(k, json.dumps(v))
    for k, v in out["by_burst_share"].items():
        print(k, json.dumps(v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
