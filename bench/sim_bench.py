"""Issue 3: simulate 100,000 requests of the chat workload at saturation (a closed loop of 1,024 users
on one H100 with the vLLM preset). Goal: under 10 s on the 2-core machine, memory flat.

Each size runs in a fresh interpreter so that its peak RSS is its own."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, resource, time
from vazao.catalog.models import get_model
from vazao.physics.deployment import make_deployment
from vazao.sim import simulate
from vazao.workload import load_workload
n = int(__import__("sys").argv[1])
dep = make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")
dep.consts  # cost-model constants built once, outside the timing
w = load_workload("chat", requests=n, concurrency=1024)
t0, c0 = time.perf_counter(), time.process_time()
r = simulate(dep, w)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"requests": r.completed, "steps": r.steps, "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "output_tokens_per_s_simulated": r.summary.output_tokens_per_s,
                  "mean_batch": r.mean_batch}))
"""


def measure(n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(n)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run() -> dict:
    small, big = measure(10_000), measure(100_000)
    return {
        "requests_per_s": big["requests"] / big["wall_s"],
        "wall_s": big["wall_s"],
        "cpu_s": big["cpu_s"],
        "peak_rss_mb": big["peak_rss_mb"],
        "peak_rss_mb_at_10k": small["peak_rss_mb"],
        "steps": big["steps"],
        "mean_batch": big["mean_batch"],
        "goal_wall_s": 10.0,
        "meets_goal": big["wall_s"] < 10.0,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
