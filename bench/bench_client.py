"""Issue 4: the load generator's own cost and accuracy against the fake server streaming at
10 ms per token (TTFT 50 ms): 64 and 512 concurrent streams, closed loop, through the same code
path as `vazao bench` (records written, prompts built).

Truth is what the fake server actually did: it records the write time of every chunk
(time.perf_counter(), CLOCK_MONOTONIC, the same clock as the client's), so each measured gap is
compared with the server's own gap for the same chunk pair, and each chunk's delivery delay
(client read time − server write time) is measured directly.

Reported: client CPU µs per streamed chunk and share of one core, ITL error against the truth
(mean and p99 of |measured gap − server gap|), TTFT and ITL against the set values, and whether
the server kept its schedule (on 2 cores it competes with the client)."""

from __future__ import annotations

import asyncio
import json
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

from vazao.bench.client import Target
from vazao.bench.fake_server import FakeConfig, spawn
from vazao.bench.session import BenchConfig, run_bench

TTFT_S, ITL_S, OUTPUT = 0.050, 0.010, 100


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def measure(streams: int, rounds: int = 2) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        wl = Path(tmp) / "flat.yaml"
        wl.write_text(f"name: flat\narrival: {{kind: concurrency, concurrency: {streams}}}\n"
                      f"prompt: 32\noutput: {OUTPUT}\nrequests: {rounds * streams}\n")
        with spawn(FakeConfig(ttft=TTFT_S, itl=ITL_S, record_times=True)) as url:
            root = url.removesuffix("/v1")
            cfg = BenchConfig(Target(url), workload=str(wl), records_path=Path(tmp) / "r.jsonl", progress=False,
                              max_connections=4096)
            result = asyncio.run(run_bench(cfg))
            truth = _get(root + "/stats/streams")
            server = _get(root + "/stats")
    lv = result.levels[0]
    s, cpu = lv.summary, lv.cpu
    origin = result.clock_origin
    gap_err, delay = [], []
    for r in lv.records:
        times = (truth.get(str(r.extra.get("response_id"))) or {}).get("times")
        if not r.ok or not times or len(times) != len(r.itl_s) + 1:
            continue
        server_gaps = np.diff(times)
        gap_err.extend(np.abs(np.asarray(r.itl_s) - server_gaps))
        delay.append(r.first_token_s + origin - times[0])
    gap_err = np.asarray(gap_err)
    return {
        "streams": streams,
        "requests_ok": s.requests - s.errors,
        "errors": lv.errors,
        "chunks": cpu.chunks,
        "wall_s": round(cpu.wall_s, 2),
        "client_cpu_us_per_chunk": round(cpu.us_per_chunk, 1) if cpu.us_per_chunk else None,
        "client_share_of_core": round(cpu.share_of_core, 3),
        "client_loop_lag_p99_ms": round(cpu.loop_lag_p99_s * 1e3, 2) if cpu.loop_lag_p99_s else None,
        "itl_abs_error_vs_truth_mean_ms": round(float(gap_err.mean()) * 1e3, 3) if gap_err.size else None,
        "itl_abs_error_vs_truth_p99_ms": round(float(np.percentile(gap_err, 99)) * 1e3, 3) if gap_err.size else None,
        "first_chunk_delivery_delay_p50_ms": round(float(np.median(delay)) * 1e3, 3) if delay else None,
        "first_chunk_delivery_delay_p99_ms": round(float(np.percentile(delay, 99)) * 1e3, 3) if delay else None,
        "ttft_mean_ms": round(s.ttft_s.mean * 1e3, 3), "ttft_p50_ms": round(s.ttft_s.p50 * 1e3, 3),
        "ttft_set_ms": TTFT_S * 1e3,
        "itl_mean_ms": round(s.itl_s.mean * 1e3, 3), "itl_p50_ms": round(s.itl_s.p50 * 1e3, 3),
        "itl_set_ms": ITL_S * 1e3,
        "server_ttft_mean_ms": round(server["ttft_mean_s"] * 1e3, 3),
        "server_gap_mean_ms": round(server["gap_mean_s"] * 1e3, 3),
        "server_late_mean_ms": round(server["late_mean_s"] * 1e3, 3),
        "server_kept_schedule": server["late_mean_s"] < 0.002,
        "client_warnings": lv.cpu.warnings(),
    }


def run() -> dict:
    return {"fake_server": {"ttft_ms": TTFT_S * 1e3, "itl_ms": ITL_S * 1e3, "output_tokens": OUTPUT},
            "levels": [measure(64), measure(512)]}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
