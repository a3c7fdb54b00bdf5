"""Issue 2: every catalog model × accelerator × format × tp ∈ {1, 2, 4, 8} through fit and the cost
model (decode at batch 1 and 32, one 1,024-token prefill). Goal: the whole sweep under 2 s on 2 cores.

Two runs of the same cost model: `physics.grid.sweep` (model side once per shard, arrays over GPUs)
and, for a sample, the per-deployment path (`step_cost`, `fit`) to report the speed-up and check
that both give the same numbers."""

from __future__ import annotations

import time

import numpy as np

from vazao.catalog.formats import formats, get_kv_format
from vazao.catalog.hardware import accelerators
from vazao.catalog.models import models
from vazao.physics.deployment import Deployment
from vazao.physics.grid import sweep
from vazao.physics.memory import fit
from vazao.physics.profiles import get_engine
from vazao.physics.step import BatchShape, step_cost

TPS = (1, 2, 4, 8)
SHAPES = (BatchShape.decode(1, 1024), BatchShape.decode(32, 1024), BatchShape.prefill(1, 1024))


def run() -> dict:
    ms, accs, fmts = list(models().values()), list(accelerators().values()), list(formats().values())
    engine, kv = get_engine("vllm"), get_kv_format("fp16")
    t0 = time.perf_counter()
    cells = sweep(ms, accs, fmts, TPS, engine, kv, SHAPES, context=2048)
    grid_s = time.perf_counter() - t0
    combos = int(sum(c.runs.sum() for c in cells))
    fitting = int(sum(c.fits.sum() for c in cells))

    # The per-deployment path on the first 2,000 cells' first accelerator-run, timed and compared.
    sample = [(c, i) for c in cells for i in np.flatnonzero(c.runs)][:2000]
    by_name = {m.name: m for m in ms}
    fmt_by = {f.name: f for f in fmts}
    t1 = time.perf_counter()
    worst = 0.0
    for c, i in sample:
        dep = Deployment(model=by_name[c.model], weight_format=fmt_by[c.format], kv_format=kv, accelerator=accs[i],
                         engine=engine, count=c.tp, tp=c.tp)
        fit(dep, 2048)
        for k, sh in enumerate(SHAPES):
            t = step_cost(dep, sh).time_s
            worst = max(worst, abs(t - c.step_time_s[k, i]) / t)
    scalar_s = time.perf_counter() - t1
    per_combo_scalar = scalar_s / len(sample)
    return {
        "combinations": combos, "fitting": fitting, "wall_s": round(grid_s, 3),
        "per_combination_us": round(grid_s / combos * 1e6, 2),
        "scalar_path_per_combination_us": round(per_combo_scalar * 1e6, 1),
        "scalar_path_projected_s": round(per_combo_scalar * combos, 2),
        "grid_vs_scalar_max_rel_diff": worst,
        "goal_s": 2.0, "meets_goal": grid_s < 2.0,
    }
