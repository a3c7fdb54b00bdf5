"""vazao: what an LLM will cost and how fast it will be, on this hardware, for this traffic.

The library, in the order a question flows through it (docs/library.md has a worked example):

    import vazao
    dep = vazao.make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=4)    # names or objects
    vazao.fit(dep, 8192).max_concurrent_sequences                              # what fits
    vazao.estimate(dep, [1, 32], 1024, 256).rows[1].tokens_per_s_total         # how fast (closed form)
    vazao.simulate(dep, vazao.load_workload("chat", requests=200)).summary     # how it serves (simulator)
    vazao.run_plan(vazao.PlanInputs(...)).winner                               # what to deploy

Names resolve on first use (PEP 562), so `import vazao` costs nothing until one is touched."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # core types
    "ModelArch": "vazao.catalog.arch", "Accelerator": "vazao.catalog.hardware", "Format": "vazao.catalog.formats",
    "KVFormat": "vazao.catalog.formats", "EngineProfile": "vazao.physics.profiles",
    "Deployment": "vazao.physics.deployment", "BatchShape": "vazao.physics.step", "StepCost": "vazao.physics.step",
    "Workload": "vazao.workload", "RequestRecord": "vazao.results", "RunSummary": "vazao.results",
    "Latency": "vazao.results", "SLO": "vazao.results", "VazaoError": "vazao.errors", "Band": "vazao.bands",
    # catalogs
    "get_model": "vazao.catalog.models", "load_model": "vazao.catalog.models",
    "get_accelerator": "vazao.catalog.hardware", "get_format": "vazao.catalog.formats",
    "get_engine": "vazao.physics.profiles", "get_price": "vazao.catalog.prices",
    # the cost model and what is built on it
    "deployment_for": "vazao.physics.deployment", "make_deployment": "vazao.physics.deployment",
    "fit": "vazao.physics.memory",
    "step_cost": "vazao.physics.step", "estimate": "vazao.analytic", "load_workload": "vazao.workload",
    "simulate": "vazao.sim.run", "SimConfig": "vazao.sim.config", "summarize": "vazao.results",
    # measuring
    "BenchConfig": "vazao.loadgen.session", "run_bench": "vazao.loadgen.session", "Target": "vazao.loadgen.client",
    # cost
    "TokenLedger": "vazao.cost.ledger", "bill_requests": "vazao.cost.ledger",
    "Conversation": "vazao.cost.conversation", "bill_conversation": "vazao.cost.conversation",
    "AgentTask": "vazao.cost.agent", "bill_agent": "vazao.cost.agent", "selfhost_cost": "vazao.cost.selfhost",
    "SelfHostQuery": "vazao.cost.policy", "selfhost_for": "vazao.cost.policy", "RequestShape": "vazao.cost.policy",
    "Throughput": "vazao.cost.selfhost",
    # budgets
    "load_budget": "vazao.budget", "check_budget": "vazao.budget",
    # planning and accuracy
    "PlanInputs": "vazao.plan", "Traffic": "vazao.workload.traffic", "run_plan": "vazao.plan",
    "read_rows": "vazao.validate", "predict_rows": "vazao.validate", "calibrate_engine": "vazao.calibrate",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vazao' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
