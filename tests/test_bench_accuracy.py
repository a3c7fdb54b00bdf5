"""Measurement accuracy against the fake server at 64 concurrent streams.

The fake server runs in its own process (its CPU apart from the client's) and records when it
received each request and wrote each chunk, on CLOCK_MONOTONIC, the client's own clock. So the
truth is per chunk: every measured gap is compared with the gap the server wrote, and every
first-token time with the server's first write.

Asserted: ITL (p50, mean) and TPOT within 1 ms of the set value; the client's TTFT within 1 ms of
the true one (the server's first write − the client's send), and each gap within 1 ms of the
server's (median and mean). TTFT against the *set* value also carries the request's trip to the
server and the server's own parsing; on an idle machine that is under a millisecond, on a shared
2-core one it is not, so that check has a wider bound."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import numpy as np
import pytest

from vazao.bench.client import Target
from vazao.bench.fake_server import FakeConfig, spawn
from vazao.bench.session import BenchConfig, run_bench

TTFT, ITL, OUT = 0.050, 0.020, 30


def _run(tmp_path, arrival: str, requests: int):
    wl = tmp_path / "flat.yaml"
    wl.write_text(f"name: flat\narrival: {arrival}\nprompt: 16\noutput: {OUT}\nrequests: {requests}\nseed: 3\n")
    with spawn(FakeConfig(ttft=TTFT, itl=ITL, record_times=True)) as url:
        cfg = BenchConfig(Target(url), workload=str(wl), records_path=tmp_path / "r.jsonl", progress=False)
        result = asyncio.run(run_bench(cfg))
        with urllib.request.urlopen(url.removesuffix("/v1") + "/stats/streams", timeout=10) as r:
            truth = json.loads(r.read())
    return result, truth


@pytest.mark.parametrize("arrival,requests", [
    # Poisson at 100/s with 0.63 s streams: about 64 in flight, arrivals spread out
    ("{kind: poisson, rate: 100}", 250),
    # closed loop: 64 streams that start together
    ("{kind: concurrency, concurrency: 64}", 128),
])
def test_ttft_and_itl_within_1ms_at_64_streams(tmp_path, arrival, requests):
    result, truth = _run(tmp_path, arrival, requests)
    lv = result.levels[0]
    s = lv.summary
    assert s.errors == 0 and s.requests == requests
    assert lv.peak_in_flight >= 55
    assert abs(s.itl_s.p50 - ITL) < 0.001, s.itl_s
    assert abs(s.itl_s.mean - ITL) < 0.001, s.itl_s
    assert abs(s.tpot_s.p50 - ITL) < 0.001, s.tpot_s

    origin = result.clock_origin
    gap_err, ttft_err = [], []
    for r in lv.records:
        t = truth[r.extra["response_id"]]
        times = t["times"]
        assert len(times) == len(r.itl_s) + 1 == OUT
        gap_err.extend(np.abs(np.asarray(r.itl_s) - np.diff(times)))
        true_ttft = times[0] - (r.arrival_s + origin)
        ttft_err.append(r.ttft_s - true_ttft)
    gap_err, ttft_err = np.asarray(gap_err), np.asarray(ttft_err)
    assert float(np.median(gap_err)) < 0.001
    # 64 synchronized streams deliver their chunks in one burst every ITL; the single event loop
    # reads them one after another, so individual gaps jitter by the burst's length
    assert float(gap_err.mean()) < (0.001 if "poisson" in arrival else 0.003)
    assert 0 <= float(np.median(ttft_err)) < 0.001, np.percentile(ttft_err, [50, 90, 99])
    assert abs(s.ttft_s.p50 - TTFT) < 0.005, s.ttft_s
