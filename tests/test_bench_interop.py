"""Interop: `vazao compare` reads guidellm's benchmarks.json and `vllm bench serve --save-result`'s
JSON as RunSummaries (ms → s, the percentiles each tool writes, nothing invented), side by side with
vazao's own results; a file of another kind is refused in one line (exit 2). `vazao bench --outputs`
writes the result JSON, a CSV per load level and the HTML run report next to the records, checked
before any request is sent.

Fixtures (tests/data/) are shaped as the tools write them (one line of JSON, every key of guidellm's
v0.7 report schema and vllm's result dict), with made-up but consistent numbers: guidellm's
concurrent@4 benchmark has 40 successful, 1 incomplete and 1 errored request over 20 s, 128 prompt
and 64 output tokens each; vllm's run completed 98 of 100 prompts in 25 s."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vazao import limits
from vazao.cli import app
from vazao.errors import VazaoError
from vazao.loadgen import foreign
from vazao.loadgen.outputs import CSV_COLUMNS, csv_rows, output_paths, parse_kinds

runner = CliRunner()
DATA = Path(__file__).parent / "data"
GUIDELLM = DATA / "guidellm-benchmarks.json"
VLLM = DATA / "vllm-bench-serve.json"


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _runs(data, where: str = "f.json") -> list[foreign.ForeignRun]:
    return foreign.runs_of([data], where)


def _write(tmp_path: Path, name: str, obj) -> Path:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def _one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# ---- guidellm ------------------------------------------------------------------------------------


def test_guidellm_report_becomes_one_summary_per_benchmark():
    raw = _load(GUIDELLM)
    runs = _runs(raw)
    assert [r.label for r in runs] == ["concurrent@4", "constant@2.00"]
    assert [dict(r.level) for r in runs] == [{"concurrency": 4}, {"rate": 2.0}]
    assert {r.tool for r in runs} == {"guidellm 0.7.3"}
    s, m = runs[0].summary, raw["benchmarks"][0]["metrics"]
    ttft = m["time_to_first_token_ms"]["successful"]
    assert s.ttft_s.mean == pytest.approx(ttft["mean"] / 1000, rel=1e-12)
    for ours, theirs in (("p50", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99")):
        assert s.ttft_s.get(ours) == pytest.approx(ttft["percentiles"][theirs] / 1000, rel=1e-12)
    itl = m["inter_token_latency_ms"]["successful"]
    assert s.itl_s.p95 == pytest.approx(itl["percentiles"]["p95"] / 1000, rel=1e-12)
    e2e = m["request_latency"]["successful"]  # guidellm's request latency is in seconds already
    assert s.e2e_s.p99 == pytest.approx(e2e["percentiles"]["p99"], rel=1e-12)
    assert (s.tpot_s.mean, s.tpot_s.p50, s.tpot_s.p99) == (None, None, None)  # guidellm gives no TPOT
    assert (s.requests, s.errors, s.duration_s) == (42, 2, 20.0)  # errored + incomplete, as vazao counts
    assert (s.request_throughput_per_s, s.output_tokens_per_s, s.total_tokens_per_s) == (2.0, 128.0, 384.0)
    assert (s.prompt_tokens, s.output_tokens) == (40 * 128, 40 * 64)
    assert s.source == "measured" and s.goodput_requests_per_s is None
    assert any("TPOT is not given" in n for n in runs[0].notes)
    assert runs[1].summary.errors == 0


def test_guidellm_older_report_shape_is_read():
    """v0.3: the strategy under `args`, request totals beside the metrics, percentiles without p50."""
    raw = _load(GUIDELLM)
    old = {"benchmarks": []}
    for b in raw["benchmarks"]:
        b = copy.deepcopy(b)
        b["args"] = {"strategy": b.pop("config")["strategy"]}
        b["request_totals"] = b["metrics"].pop("request_totals")
        for dist in b["metrics"].values():
            if isinstance(dist, dict) and isinstance(dist.get("successful"), dict):
                dist["successful"]["percentiles"].pop("p50")
        old["benchmarks"].append(b)
    runs = _runs(old)
    assert [r.label for r in runs] == ["concurrent@4", "constant@2.00"] and runs[0].tool == "guidellm"
    median = raw["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["median"]
    assert runs[0].summary.ttft_s.p50 == pytest.approx(median / 1000, rel=1e-12)
    assert runs[0].summary.requests == 42


def test_guidellm_strategies_named_as_guidellm_names_them_and_repeats_kept_apart():
    raw = _load(GUIDELLM)
    b = raw["benchmarks"][0]
    strategies = [{"type_": "synchronous"}, {"type_": "throughput", "max_concurrency": None},
                  {"type_": "poisson", "rate": 1.5}, {"type_": "poisson", "rate": 1.5}]
    raw["benchmarks"] = [{**copy.deepcopy(b), "config": {**b["config"], "strategy": s}} for s in strategies]
    runs = _runs(raw)
    assert [r.label for r in runs] == ["synchronous", "throughput@unlimited", "poisson@1.50", "poisson@1.50#2"]
    assert [dict(r.level) for r in runs] == [{"concurrency": 1}, {}, {"rate": 1.5}, {"rate": 1.5}]


def test_guidellm_metric_with_no_successful_request_is_not_measured_not_zero():
    raw = _load(GUIDELLM)
    ttft = raw["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
    ttft["count"] = 0
    ttft.update({k: 0.0 for k in ("mean", "median")})
    s = _runs(raw)[0].summary
    assert (s.ttft_s.mean, s.ttft_s.p50, s.ttft_s.p99) == (None, None, None)
    assert s.itl_s.mean is not None


# ---- vllm bench serve ----------------------------------------------------------------------------


def test_vllm_result_mapping_ms_to_seconds_and_only_the_percentiles_it_wrote():
    raw = _load(VLLM)
    (run,) = _runs(raw)
    s = run.summary
    assert run.tool == "vllm bench serve" and run.label == "" and dict(run.level) == {"concurrency": 8}
    assert s.ttft_s.mean == pytest.approx(0.0955) and s.ttft_s.p50 == pytest.approx(0.09025)  # the median
    assert s.ttft_s.p99 == pytest.approx(0.18075)
    assert (s.ttft_s.p90, s.ttft_s.p95) == (None, None)  # vllm wrote only p99 (--metric-percentiles)
    assert s.tpot_s.p50 == pytest.approx(0.015) and s.itl_s.p99 == pytest.approx(0.0305)
    assert s.e2e_s.mean is None  # no e2el without --percentile-metrics ...,e2el
    assert (s.requests, s.errors, s.duration_s) == (100, 2, 25.0)
    assert (s.request_throughput_per_s, s.output_tokens_per_s, s.total_tokens_per_s) == (3.92, 250.88, 752.64)
    assert (s.prompt_tokens, s.output_tokens) == (12544, 6272)
    assert any("E2E is not given" in n for n in run.notes)
    more = {**raw, "p90_ttft_ms": 150.0, "p95_ttft_ms": 170.0, "mean_e2el_ms": 1000.0, "median_e2el_ms": 990.0,
            "p99_e2el_ms": 1500.0, "request_goodput": 3.5, "max_concurrency": None, "request_rate": 4.0}
    (run,) = _runs(more)
    assert (run.summary.ttft_s.p90, run.summary.ttft_s.p95) == (pytest.approx(0.15), pytest.approx(0.17))
    assert run.summary.e2e_s.p99 == pytest.approx(1.5) and run.summary.goodput_requests_per_s == 3.5
    assert dict(run.level) == {"rate": 4.0} and not any("E2E" in n for n in run.notes)


def test_vllm_failures_from_older_files():
    raw = _load(VLLM)
    del raw["failed"]
    assert _runs(raw)[0].summary.errors == 100 - 98  # num_prompts − completed: every prompt was sent
    assert _runs({**raw, "errors": ["", "timeout", ""]})[0].summary.errors == 1
    del raw["num_prompts"]
    with pytest.raises(VazaoError, match="failed requests are unknown"):
        _runs(raw)


def test_vllm_run_with_nothing_completed_has_no_latencies():
    raw = {**_load(VLLM), "completed": 0, "failed": 100, "mean_ttft_ms": 0.0, "median_ttft_ms": 0.0,
           "p99_ttft_ms": 0.0, "request_throughput": 0.0}
    s = _runs(raw)[0].summary
    assert (s.ttft_s.mean, s.ttft_s.p50, s.itl_s.p99) == (None, None, None) and s.errors == 100


def test_vllm_appended_results_are_one_column_per_line(tmp_path):
    raw = _load(VLLM)
    p = _write(tmp_path, "appended.json", json.dumps(raw) + "\n" + json.dumps({**raw, "max_concurrency": 16}))
    r = runner.invoke(app, ["compare", str(p), "--json"])
    assert r.exit_code == 0, r.output
    runs = json.loads(r.stdout)["runs"]
    assert [x["name"] for x in runs] == ["appended.json#1", "appended.json#2"]
    assert [x["level"] for x in runs] == [{"concurrency": 8}, {"concurrency": 16}]


# ---- compare: mixed kinds, wrong kinds, bounds ----------------------------------------------------


def test_compare_vazao_guidellm_and_vllm_in_one_table(fake_llm, tmp_path):
    wl = _write(tmp_path, "small.yaml", "name: small\narrival: {kind: concurrency, concurrency: 2}\n"
                                        "prompt: 16\noutput: 8\nrequests: 6\n")
    own = tmp_path / "vazao-run.json"
    r = runner.invoke(app, ["bench", fake_llm.url, "-w", str(wl), "-o", str(own), "--no-progress"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["compare", str(GUIDELLM), str(VLLM), str(own), "--json"])
    assert r.exit_code == 0, r.output
    runs = json.loads(r.stdout)["runs"]
    assert [x["name"] for x in runs] == ["guidellm-benchmarks.json#concurrent@4",
                                         "guidellm-benchmarks.json#constant@2.00", "vllm-bench-serve.json",
                                         "vazao-run.json"]
    assert [x["tool"] for x in runs] == ["guidellm 0.7.3", "guidellm 0.7.3", "vllm bench serve", "vazao"]
    assert runs[2]["summary"]["ttft_s"]["p95"] is None and runs[3]["summary"]["ttft_s"]["p95"] > 0
    assert runs[3]["summary"]["requests"] == 6 and "notes" not in runs[3]
    r = runner.invoke(app, ["compare", str(GUIDELLM), str(VLLM), str(own)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    table = r.stdout
    assert "guidellm-benchmarks.json#concurrent@4" in table and "vazao-run.json" in table
    tpot = next(line for line in table.splitlines() if "TPOT p50" in line)
    assert tpot.count(" - ") >= 2  # guidellm's two columns give no TPOT: shown as "-", not invented
    assert "guidellm-benchmarks.json: guidellm 0.7.3" in table and "vllm-bench-serve.json: vllm bench serve" in table


@pytest.mark.parametrize("content,says", [
    ({"candidates": [], "pareto": []}, "a vazao plan result"),
    ({"runs": [{"name": "x"}]}, "a vazao comparison result"),
    ([1, 2, 3], "a JSON list of 3 items"),
    ({"model": "x", "tokens": 5}, "a JSON object with keys model, tokens"),
    ({"benchmarks": [{"id": 1}]}, "a `benchmarks` list but no guidellm metrics"),
    ({"summary": {"by_metric": {}}, "rows": []}, "a vazao validation result"),
    ("42", "a JSON int"),
], ids=["plan", "comparison", "list", "object", "benchmarks-without-metrics", "validation", "number"])
def test_compare_refuses_a_file_of_another_kind(tmp_path, content, says):
    p = _write(tmp_path, "other.json", content if isinstance(content, str) else json.dumps(content))
    line = _one_line_error(runner.invoke(app, ["compare", str(p)]))
    assert says in line and "expected a vazao bench result" in line and "guidellm" in line and "vllm" in line


def test_compare_kind_is_read_from_content_not_name(tmp_path):
    renamed = tmp_path / "run.json"
    renamed.write_text(GUIDELLM.read_text())
    r = runner.invoke(app, ["compare", str(renamed), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["runs"][0]["tool"] == "guidellm 0.7.3"
    benchmarks = _write(tmp_path, "benchmarks.json", VLLM.read_text())
    r = runner.invoke(app, ["compare", str(benchmarks), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["runs"][0]["tool"] == "vllm bench serve"


def _bad_guidellm(edit) -> dict:
    raw = _load(GUIDELLM)
    edit(raw["benchmarks"][1]["metrics"])
    return raw


@pytest.mark.parametrize("doc,says", [
    (_bad_guidellm(lambda m: m["time_to_first_token_ms"]["successful"].update(mean=-3.0)),
     "benchmark 2 (constant@2.00): metrics.time_to_first_token_ms.successful.mean must be at least 0"),
    (_bad_guidellm(lambda m: m["request_totals"].update(errored=1.5)), "request_totals.errored must be a whole"),
    (_bad_guidellm(lambda m: m["inter_token_latency_ms"]["successful"]["percentiles"].update(p99="fast")),
     "percentiles.p99 must be a number"),
    (_bad_guidellm(lambda m: m.update(request_latency=[1, 2])), "metrics.request_latency must be an object"),
    ({**_load(VLLM), "mean_ttft_ms": True}, "mean_ttft_ms must be a number"),
    ({**_load(VLLM), "completed": -1}, "completed must be at least 0"),
    ({**_load(VLLM), "duration": "1e999"}, "duration must be a finite number"),
], ids=["negative", "fractional-count", "text", "not-an-object", "bool", "negative-count", "infinite"])
def test_foreign_numbers_are_bounded(tmp_path, doc, says):
    p = _write(tmp_path, "bad.json", doc)
    line = _one_line_error(runner.invoke(app, ["compare", str(p)]))
    assert says in line and "bad.json" in line


def test_foreign_files_through_the_input_bounds(tmp_path, monkeypatch):
    nan = _write(tmp_path, "nan.json", VLLM.read_text().replace("95.5", "NaN"))
    assert "not valid JSON" in _one_line_error(runner.invoke(app, ["compare", str(nan)]))
    deep = _write(tmp_path, "deep.json", "[" * 100 + "]" * 100)
    assert "nests deeper" in _one_line_error(runner.invoke(app, ["compare", str(deep)]))
    monkeypatch.setattr(limits, "MAX_RESULT_BYTES", 4096)
    assert "larger than" in _one_line_error(runner.invoke(app, ["compare", str(GUIDELLM)]))
    assert runner.invoke(app, ["compare", str(VLLM)]).exit_code == 0  # 1 KB: within the bound


# ---- bench --outputs -----------------------------------------------------------------------------


@pytest.fixture()
def wl(tmp_path):
    return str(_write(tmp_path, "small.yaml", "name: small\narrival: {kind: concurrency, concurrency: 3}\n"
                                              "prompt: 16\noutput: 8\nrequests: 6\n"))


def bench(*args: str):
    return runner.invoke(app, ["bench", *args, "--no-progress"])


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_bench_outputs_json_csv_html_next_to_the_records(fake_llm, wl, tmp_path):
    records = tmp_path / "sweep.jsonl"
    r = bench(fake_llm.url, "-w", wl, "--records", str(records), "-c", "1,3", "--outputs", "json,csv,html")
    assert r.exit_code == 0, r.output
    assert "reports:" in r.stdout
    data = json.loads((tmp_path / "sweep.json").read_text())  # json: the result -o would have written
    assert [p["concurrency"] for p in data["points"]] == [1, 3]
    rows = _csv(tmp_path / "sweep.csv")
    assert list(rows[0]) == list(CSV_COLUMNS) and [row["level"] for row in rows] == ["concurrency 1", "concurrency 3"]
    for row, point in zip(rows, data["points"], strict=True):
        s = point["summary"]
        assert int(row["requests"]) == s["requests"] == 6 and int(row["successes"]) == s["requests"] - s["errors"]
        assert float(row["duration_s"]) == s["duration_s"]
        assert float(row["request_rate_per_s"]) == s["request_throughput_per_s"]
        assert float(row["output_tokens_per_s"]) == s["output_tokens_per_s"]
        for metric, key in (("ttft", "ttft_s"), ("itl", "itl_s"), ("e2e", "e2e_s")):
            for stat in ("p50", "p95", "p99") + (("mean",) if metric != "e2e" else ()):
                assert float(row[f"{metric}_{stat}_ms"]) / 1000 == pytest.approx(s[key][stat], rel=1e-12)
    html = (tmp_path / "sweep.html").read_text()
    assert html.startswith("<!DOCTYPE html>") or html.lstrip().lower().startswith("<!doctype html")
    # the html is exactly the report `vazao report --run` makes of the same result
    again = tmp_path / "again.html"
    r = runner.invoke(app, ["report", "--run", str(tmp_path / "sweep.json"), "-o", str(again)])
    assert r.exit_code == 0, r.output
    assert again.read_text() == html


def test_bench_outputs_named_after_o_and_default_is_none(fake_llm, wl, tmp_path):
    out = tmp_path / "run.json"
    r = bench(fake_llm.url, "-w", wl, "-o", str(out), "--outputs", "csv,json")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.csv", "run.json", "run.jsonl", "small.yaml"]
    (row,) = _csv(tmp_path / "run.csv")
    # the workload's own arrivals: named as the workload describes them; no level was set, none is invented
    assert row["level"] == "closed loop, concurrency 3" and row["concurrency"] == row["rate"] == ""
    assert float(row["ttft_p50_ms"]) / 1000 == pytest.approx(json.loads(out.read_text())["summary"]["ttft_s"]["p50"])
    plain = tmp_path / "plain"
    plain.mkdir()
    r = bench(fake_llm.url, "-w", wl, "--records", str(plain / "p.jsonl"))
    assert r.exit_code == 0 and [p.name for p in plain.iterdir()] == ["p.jsonl"]


@pytest.mark.parametrize("outputs,prepare,says", [
    ("json,xml", None, "output kind 'xml' is not one of json, csv, html"),
    ("csv,,html", None, "empty item"),
    ("csv", "file", "csv report file"),
    ("html", "folder", "is a folder"),
], ids=["unknown-kind", "empty-item", "exists", "folder"])
def test_bench_outputs_refused_before_any_request(fake_llm, wl, tmp_path, outputs, prepare, says):
    records = tmp_path / "r.jsonl"
    if prepare == "file":
        (tmp_path / "r.csv").write_text("someone else's\n")
    elif prepare == "folder":
        (tmp_path / "r.html").mkdir()
    line = _one_line_error(bench(fake_llm.url, "-w", wl, "--records", str(records), "--outputs", outputs))
    assert says in line
    assert not records.exists()  # refused before the run started: no request was sent
    if prepare == "file":
        assert (tmp_path / "r.csv").read_text() == "someone else's\n"


def test_outputs_library_parts():
    assert parse_kinds(None) == () and parse_kinds("HTML,csv,html") == ("html", "csv")
    with pytest.raises(VazaoError, match="not one of"):
        parse_kinds("pdf")
    assert output_paths(["json", "csv"], Path("a/r.jsonl"), None) == {"json": Path("a/r.json"), "csv": Path("a/r.csv")}
    assert output_paths(["json", "html"], Path("r.jsonl"), Path("o/x.json")) == {"json": Path("o/x.json"),
                                                                                "html": Path("o/x.html")}
    summary = {"requests": 3, "errors": 1, "duration_s": 2.0, "request_throughput_per_s": 1.0,
               "output_tokens_per_s": 8.0, "ttft_s": {"mean": 0.1, "p50": 0.1, "p95": None, "p99": 0.2},
               "itl_s": {}, "e2e_s": {"p50": 1.0}}
    (row,) = csv_rows({"summary": summary, "run": {"rate": 2.0}})
    assert row["level"] == "rate 2/s" and row["successes"] == 2 and row["ttft_p95_ms"] is None
    assert row["ttft_p99_ms"] == 200.0 and row["itl_mean_ms"] is None and row["e2e_p50_ms"] == 1000.0
