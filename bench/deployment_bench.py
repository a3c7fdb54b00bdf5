"""Deployment's derived values (issue 11 point 4): the cost of reading `consts`, `support` and
`weights_bytes` once filled, and of a new deployment's first use of all three. They were kept in
the frozen instance's __dict__ by hand; now they are declared fields filled with object.__setattr__."""

from __future__ import annotations

import timeit
from dataclasses import replace

# before the change (the same loop, 2026-12-04 00:30 UTC, this 2-core machine): support and
# weights_bytes built a lambda on every read
BEFORE = {"consts_ns": 84.3, "support_ns": 318.5, "weights_bytes_ns": 959.7, "new_and_first_use_us": 16.98}


def run() -> dict:
    from vazao.physics.deployment import make_deployment

    d = make_deployment("llama-3.1-8b", "h100-sxm")
    d.consts  # noqa: B018 (filled once, as on a simulator's first step)
    reads, n = {}, 200_000
    for name in ("consts", "support", "weights_bytes"):
        best = min(timeit.repeat(f"d.{name}", globals={"d": d}, number=n, repeat=5))
        reads[f"{name}_ns"] = round(best / n * 1e9, 1)

    def fresh() -> None:
        e = replace(d, count=2, tp=2)
        e.consts, e.support, e.weights_bytes  # noqa: B018

    m = 5_000
    first = min(timeit.repeat(fresh, number=m, repeat=5)) / m * 1e6
    return {"before": BEFORE, "after": {**reads, "new_and_first_use_us": round(first, 2)}}
