"""What a simulation measures while it runs, in memory that does not grow with tokens: per request a
few numbers, per step one pooled inter-token gap with its multiplicity, and a KV timeline thinned
to a fixed number of points."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

import numpy as np

from vazao.results import SLO, Latency, RequestRecord, RunSummary, summarize

_RECORD_FIELDS = tuple(RequestRecord.__dataclass_fields__)


def _record(*values) -> RequestRecord:
    """RequestRecord(*values), every field given, without one frozen __setattr__ per field (the same
    object, equal and with the same hash, at half the cost: summaries of 100,000 requests)."""
    obj = object.__new__(RequestRecord)
    obj.__dict__.update(zip(_RECORD_FIELDS, values, strict=True))
    return obj


@dataclass(frozen=True)
class TimelinePoint:
    t_s: float
    kv_used: float  # share of KV blocks allocated (reservations and in-use cache included)
    kv_tokens: float  # share of KV capacity holding live tokens of running requests
    running: int
    waiting: int
    preemptions: int  # cumulative

    def to_json(self) -> dict:
        return dict(self.__dict__)


class Stats:
    def __init__(self, timeline_points: int = 256):
        self.preemptions = 0
        self.prefill_tokens = 0
        self.cached_tokens = 0
        self.steps = 0
        self.busy_s = 0.0
        self.seq_s = 0.0  # Σ step time × sequences in the step
        self.peak_running = 0
        self.gap_s = array("d")
        self.gap_n = array("q")
        # per request, in completion order
        self.r_id: list[str] = []
        self.r_arrival = array("d")
        self.r_first = array("d")
        self.r_end = array("d")
        self.r_prompt = array("q")
        self.r_output = array("q")
        self.r_cached = array("q")
        self.r_preempt = array("q")
        self.r_counted = bytearray()
        self.r_error: dict[int, str] = {}
        # timeline
        self.points = max(8, timeline_points)
        self.timeline: list[TimelinePoint] = []
        self.sample_dt = 0.05
        self.next_sample = 0.0

    def step(self, dur: float, nseq: int, running: int) -> None:
        self.steps += 1
        self.busy_s += dur
        self.seq_s += dur * nseq
        if running > self.peak_running:
            self.peak_running = running

    def add_gaps(self, gap: float, count: int) -> None:
        self.gap_s.append(gap)
        self.gap_n.append(count)

    def add_gap(self, gap: float) -> None:
        self.gap_s.append(gap)
        self.gap_n.append(1)

    def record(self, seq, end_s: float | None, error: str | None = None) -> None:
        i = len(self.r_id)
        self.r_id.append(seq.rid)
        self.r_arrival.append(seq.arrival_s)
        self.r_first.append(math.nan if seq.first_s is None else seq.first_s)
        self.r_end.append(math.nan if end_s is None else end_s)
        self.r_prompt.append(seq.prompt)
        self.r_output.append(seq.output if error is None else 0)
        self.r_cached.append(seq.cached)
        self.r_preempt.append(seq.preemptions)
        self.r_counted.append(1 if seq.counted else 0)
        if error is not None:
            self.r_error[i] = error

    def sample(self, t: float, engines) -> None:
        used = blocks = tokens = running = waiting = 0
        for e in engines:
            used += e.pool.num_used
            blocks += e.pool.num_blocks
            tokens += e.kv_tokens()
            running += len(e.running)
            waiting += len(e.waiting)
        cap_tokens = sum(e.pool.num_blocks * e.bs for e in engines)
        self.timeline.append(TimelinePoint(t, used / blocks if blocks else 0.0,
                                           tokens / cap_tokens if cap_tokens else 0.0,
                                           running, waiting, self.preemptions))
        if len(self.timeline) > 2 * self.points:
            self.timeline = self.timeline[::2]
            self.sample_dt *= 2
        self.next_sample = t + self.sample_dt

    # ---- after the run ---------------------------------------------------------------------------
    def records(self, counted_only: bool = True) -> list[RequestRecord]:
        out = []
        nan = math.isnan
        for i, rid in enumerate(self.r_id):
            if counted_only and not self.r_counted[i]:
                continue
            first, end = self.r_first[i], self.r_end[i]
            extra = {"preemptions": self.r_preempt[i]} if self.r_preempt[i] else {}
            out.append(_record(rid, "simulated", self.r_arrival[i], self.r_prompt[i], self.r_output[i],
                                     None if nan(first) else first, None if nan(end) else end, (),
                                     self.r_cached[i], self.r_error.get(i), None, extra))
        return out

    def summary(self, slo: SLO | None) -> RunSummary:
        """summarize(self.records(), slo, pooled gaps) computed on the columns, without building
        100,000 records (tests hold the two equal)."""
        counted = np.frombuffer(bytes(self.r_counted), dtype=np.uint8).astype(bool)
        if not counted.any():
            return summarize([], slo)
        arrival = np.frombuffer(self.r_arrival, dtype=float)[counted]
        first = np.frombuffer(self.r_first, dtype=float)[counted]
        end = np.frombuffer(self.r_end, dtype=float)[counted]
        prompt = np.frombuffer(self.r_prompt, dtype=np.int64)[counted]
        output = np.frombuffer(self.r_output, dtype=np.int64)[counted]
        err = np.zeros(len(self.r_id), dtype=bool)
        err[list(self.r_error)] = True
        ok = ~err[counted] & ~np.isnan(first) & ~np.isnan(end)
        ended = end[~np.isnan(end)]
        duration = float((ended.max() if ended.size else arrival.min()) - arrival.min())
        a, f, e, p, o = arrival[ok], first[ok], end[ok], prompt[ok], output[ok]
        ttft, e2e = f - a, e - a
        multi = o >= 2
        tpot = (e[multi] - f[multi]) / (o[multi] - 1)
        gaps = np.frombuffer(self.gap_s, dtype=float)
        weights = np.frombuffer(self.gap_n, dtype=np.int64)
        rate = (lambda x: x / duration) if duration > 0 else (lambda x: 0.0)
        goodput = None
        if slo is not None:
            good = np.ones(int(ok.sum()), dtype=bool)
            tpot_all = np.full(good.size, np.nan)
            tpot_all[multi] = tpot
            values = {"ttft": ttft, "e2e": e2e, "tpot": tpot_all, "itl": tpot_all}
            for key, limit in slo.limits.items():
                v = values[key.split("_", 1)[0]]
                good &= ~(v > limit)  # NaN (no value) passes, as in SLO.request_ok
            goodput = rate(int(good.sum()))
        out_tok, in_tok = int(o.sum()), int(p.sum())
        return RunSummary(
            requests=int(counted.sum()), errors=int((~ok).sum()), duration_s=duration,
            ttft_s=Latency.of(ttft), itl_s=Latency.of(gaps, weights), tpot_s=Latency.of(tpot),
            e2e_s=Latency.of(e2e), request_throughput_per_s=rate(int(ok.sum())),
            output_tokens_per_s=rate(out_tok), total_tokens_per_s=rate(out_tok + in_tok),
            goodput_requests_per_s=goodput, source="simulated", prompt_tokens=in_tok, output_tokens=out_tok,
        )


def thin(points, n: int) -> list:
    """At most n points, evenly spaced through the run, the last one always kept."""
    pts = list(points)
    if len(pts) <= n:
        return pts
    step = len(pts) / n
    picked = [pts[int(i * step)] for i in range(n - 1)]
    return [*picked, pts[-1]]
