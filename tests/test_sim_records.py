"""A simulated run's summary is results.summarize() over its records, and its records file read back
(`vazao summarize`) gives the same percentiles, exactly: the records carry every inter-token gap."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from vazao.catalog.models import get_model
from vazao.cli import app
from vazao.physics.deployment import make_deployment
from vazao.results import GapWindows, RequestRecord, summarize, write_jsonl
from vazao.sim import DisaggConfig, SimConfig, SpecConfig, simulate
from vazao.workload import load_workload, workload_from_dict

runner = CliRunner()
METRICS = ("ttft_s", "itl_s", "tpot_s", "e2e_s")


@pytest.fixture(scope="module")
def h100_8b():
    return make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")


def _read_back(path) -> list[RequestRecord]:
    with open(path, encoding="utf-8") as fh:
        return [RequestRecord.from_json(json.loads(line)) for line in fh]


def test_cli_records_summarize_to_the_printed_summary(tmp_path):
    path = tmp_path / "x.jsonl"
    sim = runner.invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "chat",
                              "--requests", "300", "--records", str(path), "--json"])
    assert sim.exit_code == 0, sim.output
    back = runner.invoke(app, ["summarize", str(path), "--json"])
    assert back.exit_code == 0, back.output
    printed, rebuilt = json.loads(sim.stdout)["summary"], json.loads(back.stdout)["summary"]
    for metric in METRICS:
        assert printed[metric] == rebuilt[metric], metric  # every percentile and the mean, bit for bit
    assert printed["requests"] == rebuilt["requests"] == 300


@pytest.mark.parametrize("make", [
    lambda d: (d, load_workload("chat", requests=200, rate=30), None),
    lambda d: (d, load_workload("support", requests=120, rate=2), None),  # conversations, prefix hits
    lambda d: (d, load_workload("chat", requests=150, rate=20),
               SimConfig.from_engine(d.engine, spec=SpecConfig(3, 0.7))),
    lambda d: (make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16", count=2, tp=1),
               load_workload("chat", requests=150, rate=20),
               SimConfig.from_engine(d.engine, disagg=DisaggConfig(1, 1))),  # gaps across a KV transfer
])
def test_records_written_and_read_back_summarize_the_same(h100_8b, tmp_path, make):
    dep, w, cfg = make(h100_8b)
    r = simulate(dep, w, cfg)
    path = tmp_path / "r.jsonl"
    assert write_jsonl(path, r.records()) == r.summary.requests
    back = _read_back(path)
    assert summarize(back) == r.summary
    chunked = cfg is not None and cfg.spec is not None  # a speculative step streams several tokens as one chunk
    for rec, orig in zip(back, r.records(), strict=True):
        if chunked:
            assert 0 < len(rec.itl_s) < rec.output_tokens - 1 or rec.output_tokens < 3
        else:
            assert len(rec.itl_s) == max(0, rec.output_tokens - 1)
        assert rec.itl_s == tuple(orig.itl_s)


def test_preempted_requests_keep_their_gaps(h100_8b, tmp_path):
    # a small KV pool on a long-output closed loop: requests are preempted and recomputed
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 256}, "prompt": 2000,
                            "output": 1500, "requests": 300})
    dep = make_deployment(get_model("llama-3.1-8b"), "l4", "bf16")
    r = simulate(dep, w, SimConfig.from_engine(dep.engine, max_context=4096))
    assert r.preemptions > 0
    recs = r.records()
    assert all(len(x.itl_s) == x.output_tokens - 1 for x in recs)
    path = tmp_path / "p.jsonl"
    write_jsonl(path, recs)
    assert summarize(_read_back(path)) == r.summary


def test_gaps_are_windows_not_one_float_per_token(h100_8b):
    r = simulate(h100_8b, load_workload("chat", requests=200, concurrency=64))
    recs = r.records()
    assert all(isinstance(x.itl_s, GapWindows) for x in recs if x.output_tokens > 1)
    assert all(len(x.itl_s.windows) == 3 for x in recs if x.output_tokens > 1)  # one window each
    tracks = recs[0].itl_s.tracks
    assert all(x.itl_s.tracks is tracks for x in recs if x.output_tokens > 1)  # shared, not copied


def test_warmup_records_are_left_out_of_the_summary(h100_8b):
    w = workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": 8}, "prompt": 100, "output": 50,
                            "requests": 60, "warmup": 8})
    r = simulate(h100_8b, w)
    assert r.summary.requests == 52 == len(r.records())
    assert len(r.records(include_warmup=True)) == 60


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_records_write_keeps_the_printed_result():
    res = runner.invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--requests", "20",
                              "--records", "/dev/full", "--json"])
    assert res.exit_code == 2
    out = json.loads(res.stdout)  # the result, still one JSON object
    assert out["summary"]["requests"] == 20
    assert res.stderr.strip().count("\n") == 0 and "/dev/full" in res.stderr and "Traceback" not in res.stderr


def test_each_record_carries_its_planned_request(h100_8b):
    """The simulator reads a RequestSpec by field name: each record's prompt and output tokens, arrival
    and prefix are those its plan entry gave (a reordered or added field would shift them)."""
    w = load_workload("support", requests=80, rate=4)  # conversations: turns released after think times
    plan = {s.request_id: s for s in w.specs()}
    recs = simulate(h100_8b, w).records()
    assert len(recs) == 80
    for r in recs:
        s = plan[r.request_id]
        assert (r.prompt_tokens, r.output_tokens) == (s.prompt_tokens, s.output_tokens)
        assert s.arrival_s is None or r.arrival_s == s.arrival_s
        assert r.cached_prompt_tokens <= s.prompt_tokens
    turns = [s for s in plan.values() if s.after is not None]
    assert turns and all(plan[s.after].conversation_id == s.conversation_id for s in turns)
