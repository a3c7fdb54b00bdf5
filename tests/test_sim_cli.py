"""`vazao simulate` through typer's CliRunner: JSON shapes, comparisons, sweeps, SLOs, bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.results import RunSummary

runner = CliRunner()
SUMMARY_KEYS = {"requests", "errors", "duration_s", "ttft_s", "itl_s", "tpot_s", "e2e_s",
                "request_throughput_per_s", "output_tokens_per_s", "total_tokens_per_s"}
LATENCY_KEYS = {"mean", "p50", "p90", "p95", "p99"}
BASE = ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm"]


def run_json(*args: str) -> dict:
    res = runner.invoke(app, [*BASE, *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def check_summary(s: dict, goodput: bool = False) -> None:
    assert set(s) >= SUMMARY_KEYS
    for k in ("ttft_s", "itl_s", "tpot_s", "e2e_s"):
        assert set(s[k]) == LATENCY_KEYS
    assert ("goodput_requests_per_s" in s) is goodput
    RunSummary.from_json(s)  # the shape vazao bench and vazao compare read


def test_single_run_json():
    d = run_json("--workload", "chat", "--requests", "120", "--seed", "2")
    check_summary(d["summary"])
    assert d["summary"]["requests"] == 120 and d["summary"]["errors"] == 0
    assert d["workload"] == "chat" and d["engine"] == "vllm" and "sim" in d
    assert d["sim"]["completed"] == 120 and d["sim"]["timeline"]
    assert set(d["sim"]["timeline"][0]) == {"t_s", "kv_used", "kv_tokens", "running", "waiting", "preemptions"}


def test_compare_json_variants_and_slo():
    d = run_json("--workload", "chat", "--requests", "150", "--max-context", "8192",
                 "--compare", "batching=static,continuous", "--compare", "kv=reserved,paged",
                 "--slo", "ttft_p95=500ms,tpot_p95=50ms")
    names = [v["name"] for v in d["variants"]]
    assert names == ["batching=static kv=reserved", "batching=static kv=paged",
                     "batching=continuous kv=reserved", "batching=continuous kv=paged"]
    for v in d["variants"]:
        check_summary(v["summary"], goodput=True)
    assert d["summary"] == d["variants"][0]["summary"]
    assert d["slo"] == {"ttft_p95": 0.5, "tpot_p95": 0.05}
    static, cont = d["variants"][0]["summary"], d["variants"][3]["summary"]
    assert cont["ttft_s"]["p95"] < static["ttft_s"]["p95"]


def test_rate_list_gives_a_latency_throughput_curve():
    d = run_json("--workload", "chat", "--requests", "150", "--rate", "2,8,32")
    assert [p["rate"] for p in d["points"]] == [2.0, 8.0, 32.0]
    for p in d["points"]:
        check_summary(p["summary"])
    tput = [p["summary"]["output_tokens_per_s"] for p in d["points"]]
    assert tput == sorted(tput)
    assert d["summary"] == d["points"][-1]["summary"]


def test_concurrency_list():
    d = run_json("--workload", "batch", "--requests", "64", "--concurrency", "1,16")
    assert [p["concurrency"] for p in d["points"]] == [1, 16]
    one, sixteen = (p["summary"] for p in d["points"])
    assert sixteen["output_tokens_per_s"] > 5 * one["output_tokens_per_s"]


def test_speculative_flags_lower_tpot():
    args = ("--workload", "chat", "--requests", "20", "--concurrency", "1")
    plain = run_json(*args)["summary"]["tpot_s"]["mean"]
    spec = run_json(*args, "--spec-k", "4", "--spec-alpha", "0.8")["summary"]["tpot_s"]["mean"]
    draft = run_json(*args, "--spec-k", "4", "--spec-alpha", "0.8", "--spec-draft", "llama-3.2-1b")
    assert 2 <= plain / spec <= 3
    assert 1.5 <= plain / draft["summary"]["tpot_s"]["mean"] <= 3
    assert "speculative" in draft["config"]


def test_disaggregated_pools():
    d = run_json("--count", "2", "--tp", "1", "--workload", "rag", "--requests", "60", "--disagg", "1:1",
                 "--kv-link", "50GB/s")
    assert d["summary"]["errors"] == 0 and d["summary"]["requests"] == 60
    assert "disaggregated 1:1" in d["config"]


def test_console_output_and_records(tmp_path):
    out = tmp_path / "recs.jsonl"
    res = runner.invoke(app, [*BASE, "--workload", "support", "--requests", "16", "--timeline",
                              "--records", str(out), "--slo", "ttft_p95=1s"])
    assert res.exit_code == 0, res.output
    for text in ("TTFT", "TPOT", "ITL", "E2E", "throughput", "goodput", "KV cache", "prefix cache served",
                 "KV cache over time"):
        assert text in res.output
    lines = out.read_text().splitlines()
    assert len(lines) == 16 and json.loads(lines[0])["source"] == "simulated"


@pytest.mark.parametrize("args,message", [
    (["--rate", "-2"], "--rate must be greater than 0"),
    (["--rate", "1,2", "--concurrency", "4"], "not both"),
    (["--compare", "batching=sometimes"], "compare axis 'batching' takes static|continuous"),
    (["--compare", "kv=pagd"], "compare axis 'kv' takes reserved|paged"),
    (["--compare", "colour=red"], "unknown compare axis 'colour'"),
    (["--compare", "batching=static", "--rate", "1,2"], "single --rate"),
    (["--workload", "nope"], "unknown workload 'nope'"),
    (["--slo", "ttft=5"], "SLO term"),
    (["--spec-k", "4"], "needs both --spec-k and --spec-alpha"),
    (["--spec-k", "4", "--spec-alpha", "1.5"], "acceptance rate"),
    (["--disagg", "1:1"], "disaggregation 1:1 needs 2 replicas"),
    (["--disagg", "one"], "--disagg: disaggregation takes PREFILL:DECODE"),
    (["--kv-layout", "reserved", "--gpu", "l4", "--max-context", "131072"], "not even one request fits"),
    (["--max-seqs", "0"], "--max-seqs must be greater than 0"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    res = runner.invoke(app, [*BASE, "--requests", "5", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output


def test_overload_stops_with_a_warning():
    d = run_json("--workload", "chat", "--requests", "4000", "--rate", "5000", "--max-queue", "200")
    warnings = d["sim"]["warnings"]
    assert any("far above" in w for w in warnings)
    assert d["sim"]["unfinished"] > 0 and d["summary"]["requests"] < 4000


@pytest.mark.parametrize("args,kw", [
    ([], {}),
    (["--rate", "2,8"], {"rates": [2.0, 8.0]}),
    (["--compare", "batching=static,continuous"], {"axes": [("batching", ["static", "continuous"])]}),
])
def test_the_json_is_the_library_result(args, kw):
    """The command maps flags to one library call (vazao.sim.run_simulation) and prints its to_json():
    the same object, to the last digit, but for the wall-clock timings."""
    from vazao.physics.deployment import make_deployment
    from vazao.resultfiles import json_document, without_timing
    from vazao.sim import SimConfig, run_simulation
    from vazao.workload import load_workload

    d = run_json("--workload", "chat", "--requests", "150", "--seed", "3", *args)
    dep = make_deployment("llama-3.1-8b", "h100-sxm", None, None)
    lib = run_simulation(dep, load_workload("chat", requests=150, seed=3), SimConfig.from_engine(dep.engine), **kw)
    assert without_timing(d) == without_timing(json_document(lib))


def test_a_sweep_shows_each_points_bands():
    """Every figure shown with its 80% band: a sweep's rows carry the run's bands (SimResult.bands), E2E p95's
    among them, the same edges the run's JSON holds."""
    from rich.console import Console

    from vazao.physics.deployment import make_deployment
    from vazao.report.sim_console import points_table
    from vazao.sim import simulate
    from vazao.units import fmt_seconds
    from vazao.workload import load_workload

    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    r = simulate(dep, load_workload("chat").with_overrides(rate=2.0, requests=120))
    assert set(r.bands) >= {"output_tokens_per_s", "ttft_p95_s", "tpot_p50_s", "e2e_p95_s"}
    lo, hi, _ = r.bands["e2e_p95_s"]
    assert lo < r.summary.e2e_s.p95 < hi

    class Point:  # what points_table reads of a sweep point
        kind, value, result = "rate", 2.0, r

    c = Console(width=300, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    c.print(points_table({}, [Point()], goodput=False))
    assert f"{fmt_seconds(r.summary.e2e_s.p95)} ({fmt_seconds(lo)}–{fmt_seconds(hi)})" in c.export_text()
