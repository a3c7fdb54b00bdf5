"""`vazao calibrate runs/`: the user's own `vazao bench` results as measured rows, and a fit on them.

The end-to-end test runs `vazao bench` against the real llama.cpp server of tests/conftest.py (Gemma 3
270M Q4_K_M on this host), then fits the llama.cpp profile on that run."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from vazao.cli import app
from vazao.validate.bench_runs import RunDeployment, level_rows, read_runs


def _summary(requests=4, errors=0, prompt=200, output=80, ttft=0.5, itl=0.03, tok_s=30.0):
    lat = lambda v: {"mean": v, "p50": v, "p90": v, "p95": v, "p99": v}  # noqa: E731
    return {"requests": requests, "errors": errors, "duration_s": 10.0, "ttft_s": lat(ttft), "itl_s": lat(itl),
            "tpot_s": lat(itl), "e2e_s": lat(3.0), "request_throughput_per_s": 0.4, "output_tokens_per_s": tok_s,
            "total_tokens_per_s": 100.0, "prompt_tokens": prompt, "output_tokens": output}


DEP = RunDeployment(engine="llama.cpp", gpu="rtx-4090", model="llama-3.1-8b", weights="q4_k_m")


def test_a_sweep_gives_four_rows_per_level_at_mean_lengths():
    doc = {"run": {"model": "x"}, "points": [{"concurrency": 1, "summary": _summary()},
                                             {"concurrency": 4, "summary": _summary(ttft=0.9)}]}
    rows, problems = level_rows(doc, DEP, "runs/a.json")
    assert not problems
    assert len(rows) == 8
    r = rows[0]
    assert (r.input_len, r.output_len, r.condition.kind, r.condition.value) == (50, 20, "concurrency", 1.0)
    assert {x.metric for x in rows} == {"ttft_ms", "itl_ms", "tpot_ms", "output_tok_s_total"}
    assert [x.value for x in rows if x.metric == "ttft_ms"] == [500.0, 900.0]


def test_a_single_rate_run_and_what_is_not_a_run():
    rows, problems = level_rows({"run": {"rate": 2.5}, "summary": _summary()}, DEP, "r.json")
    assert rows and rows[0].condition.kind == "rate" and rows[0].condition.value == 2.5
    for doc, reason in [({"hello": 1}, "not a vazao bench result"),
                        ({"run": {}, "summary": _summary()}, "no concurrency or request rate"),
                        ({"run": {"concurrency": 2}, "summary": _summary(errors=4)}, "no request"),
                        ({"run": {"concurrency": 2}, "summary": _summary(prompt=0)}, "no prompt or output")]:
        rows, problems = level_rows(doc, DEP, "r.json")
        assert not rows and reason in problems[0].reason


def test_unreadable_files_are_one_line_errors(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    r = CliRunner().invoke(app, ["calibrate", str(tmp_path), "--engine", "llama.cpp", "--gpu", "local",
                                 "-o", str(tmp_path / "p.yaml")])
    assert r.exit_code == 2 and "bad.json" in r.output and len(r.output.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(app, ["calibrate", str(empty), "--engine", "llama.cpp", "--gpu", "local",
                                 "-o", str(tmp_path / "p.yaml")])
    assert r.exit_code == 2 and "no *.json" in r.output
    (tmp_path / "ok.json").write_text(json.dumps({"run": {"concurrency": 1}, "summary": _summary()}))
    (tmp_path / "bad.json").unlink()
    r = CliRunner().invoke(app, ["calibrate", str(tmp_path), "--engine", "llama.cpp", "-o", str(tmp_path / "p.yaml")])
    assert r.exit_code == 2 and "give --gpu" in r.output


@pytest.mark.llama_server
def test_calibrate_on_a_real_bench_run(llama_server, tmp_path):
    wl = tmp_path / "small.yaml"
    wl.write_text("name: small\narrival: {kind: concurrency, concurrency: 1}\nprompt: 60\noutput: 16\n"
                  "requests: 4\nwarmup: 1\nseed: 3\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    r = CliRunner().invoke(app, ["bench", llama_server.url, "-w", str(wl), "--api", "completions", "--no-progress",
                                 "--concurrency", "1,2", "--records", str(tmp_path / "r.jsonl"),
                                 "-o", str(runs / "run.json"), "--timeout", "120s",
                                 "--extra-body", json.dumps({"min_tokens": 16, "temperature": 0.0})])
    assert r.exit_code == 0, r.output
    assert llama_server.death() is None
    rows, problems = read_runs([runs / "run.json"], RunDeployment(engine="llama.cpp", gpu="local"))
    assert not problems and len(rows) == 8  # two levels × (TTFT, ITL, TPOT, tokens/s); the server named its GGUF
    assert rows[0].model.endswith(".gguf")
    out = tmp_path / "profile.yaml"
    r = CliRunner().invoke(app, ["calibrate", str(runs), "--engine", "llama.cpp", "--gpu", "local",
                                 "-o", str(out), "--workers", "1", "--json"])
    assert r.exit_code == 0, r.output
    fit = json.loads(r.stdout)
    assert fit["rows"] == 8 and fit["fits"][0]["median_ape"] < 1.0
    doc = yaml.safe_load(out.read_text())
    cal = doc["engines"]["llama.cpp"]["calibration"]
    from vazao.catalog.local import host_generation

    assert cal["fitted_on"] == {"generations": [host_generation()], "formats": ["q4_k_m"], "model_families": ["gemma3"]}
    # the values this host's generation overrides (measured here, engines.yaml) are not refitted
    assert "compute_efficiency" not in doc["engines"]["llama.cpp"]
    # the fitted profile is one any command takes
    r = CliRunner().invoke(app, ["estimate", rows[0].model, "--gpu", "local", "--engine", "llama.cpp",
                                 "--profile", str(out), "--batch", "1", "--json"])
    assert r.exit_code == 0, r.output


def test_validate_reads_bench_runs_too(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"run": {"concurrency": 1, "model": "llama-3.1-8b"},
                                                   "summary": _summary(prompt=800, output=200, ttft=0.05,
                                                                       itl=0.012, tok_s=80.0)}))
    r = CliRunner().invoke(app, ["validate", str(tmp_path), "--engine", "vllm", "--gpu", "h100-sxm", "--json",
                                 "--workers", "1"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["summary"]["coverage"] == 1.0 and len(d["rows"]) == 4
    assert {row["metric"] for row in d["rows"]} == {"ttft_ms", "itl_ms", "tpot_ms", "output_tok_s_total"}
    r = CliRunner().invoke(app, ["validate", str(tmp_path), "--gpu", "h100-sxm"])
    assert r.exit_code == 2 and "give --engine" in r.output


def test_garbage_counts_skip_the_level_with_a_reason():
    doc = {"run": {"concurrency": 1}, "summary": {**_summary(), "prompt_tokens": "abc", "requests": True}}
    rows, problems = level_rows(doc, DEP, "r.json")
    assert not rows and problems and "no request" in problems[0].reason
    doc = {"run": {"concurrency": 1}, "summary": {**_summary(), "prompt_tokens": "abc"}}
    rows, problems = level_rows(doc, DEP, "r.json")
    assert not rows and "no prompt or output" in problems[0].reason
