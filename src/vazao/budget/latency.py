"""A task's latency on a self-hosted deployment when no run was measured: its mean call on the
simulator or on the analytic model (estimate.steady_point)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from vazao.budget.spec import TaskBudget
from vazao.cost.ledger import TokenLedger
from vazao.errors import VazaoError
from vazao.results import Latency, RunSummary

if TYPE_CHECKING:
    from vazao.bands import Band
    from vazao.physics.deployment import Deployment


def analytic_summary(dep: Deployment, tokens: TokenLedger, concurrency: int = 1) -> RunSummary:
    """One call's latency on a self-hosted deployment, analytic model (estimate.steady_point):
    its cached input served by the engine's prefix cache, `concurrency` requests in flight. Every
    percentile is the point value. Pass a task's tokens_per_call."""
    from vazao.analytic import steady_point

    prompt = tokens.prompt_tokens
    if prompt < 1 or tokens.billed_output < 1:
        raise VazaoError("a simulated task needs at least one input and one output token")
    cached = tokens.cache_read if dep.engine.prefix_caching else 0
    p = steady_point(dep, prompt, tokens.billed_output, concurrency, cached)
    return RunSummary(
        requests=1, errors=0, duration_s=p.e2e_s,
        ttft_s=Latency(p.ttft_s, p.ttft_s, p.ttft_s, p.ttft_s, p.ttft_s),
        itl_s=Latency(p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s),
        tpot_s=Latency(p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s),
        e2e_s=Latency(p.e2e_s, p.e2e_s, p.e2e_s, p.e2e_s, p.e2e_s),
        request_throughput_per_s=1 / p.e2e_s, output_tokens_per_s=tokens.billed_output / p.e2e_s,
        total_tokens_per_s=(prompt + tokens.billed_output) / p.e2e_s, source="analytic",
        prompt_tokens=prompt, output_tokens=tokens.billed_output,
    )


def simulated_summary(dep: Deployment, tokens: TokenLedger, concurrency: int = 1, requests: int = 100) -> RunSummary:
    """One call shape served on the discrete-event simulator, closed loop at `concurrency`, the cached
    input as a prefix shared by every request (the engine's prefix cache)."""
    from vazao.sim import simulate
    from vazao.workload import workload_from_dict

    fresh = tokens.new_input + tokens.cache_write
    out = tokens.billed_output
    if fresh < 1 or out < 1:
        raise VazaoError("a simulated task needs at least one uncached input and one output token per call")
    spec = {"arrival": {"kind": "concurrency", "concurrency": concurrency}, "prompt": fresh, "output": out,
            "requests": requests + concurrency, "warmup": concurrency}
    if tokens.cache_read:
        spec["prefixes"] = [{"id": "task", "tokens": tokens.cache_read, "share": 1.0}]
    return simulate(dep, workload_from_dict(spec, name="budget task")).summary


def deployment_latency(dep: Deployment, concurrency: int = 1, analytic: bool = False
                       ) -> tuple[Callable[[TaskBudget], RunSummary], str]:
    """The latency source for tasks served on `dep` with `concurrency` calls in flight, and its label:
    each task's mean call on the simulator, or (analytic) on the analytic model."""
    def latency(task: TaskBudget) -> RunSummary:
        summary = analytic_summary if analytic else simulated_summary
        return summary(dep, task.tokens_per_call, concurrency)

    kind = "analytic" if analytic else "simulated"
    return latency, f"{kind}: {dep.label()} at concurrency {concurrency}"



def latency_band(dep: Deployment) -> Callable[[str, float], Band | None]:
    """The 80% band of a latency predicted for `dep` (a budget key such as 'ttft_p95' or 'total_p95', its value
    in s): the band plan and cost selfhost give the same SLO term (cost.capacity.term_band)."""
    from vazao.cost.capacity import term_band

    def of(key: str, value: float) -> Band | None:
        metric = key.split("_", 1)[0]
        return term_band(dep, "e2e" if metric == "total" else metric, value)

    return of
