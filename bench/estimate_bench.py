"""estimate's hot path: `crossover_batch` (where decode turns compute-bound) in closed form against
the step-by-step search it replaced, and one whole `estimate()` call. Both variants run in this one
process, so the ratio holds on a shared machine. Issue 11: estimate spent 150 of 195 µs in two
crossover searches."""

from __future__ import annotations

import time

CASES = (("llama-3.1-8b", "h100-sxm", "bf16", 1), ("llama-3.1-70b", "h100-sxm", "fp8", 4),
         ("llama-3.1-8b", "rtx-4090", "int4-awq", 1), ("mixtral-8x7b", "h100-sxm", "bf16", 2))


def _us(fn, n: int = 400) -> float:
    best = None
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        v = (time.perf_counter() - t) / n * 1e6
        best = v if best is None else min(best, v)
    return round(best, 2)


def run() -> dict:
    import vazao.analytic as E
    from vazao.physics.deployment import make_deployment

    out = []
    for model, gpu, fmt, count in CASES:
        dep = make_deployment(model, gpu, fmt, count=count, tp=count, engine="vllm")

        def bound(b, dep=dep):
            c = E.decode_cost(dep, b, 1024)
            return c.compute_s >= c.memory_s

        def searched(dep=dep, bound=bound):
            return 1 if bound(1) else E._search_crossover(bound)

        assert searched() == E.crossover_batch(dep, 1024)
        closed = _us(lambda dep=dep: E.crossover_batch(dep, 1024))
        search = _us(searched)
        whole = _us(lambda dep=dep: E.estimate(dep, [1, 8, 32], 1024, 256), n=100)
        out.append({"deployment": f"{model} {fmt} on {count}x {gpu}", "crossover_us": closed,
                    "crossover_search_us": search, "speedup": round(search / closed, 2), "estimate_us": whole})
    return {"cases": out, "note": "least of 5 runs; search = the bisection crossover_batch used before"}


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
