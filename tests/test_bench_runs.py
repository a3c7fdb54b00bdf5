"""Measured runs read back as library calls (bench/runs.py): a records file's summary, the columns
a file holds for compare, and the simulator's prediction for a run's workload."""

from __future__ import annotations

import json

import pytest

from vazao.errors import VazaoError
from vazao.loadgen.records import RecordLog
from vazao.loadgen.runs import Column, compare, load_columns, log_summary, simulate_like
from vazao.results import RequestRecord


def _rec(i: int, ttft: float, error: str | None = None) -> RequestRecord:
    return RequestRecord(f"r{i}", "measured", float(i), 5, 3, i + ttft, i + ttft + 0.2, (0.1, 0.1), error=error)


def _log(path, recs, warm=(), run_id=None):
    with RecordLog(path, {"workload": "chat"}, run_id=run_id) as log:
        for r in warm:
            log.record(r, kind="warmup")
        for r in recs:
            log.record(r)


def test_log_summary_counts_records_errors_and_warmup(tmp_path):
    p = tmp_path / "r.jsonl"
    _log(p, [_rec(0, 0.1), _rec(1, 0.3), _rec(2, 0.2, error="http_500: boom")], warm=[_rec(9, 5.0)])
    data = log_summary(p, None)
    assert data["records"] == 3 and data["warmup_excluded"] == 1 and data["errors"] == {"http_500": 1}
    assert data["summary"].requests == 3 and data["summary"].errors == 1
    assert data["summary"].ttft_s.p50 == pytest.approx(0.2, abs=0.06)  # the warm-up's 5 s left out
    assert data["run"]["workload"] == "chat" and not data["complete"]  # no end line was written


def test_load_columns_reads_a_result_and_picks_runs_from_records(tmp_path):
    p = tmp_path / "two.jsonl"
    _log(p, [_rec(0, 0.1)], run_id="a")
    _log(tmp_path / "b.jsonl", [_rec(0, 0.4)], run_id="b")
    p.write_text(p.read_text() + (tmp_path / "b.jsonl").read_text())
    with pytest.raises(VazaoError, match="holds 2 runs"):
        load_columns(p, None, [])
    cols = load_columns(p, None, ["b"])
    assert [c.name for c in cols] == ["two.jsonl#b"] and cols[0].summary.ttft_s.p50 == pytest.approx(0.4)
    result = tmp_path / "run.json"
    result.write_text(json.dumps({"summary": cols[0].summary.to_json(), "run": {}}))
    (col,) = load_columns(result, None, [])
    assert isinstance(col, Column) and col.name == "run.json" and col.summary.requests == 1


def test_simulate_like_needs_the_workload_named():
    with pytest.raises(VazaoError, match="does not name its workload"):
        simulate_like({"run": {}}, gpu="h100-sxm", model="llama-3.1-8b")
    col = simulate_like({"run": {"workload": "chat", "requests": 20, "concurrency": 2}}, gpu="h100-sxm",
                        model="llama-3.1-8b")
    assert col.name.startswith("simulated") and col.summary.requests == 20 and col.data["tool"] == "vazao simulate"
    assert set(col.data["bands"]) >= {"ttft_p95_s", "tpot_p50_s", "output_tokens_per_s"}  # the run's 80% bands


def test_compare_gives_ratios_for_a_pair_only():
    a, b = _summary(0.1), _summary(0.3)
    pair = compare([Column("a", a), Column("b", b)])
    rows = {r.label: r for r in pair.rows}
    assert pair.paired and rows["TTFT p50"].ratio == pytest.approx(3.0)
    assert rows["requests"].ratio is None and rows["requests"].unit == "count"
    assert rows["req/s"].ratio == pytest.approx(b.request_throughput_per_s / a.request_throughput_per_s)
    three = compare([Column("a", a), Column("b", b), Column("c", a)])
    assert not three.paired and all(r.ratio is None for r in three.rows)
    zero = compare([Column("a", _summary(0.0)), Column("b", b)])
    assert {r.label: r for r in zero.rows}["TTFT p50"].ratio is None  # nothing to divide by


def _summary(ttft: float):
    from vazao.results import summarize

    return summarize([_rec(i, ttft) for i in range(4)])


def test_a_prediction_is_compared_with_its_band():
    """Measured against predicted: the predicted column carries the run's 80% bands (SimResult.bands), and a
    measurement is marked inside or outside them."""
    from rich.console import Console

    from vazao.report.bench_console import compare_table

    measured = _summary(0.1)
    predicted = _summary(0.2)
    bands = {"ttft_p95_s": (0.15, 0.3, ""), "output_tokens_per_s": (1.0, 2.0, "")}
    col = Column("simulated x", predicted, {"tool": "vazao simulate", "bands": bands})
    c = compare([Column("m", measured), col])
    rows = {r.label: r for r in c.rows}
    assert rows["TTFT p95"].bands == (None, (0.15, 0.3))
    assert rows["TTFT p95"].inside is (0.15 <= measured.ttft_s.p95 <= 0.3)
    assert rows["TTFT p50"].inside is None  # no band for it
    assert rows["output tok/s"].bands[1] == (1.0, 2.0)
    out = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    out.print(compare_table(c))
    text = out.export_text()
    assert "(150 ms–300 ms)" in text and ("in band" in text or "outside band" in text) and "80% band" in text
    # two measured runs: no band, no marker
    assert all(r.inside is None for r in compare([Column("a", measured), Column("b", predicted)]).rows)
