"""Every result a user gets back reads back from its JSON: `X.from_json(doc).to_json()` is `doc` again (the
JSON a fixed point, after a real json.dumps/json.loads), and where the typed result compares by value, the
typed result read back equals the one made. Each is made by a real, small library call."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from vazao.resultfiles import json_document

SRC = Path(__file__).resolve().parents[1] / "src" / "vazao"


def roundtrip(cls: Any, obj: Any, **kw: Any) -> Any:
    """obj's JSON read back as cls; asserts the JSON is a fixed point and returns the typed result."""
    doc = json.loads(json.dumps(json_document(obj)))
    back = cls.from_json(doc, **kw)
    assert json.loads(json.dumps(json_document(back))) == doc
    return back


@pytest.fixture(scope="module")
def dep():
    from vazao.physics.deployment import make_deployment

    return make_deployment("llama-3.1-8b", "h100-sxm")


# ---- simulate, estimate, fit ----------------------------------------------------------------------
def test_a_simulation_reads_back(dep):
    from vazao.results import SLO
    from vazao.sim.run import SimResult, SimRun, run_simulation
    from vazao.workload import load_workload

    run = run_simulation(dep, load_workload("chat", requests=50), slo=SLO.parse("ttft_p95=1s"))
    back = roundtrip(SimRun, run)
    assert back == run  # _stats (the run's columns) is not compared: a run read back has no records
    assert back.result is not None and back.result.summary == run.summary and back.result.records() == []
    assert run.result is not None and run.result.bands  # a calibrated profile: the bands took part
    with pytest.raises(Exception, match="summary"):
        SimResult.from_json(json_document(run.result))


def test_a_comparison_and_a_sweep_read_back(dep):
    from vazao.sim.run import SimRun, run_simulation
    from vazao.workload import load_workload

    w = load_workload("chat", requests=30)
    cmp = run_simulation(dep, w, axes=[("max_seqs", ["8", "64"])])
    assert roundtrip(SimRun, cmp) == cmp
    sweep = run_simulation(dep, w, concurrencies=[2, 4])
    back = roundtrip(SimRun, sweep)
    assert back == sweep and [p.kind for p in back.points] == [p.kind for p in sweep.points]


def test_an_estimate_and_a_fit_read_back(dep):
    from vazao.analytic import Estimate, estimate
    from vazao.demo import estimate_result
    from vazao.physics.memory import Fit, fit

    est = estimate(dep, [1, 8], 512, 128)
    assert roundtrip(Estimate, est) == est
    # `vazao estimate --json`'s document: the deployment's keys beside the estimate's
    assert Estimate.from_json(json.loads(json.dumps(json_document(estimate_result(est))))) == est
    f = fit(dep, 4096)
    assert roundtrip(Fit, f) == f


# ---- cost -----------------------------------------------------------------------------------------
def test_selfhost_and_breakeven_answers_read_back():
    from vazao.catalog.prices import get_price
    from vazao.cost.breakeven import BreakEven
    from vazao.cost.policy import BreakEvenAnswer, RequestShape, SelfHostAnswer, SelfHostQuery, breakeven, selfhost
    from vazao.cost.selfhost import SelfHostCost, Throughput
    from vazao.results import SLO

    q = SelfHostQuery("llama-3.1-8b", "h100-sxm", shape=RequestShape(512, 128), count=1, analytic=True,
                      slo=SLO.parse("ttft_p95=1s,tpot_p95=50ms"))
    answer = selfhost(q, rps=3.0)
    back = roundtrip(SelfHostAnswer, answer)
    assert back.cost.throughput == answer.cost.throughput and back.slo == answer.slo
    assert back.cost.usd_per_hour == answer.cost.usd_per_hour  # money is exact text
    assert roundtrip(SelfHostCost, answer.cost).usd_per_mtok_output == answer.cost.usd_per_mtok_output
    assert roundtrip(Throughput, answer.cost.throughput) == answer.cost.throughput

    be = breakeven(q, ["h100-sxm", "a100-sxm-80gb"], get_price("sonnet-5.5"), rps=3.0)
    back_be = roundtrip(BreakEvenAnswer, be)
    assert back_be.winner == be.winner and back_be.at_traffic == be.at_traffic
    assert roundtrip(BreakEven, be.rows[0]).verdict == be.rows[0].verdict


def test_bills_read_back(tmp_path):
    from vazao.catalog.prices import get_price
    from vazao.cost.conversation import Conversation, Lever, bill_conversation, levers
    from vazao.cost.ledger import Bill, Line, TokenLedger, bill_requests
    from vazao.cost.usage import UsageBill, bill_usage

    sonnet = get_price("sonnet-5.5")
    conv = Conversation(system=2000, turns=3, user=100, reply=200)
    bill = bill_conversation(conv, sonnet, "5m")
    assert roundtrip(Bill, bill) == bill
    assert roundtrip(Line, bill.lines[1]) == bill.lines[1]
    reqs = bill_requests(sonnet, [("a", TokenLedger(new_input=900, output=120)),
                                  ("b", TokenLedger(new_input=100, cache_read=800, output=60, reasoning=20))])
    assert roundtrip(Bill, reqs) == reqs
    lever = levers(conv, sonnet, "5m")[0]
    assert roundtrip(Lever, lever).total_usd == lever.total_usd
    # a bill names its table (id and date): a table of another date is refused, one given is taken
    stale = json_document(bill) | {"price_as_of": "1999-01-01"}
    with pytest.raises(Exception, match="1999-01-01"):
        Bill.from_json(stale)
    assert Bill.from_json(stale, sonnet).lines == bill.lines

    log = tmp_path / "usage.jsonl"
    log.write_text("\n".join([
        json.dumps({"model": "gpt-5", "usage": {"prompt_tokens": 900, "completion_tokens": 120}}),
        json.dumps({"model": "acme-llm-9000", "usage": {"prompt_tokens": 1000, "completion_tokens": 5}}),
        "not json",
    ]) + "\n", encoding="utf-8")
    ub = bill_usage(log, get_price("gpt-5"))
    assert ub.malformed == 1 and ub.fallback_requests == 1
    assert roundtrip(UsageBill, ub) == ub


def test_prefix_and_training_reports_read_back():
    from vazao.catalog.hardware import get_accelerator
    from vazao.catalog.prices import get_price
    from vazao.cost.prefix import PrefixReport, Request, analyze
    from vazao.cost.training import TrainingCost, training_cost

    policy = "Returns within 30 days. Shipping is free above R$ 200. " * 40
    reqs = [Request(k + 1, f"Now: 2026-10-14 14:{k:02d}. User {k}.\nYou are the assistant.\n{policy}\n"
                           f"Question {k}: where is order {48000 + k}?", None) for k in range(8)]
    rep = analyze(reqs, get_price("sonnet-5.5"), min_cacheable_tokens=64)
    assert rep.volatile  # the timestamp ahead of the policy
    assert roundtrip(PrefixReport, rep) == rep
    tc = training_cost(7e9, 1e12, get_accelerator("h100-sxm"), 0.4, "2.49")
    assert roundtrip(TrainingCost, tc) == tc


def test_a_budget_check_reads_back():
    from vazao.budget import check_budget, load_budget
    from vazao.budget.check import BudgetResult, TaskResult

    result = check_budget(load_budget(Path(__file__).resolve().parents[1] / "examples" / "budget.yaml"))
    assert roundtrip(BudgetResult, result) == result
    assert roundtrip(TaskResult, result.tasks[0]) == result.tasks[0]


def test_the_demo_reads_back():
    from vazao.demo import Demo, build_demo

    demo, _ = build_demo()
    assert demo.misfits  # the 70B and the MoE need more than one GPU: Misfit's own from_json took part
    back = roundtrip(Demo, demo)
    # the shares are written to six decimals (share_str): the rest compares exactly
    assert (back.rows, back.misfits, back.next_commands) == (demo.rows, demo.misfits, demo.next_commands)
    assert back.headlines.floor == demo.headlines.floor and back.headlines.fp8 == demo.headlines.fp8


# ---- plan, validate -------------------------------------------------------------------------------
def test_a_plan_document_reads_back():
    from vazao.plan import PlanInputs, Traffic, run_plan
    from vazao.plan.document import PlanDocument
    from vazao.plan.output import plan_json
    from vazao.results import SLO

    r = run_plan(PlanInputs(workload="chat", traffic=Traffic(rate=4), slo=SLO.parse("ttft_p95=1s,tpot_p95=50ms"),
                            models=("llama-3.1-8b",), gpus=("h100-sxm",), formats=("bf16",), max_gpus=1,
                            requests=60, simulate_top=2, curves=1), workers=1)
    doc = plan_json(r)
    back = roundtrip(PlanDocument, doc)
    assert back.candidates and back.candidates[0].summary == r.candidates[0].summary
    assert back.candidates[0].checks == r.candidates[0].checks and back.curves == r.curves


def test_a_validation_slice_reads_back():
    """The report's slices read back; the report itself is allowlisted below (its rows' JSON leaves out
    most of each MeasuredRow)."""
    from vazao.validate import parse_rows, predict_rows, validation_report
    from vazao.validate.run import Slice

    header = ("id,source,engine,engine_version,model,params_b,precision_weights,precision_kv_or_compute,gpu,"
              "gpu_count,tp,pp,input_len,output_len,concurrency_or_batch,metric,value,notes\n")
    rows, problems = parse_rows(header + (
        'trt017-0006,perf-overview,trtllm,0.17,Llama-3.1-8B,8.03,FP8,FP8,H200-SXM-141GB,1,1,1,128,2048,'
        'max(offline),output_tok_s_total,25398.86,"notes"\n'
        'lcpp-xj-0001,xj,llama.cpp,May 2024,Llama-3-8B,8.03,Q4_K_M,F16 KV (llama.cpp default),RTX-3070,1,1,1,'
        '0,512,1,tg_tok_s_batch1,72.79,"batch 1"\n'
        'x-0003,xj,llama.cpp,May 2024,Llama-3-8B,8.03,Q4_K_M,F16,RTX-3070,1,1,1,0,512,1,pp_tok_s,2000,""\n'))
    rep = validation_report(predict_rows(rows, workers=1), problems)
    assert rep.overall is not None and rep.overall.rows
    assert roundtrip(Slice, rep.overall) == rep.overall
    for slices in rep.by.values():
        for s in slices.values():
            assert roundtrip(Slice, s) == s


# ---- every result type ----------------------------------------------------------------------------
# Classes with a to_json that have no from_json, each with the reason. A type read back inside another
# (from_document rebuilds it as a field of its parent) says which parent; the rest are not results.
NOT_READ_BACK = {
    # live runs and what the JSON leaves out
    "loadgen.session.BenchResult": "a live run: its config holds the target (URL, headers) and its levels hold "
                                   "every record; the JSON keeps neither (records go to the JSONL file)",
    "loadgen.load.LevelResult": "a level of a BenchResult: its records are in the JSONL file, not the JSON",
    "loadgen.cpu.CpuReport": "the client's CPU use during a bench level: part of BenchResult's JSON only",
    "loadgen.prompts.Sizing": "the prompt-length calibration of a bench run: part of BenchResult's JSON only",
    "validate.run.ValidationReport": "its rows' JSON names a MeasuredRow by id, engine, model, gpu and "
                                     "condition text; the rest of the row (tp, pp, lengths, version) is not in it",
    "validate.run.RowResult": "as ValidationReport: the JSON holds a fraction of the MeasuredRow",
    # inputs and catalog entries, not results: rebuilt from their names
    "catalog.prices.Rates": "a catalog entry (prices.yaml); a result names its table by id",
    "catalog.prices.PriceTable": "a catalog entry (prices.yaml); Bill.from_json finds it by id",
    "physics.deployment.Deployment": "an input: its JSON is catalog names, make_deployment builds it from them",
    "workload.traffic.Traffic": "an input (--traffic); part of PlanInputs' JSON",
    "plan.space.PlanInputs": "the plan's question: PlanDocument keeps its JSON as written",
    "plan.commands.EngineCommand": "a launch command, written as text to run, not read back",
    "plan.emit.DisaggLaunch": "disaggregated launch commands, written as text to run, not read back",
    "plan.alternatives.Alternative": "a row of `vazao fit`'s fits_instead: advice beside the fit, recomputed",
    "plan.api.ApiComparison": "the plan's against_api: PlanDocument keeps its JSON as written",
    # rebuilt inside a parent by from_document (their modules belong to other work)
    "physics.step.StepCost": "rebuilt by from_document as EstimateRow.decode/prefill",
    "plan.curves.Curve": "rebuilt by from_document as PlanDocument.curves",
    "plan.curves.CurvePoint": "rebuilt by from_document as part of a Curve",
    "calibrate.Residuals": "a profile's residual quantiles, written to the profile YAML and read by bands",
    "testing.fake_server._Stats": "the fake server's counters for tests, never a vazao result",
}


def _classes_with_to_json() -> dict[str, bool]:
    """'module.Class' (under vazao) → whether it defines from_json, for every class defining to_json."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
                if "to_json" in methods:
                    out[f"{module}.{node.name}"] = "from_json" in methods
    return out


def test_every_result_type_reads_back_or_says_why_not():
    found = _classes_with_to_json()
    missing = sorted(name for name, has in found.items() if not has and name not in NOT_READ_BACK)
    assert not missing, f"to_json without from_json (add one, or a reason to NOT_READ_BACK): {missing}"
    stale = sorted(name for name in NOT_READ_BACK if found.get(name, True))
    assert not stale, f"NOT_READ_BACK lists types that read back now or are gone: {stale}"
