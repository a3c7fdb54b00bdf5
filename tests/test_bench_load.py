"""Load patterns against the fake server: closed loop, Poisson open loop, trace replay, bursts,
multi-turn conversations, warm-up exclusion, time bounds, sweeps and the search for the highest
load that meets an SLO."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from vazao.errors import VazaoError
from vazao.loadgen.client import Target
from vazao.loadgen.records import read_log
from vazao.loadgen.session import BenchConfig, run_bench
from vazao.results import SLO


def workload(tmp_path, body: str, name: str = "w") -> str:
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\n{body}\n")
    return str(p)


def bench(url: str, wl: str, tmp_path, **kw):
    cfg = BenchConfig(Target(url), workload=wl, records_path=tmp_path / "run.jsonl", progress=False, **kw)
    return asyncio.run(run_bench(cfg))


def test_closed_loop_keeps_concurrency_and_excludes_warmup(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: concurrency, concurrency: 4}\nprompt: 20\noutput: 12\n"
                            "requests: 20\nwarmup: 4")
    res = bench(fake_llm.url, wl, tmp_path)
    lv = res.levels[0]
    assert len(lv.warmup) == 4 and len(lv.records) == 16 and lv.summary.requests == 16
    assert lv.summary.errors == 0 and lv.peak_in_flight == 4
    assert all(r.output_tokens == 12 for r in lv.records)
    # prompts sized from the server's usage on two probes: 20 tokens asked, 20 sent
    assert all(r.prompt_tokens == 20 for r in lv.records)
    log = read_log(tmp_path / "run.jsonl")
    assert len(log.records) == 16 and len(log.warmup) == 4 and log.meta["workload"] == "w"
    assert {"server", "end", "probe"} <= set(log.notes)
    out = res.to_json()
    assert out["summary"].requests == 16 and out["run"]["warmup_requests"] == 4
    assert out["tokens"] == {"output": {"usage": 16}, "prompt": {"usage": 16}}


def test_poisson_open_loop_follows_the_schedule(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: poisson, rate: 40}\nprompt: 10\noutput: 5\nrequests: 40\nseed: 7")
    res = bench(fake_llm.url, wl, tmp_path)
    lv = res.levels[0]
    assert lv.summary.requests == 40 and lv.summary.errors == 0
    lags = [r.arrival_s - r.extra["scheduled_s"] for r in lv.records]
    assert min(lags) > -0.001  # never early
    # sent when planned, late only by the scheduling delay the run itself measured on its loop
    assert float(np.median(lags)) < 0.01 + (lv.cpu.loop_lag_p99_s or 0.0) and max(lags) < 2.0
    # the schedule itself (the workload's own clock, not this machine's): 40 arrivals at 40/s span ~1 s
    planned = sorted(r.extra["scheduled_s"] for r in lv.records)
    assert 0.5 < planned[-1] - planned[0] < 2.5
    # and the requests went out across it, not all at once: the last left no sooner than planned
    assert max(r.arrival_s for r in lv.records) >= planned[-1] - 0.001


def test_poisson_open_loop_on_uvloop_is_never_early(fake_llm, tmp_path):
    """uvloop's timers work in whole milliseconds and can wake a sleep up to one early."""
    pytest.importorskip("uvloop")
    from vazao.loadgen.loop import run

    wl = workload(tmp_path, "arrival: {kind: poisson, rate: 80}\nprompt: 10\noutput: 5\nrequests: 60\nseed: 7")
    cfg = BenchConfig(Target(fake_llm.url), workload=wl, records_path=tmp_path / "run.jsonl", progress=False)
    res = run(run_bench(cfg), loop="uvloop")
    assert res.event_loop == "uvloop" and res.to_json()["client"]["event_loop"] == "uvloop"
    lv = res.levels[0]
    assert lv.summary.requests == 60 and lv.summary.errors == 0
    lags = [r.arrival_s - r.extra["scheduled_s"] for r in lv.records]
    assert min(lags) >= 0  # never early: the point of the test, exact on any machine
    # late only by what the machine's scheduling made late (the loop's own lag, as this run measured it)
    assert float(np.median(lags)) < 0.01 + (lv.cpu.loop_lag_p99_s or 0.0) and max(lags) < 2.0


def test_trace_replay_and_burst(fake_llm, tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,prompt_tokens,output_tokens\n0,10,4\n0.1,12,6\n0.3,14,8\n")
    wl = workload(tmp_path, f"arrival: {{kind: trace, file: {trace}}}\nprompt: 5\noutput: 5")
    res = bench(fake_llm.url, wl, tmp_path)
    recs = sorted(res.levels[0].records, key=lambda r: r.arrival_s)
    assert [r.output_tokens for r in recs] == [4, 6, 8]
    t0 = recs[0].arrival_s
    assert [round(r.arrival_s - t0, 1) for r in recs] == [0.0, 0.1, 0.3]


def test_multi_turn_conversations_resend_history(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: concurrency, concurrency: 2}\nprompt: 8\noutput: 6\n"
                            "prefixes: [{id: sys, tokens: 30, share: 1.0}]\n"
                            "conversation: {turns: 3, think_time_s: 0.05}\nrequests: 6")
    res = bench(fake_llm.url, wl, tmp_path)
    recs = res.levels[0].records
    assert len(recs) == 6 and all(r.ok for r in recs)
    by_conv: dict = {}
    for r in recs:
        by_conv.setdefault(r.extra["conversation_id"], []).append(r)
    assert len(by_conv) == 2
    for turns in by_conv.values():
        turns.sort(key=lambda r: r.extra["turn"])
        assert [r.extra["turn"] for r in turns] == [1, 2, 3]
        for prev, nxt in zip(turns, turns[1:], strict=False):
            # the next turn waits for the previous answer and the think time
            assert nxt.arrival_s >= prev.end_s + 0.05
            # and resends the previous prompt and answer (+ the new user message and its overhead)
            assert nxt.prompt_tokens > prev.prompt_tokens + prev.output_tokens


def test_duration_bounds_a_level(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: concurrency, concurrency: 2}\nprompt: 8\noutput: 50\nrequests: 1000")
    url = fake_llm.url.replace("/v1", "/cfg/itl=10ms/v1")
    res = bench(url, wl, tmp_path, duration_s=1.0, drain_s=0.2)
    lv = res.levels[0]
    assert lv.stopped == "duration"
    assert 0 < lv.summary.requests < 20
    assert lv.not_sent > 900
    # the whole plan would take 1000 requests × 50 tokens × 10 ms / 2 slots = 250 s; the level ended
    # far sooner (a factor of 10 of margin for a loaded machine)
    assert lv.cpu.wall_s < 250 / 10
    # requests cut off by the drain limit are counted, not dropped
    assert sum(1 for r in lv.records if r.error) == lv.errors.get("cancelled", 0)
    assert any("not sent" in w for w in res.warnings)


def test_sweep_over_concurrency(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: concurrency, concurrency: 1}\nprompt: 8\noutput: 8\nrequests: 8")
    res = bench(fake_llm.url, wl, tmp_path, concurrency=[1, 2, 4])
    assert [lv.level for lv in res.levels] == [{"concurrency": 1}, {"concurrency": 2}, {"concurrency": 4}]
    assert [lv.peak_in_flight for lv in res.levels] == [1, 2, 4]
    out = res.to_json()
    assert [p["concurrency"] for p in out["points"]] == [1, 2, 4]
    assert out["summary"] == res.levels[-1].summary
    log = read_log(tmp_path / "run.jsonl")
    assert sorted(log.by_point) == [0, 1, 2] and [p["concurrency"] for p in log.points] == [1, 2, 4]


def test_sweep_over_rate(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: poisson, rate: 1}\nprompt: 8\noutput: 4\nrequests: 10")
    res = bench(fake_llm.url, wl, tmp_path, rate=[20.0, 40.0])
    assert [p["rate"] for p in res.to_json()["points"]] == [20.0, 40.0]
    assert all(lv.summary.requests == 10 and lv.summary.errors == 0 for lv in res.levels)


def test_find_max_concurrency_under_an_slo(fake_llm, tmp_path):
    # two slots, 95 ms per request: TTFT grows by a service time per request queued (50 ms with a
    # free slot, ~145 ms queued behind one); the SLO sits 70 ms above the first and 25 ms below the
    # second, and a loaded machine only makes latencies longer
    url = fake_llm.url.replace("/v1", "/cfg/slots=2,ttft=50ms,itl=5ms/v1")
    wl = workload(tmp_path, "arrival: {kind: concurrency, concurrency: 1}\nprompt: 8\noutput: 10\nrequests: 16")
    slo = SLO.parse("ttft_p95=120ms")
    res = bench(url, wl, tmp_path, concurrency=[1], find_max=True, slo=slo)
    assert res.search == "concurrency"
    tried = [lv.level["concurrency"] for lv in res.levels]
    assert tried[:3] == [1, 2, 4] and len(tried) <= 8
    met = {lv.level["concurrency"]: slo.met_by(lv.summary) for lv in res.levels}
    assert met[1] and met[2] and not all(met.values())
    best = res.best.level["concurrency"]
    assert met[best] and all(not ok for c, ok in met.items() if c > best)
    assert 2 <= best <= 5
    out = json.loads(json.dumps(res.to_json(), default=lambda o: o.to_json()))
    assert out["max_concurrency"] == best and len(out["points"]) == len(tried)


def test_find_max_needs_an_slo(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: poisson, rate: 1}\nprompt: 8\noutput: 4\nrequests: 4")
    with pytest.raises(VazaoError, match="find_max needs an SLO"):
        bench(fake_llm.url, wl, tmp_path, find_max=True)


def test_invalid_workload_fails_before_any_traffic(fake_llm, tmp_path):
    wl = workload(tmp_path, "arrival: {kind: poisson}\nprompt: 8\noutput: 4\nrequests: 4")
    with pytest.raises(VazaoError, match="rate"):
        bench(fake_llm.url, wl, tmp_path)
    assert not (tmp_path / "run.jsonl").exists()
