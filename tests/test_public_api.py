"""The public API, pinned (as httpx's tests/test_exported_members.py does): every name in vazao.__all__
resolves, nothing public appears or disappears without this list changing, and `import vazao` alone
imports none of the subsystems."""

from __future__ import annotations

import subprocess
import sys

import vazao

EXPORTED = [
    "AgentTask", "Accelerator", "BatchShape", "BenchConfig", "Conversation", "Deployment", "EngineProfile", "Format",
    "KVFormat", "Latency", "ModelArch", "PlanInputs", "RequestRecord", "RunSummary", "SLO", "SimConfig", "StepCost",
    "TokenLedger", "Traffic", "VazaoError", "Workload", "bill_agent", "bill_conversation", "bill_requests",
    "calibrate_engine", "deployment_for", "estimate", "fit", "get_accelerator", "get_engine", "get_format",
    "get_model", "get_price", "load_model", "load_workload", "make_deployment", "predict_rows", "read_rows",
    "run_bench", "run_plan", "selfhost_cost", "simulate", "step_cost", "summarize",
    "SelfHostQuery", "selfhost_for", "load_budget", "check_budget",
    # the types public functions take or return (issue 22)
    "Band", "RequestShape", "Target", "Throughput",
]


def test_all_is_pinned_and_resolves():
    assert sorted(vazao.__all__) == sorted(["__version__", *EXPORTED])
    for name in EXPORTED:
        assert getattr(vazao, name) is not None, name
    assert set(EXPORTED) <= set(dir(vazao))


def test_import_vazao_is_lazy():
    code = "import sys, vazao; print(sorted(m for m in sys.modules if m.startswith('vazao.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_worked_example_with_names():
    dep = vazao.deployment_for("llama-3.1-70b", "h100-sxm", "fp8", count=4)
    assert dep.tp == 4 and dep.weight_format.name == "fp8"
    assert vazao.make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=4).model == dep.model
    assert vazao.fit(dep, 8192).max_concurrent_sequences > 0
    est = vazao.estimate(dep, [1, 32], 1024, 256)
    assert est.rows[1].tokens_per_s_total > est.rows[0].tokens_per_s_total
    cost = vazao.step_cost(dep, vazao.BatchShape.decode(32, 1024))
    assert cost.time_s > 0 and cost.bound in ("compute", "memory", "communication", "overhead")


def test_library_errors_speak_library_terms():
    try:
        vazao.deployment_for("llama-3.1-8b", "h100-sxm", count=3, tp=2)
    except vazao.VazaoError as exc:
        assert "--" not in str(exc) and "multiple" in str(exc)
    else:
        raise AssertionError("3 GPUs in replicas of 2 was accepted")
