"""The in-step floor of a closed loop's TTFT (vazao.validate.predict.in_step_floor_ms) and the caveat
`vazao validate` puts on a row measured below it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from vazao.validate import parse_rows, predict_rows, validation_report
from vazao.validate.predict import in_step_floor_ms
from vazao.validate.run import OUT_OF_STEP

HEADER = ("id,source,engine,engine_version,model,params_b,precision_weights,precision_kv_or_compute,gpu,"
          "gpu_count,tp,pp,input_len,output_len,concurrency_or_batch,metric,value,notes\n")


def _row(rid: str, gpus: int, clients: str, metric: str, value: float, tp: int = 1, pp: int = 1,
         notes: str = "n") -> str:
    return (f"{rid},test,vllm,0.11,Llama-3.1-8B,8.03,BF16,BF16,H100-SXM-80GB,{gpus},{tp},{pp},1024,128,"
            f"{clients},{metric},{value},{notes}\n")


def _flops_one_prompt(n: int) -> float:
    """Llama-3.1-8B's prompt of n tokens, counted from its config.json (meta-llama/Llama-3.1-8B: hidden 4096,
    32 layers, 32 query heads and 8 KV heads of 128, intermediate 14336, vocabulary 128256): 2 FLOP per weight
    per token through the projections and the MLP, the LM head for the one token that emits, and QKᵀ and PV
    over the causal pairs n(n + 1)/2 at 2 FLOP a multiply-add each."""
    per_layer = 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336  # q, o; k, v; gate, up, down
    return 2 * 32 * per_layer * n + 2 * 4096 * 128256 + 2 * 2 * 32 * 4096 * n * (n + 1) / 2


def test_the_floor_is_one_prompt_at_the_dense_peak_times_the_mean_position_in_a_round():
    rows, problems = parse_rows(HEADER + _row("a", 1, "concurrency=1", "ttft_ms", 100)
                                + _row("b", 2, "concurrency=8", "ttft_ms", 100))
    assert problems == []
    # the H100 SXM's dense BF16 peak: 989 TFLOPS (NVIDIA H100 datasheet; 1,979 is with sparsity)
    t1_ms = _flops_one_prompt(1024) / 989e12 * 1e3  # 14.73 ms
    assert in_step_floor_ms(rows[0]) == pytest.approx(t1_ms, rel=0.01)
    # 8 clients over two replicas of one GPU: 4 a replica, whose round averages (4 + 1) / 2 prompts' time
    assert in_step_floor_ms(rows[1]) == pytest.approx(2.5 * t1_ms, rel=0.01)


@pytest.mark.parametrize("line", [
    _row("tpot", 1, "concurrency=8", "tpot_ms", 20),  # not a TTFT
    _row("rate", 1, "request_rate=4/s", "ttft_ms", 1),  # not a closed loop
    _row("pp", 2, "concurrency=8", "ttft_ms", 1, tp=1, pp=2),  # stages overlap prompts
    _row("p50", 1, "concurrency=8", "ttft_ms", 1, notes="median over the run"),  # a median, not a mean
])
def test_no_floor_where_the_bound_does_not_hold_as_stated(line):
    rows, problems = parse_rows(HEADER + line)
    assert problems == [] and len(rows) == 1
    assert in_step_floor_ms(rows[0]) is None


def test_no_floor_for_a_bench_level_whose_lengths_are_means():
    # a `vazao bench` level's rows carry the run's mean lengths: varied prompts, shortest first, average less
    # than (c + 1) / 2 prompts of the mean length, so the bound does not hold for them
    rows, _ = parse_rows(HEADER + _row("a", 1, "concurrency=8", "ttft_ms", 1))
    assert in_step_floor_ms(rows[0]) is not None
    assert in_step_floor_ms(dataclasses.replace(rows[0], uniform_lengths=False)) is None


def test_validate_puts_the_caveat_on_the_row_below_the_floor_only(tmp_path):
    # 8 clients on one H100: the floor is 4.5 × 14.7 = 66 ms; 20 ms cannot come from a round sent at once
    text = HEADER + _row("below", 1, "concurrency=8", "ttft_ms", 20) + _row("above", 1, "concurrency=8", "ttft_ms", 400)
    rows, _ = parse_rows(text)
    results = predict_rows(rows, workers=1)
    by_id = {r.row.id: r for r in results}
    assert by_id["below"].caveats == (OUT_OF_STEP,) and by_id["above"].caveats == ()
    assert by_id["below"].predicted is not None  # a caveat, not a skip: the row is still scored
    doc = validation_report(results).to_json()
    assert doc["summary"]["caveats"] == [{"note": OUT_OF_STEP, "rows": 1}]
    rows_json = {r["id"]: r for r in doc["rows"]}
    assert rows_json["below"]["caveats"] == [OUT_OF_STEP] and "caveats" not in rows_json["above"]
    # the HTML report of that validation lists it beside the skipped rows
    from vazao.report.reports import validation_report as html_report

    tables = {t.title: t.rows for t in html_report(doc).tables}
    assert tables["Caveats on the measurements"] == ((OUT_OF_STEP, "1"),)
    f = tmp_path / "rows.csv"
    f.write_text(text)
    r = subprocess.run([sys.executable, "-m", "vazao", "validate", str(f), "--workers", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "1 row(s):" in r.stdout and "clients were not in step" in " ".join(r.stdout.split())
    r = subprocess.run([sys.executable, "-m", "vazao", "validate", str(f), "--workers", "1", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert json.loads(r.stdout)["summary"]["caveats"][0]["rows"] == 1
