"""Issue 2: every catalog model × accelerator × format × tp ∈ {1, 2, 4, 8} through fit and
step_cost (decode at batch 1 and 32, one prefill). Goal: the whole sweep under 2 s on 2 cores."""

from __future__ import annotations

import time

from vazao.catalog.formats import formats, get_kv_format, support
from vazao.catalog.hardware import accelerators
from vazao.catalog.models import models
from vazao.physics.deployment import Deployment
from vazao.physics.memory import fit
from vazao.physics.profiles import get_engine
from vazao.physics.step import BatchShape, step_cost

TPS = (1, 2, 4, 8)


def sweep() -> dict:
    engine = get_engine("vllm")
    kv = get_kv_format("fp16")
    decode1, decode32, prefill = BatchShape.decode(1, 1024), BatchShape.decode(32, 1024), BatchShape.prefill(1, 1024)
    combos = fitting = skipped = 0
    for m in models().values():
        for acc in accelerators().values():
            for f in formats().values():
                s = support(f, acc, None)
                if s.status == "unsupported":
                    skipped += len(TPS)
                    continue
                for tp in TPS:
                    if tp > 1 and m.num_heads % tp:
                        skipped += 1
                        continue
                    dep = Deployment(model=m, weight_format=f, kv_format=kv, accelerator=acc, engine=engine,
                                     count=tp, tp=tp, support_info=s)
                    fi = fit(dep, 2048)
                    step_cost(dep, decode1)
                    step_cost(dep, decode32)
                    step_cost(dep, prefill)
                    combos += 1
                    fitting += fi.fits
    return {"combinations": combos, "fitting": fitting, "skipped": skipped}


def run() -> dict:
    models(), accelerators(), formats()  # catalogs parsed once, outside the timed sweep
    t0 = time.perf_counter()
    counts = sweep()
    wall = time.perf_counter() - t0
    return {**counts, "wall_s": round(wall, 3), "per_combination_us": round(wall / counts["combinations"] * 1e6, 1),
            "goal_s": 2.0, "meets_goal": wall < 2.0}
