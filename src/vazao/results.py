"""The one result type: RequestRecord per request, RunSummary per run, measured or predicted.

Metric definitions (stated once; docs/metrics.md repeats them):
- TTFT: from just before the request is sent (or, simulated, from its arrival) to the first
  chunk with non-empty content.
- ITL: every gap between consecutive content chunks, pooled over all requests.
- TPOT: per request, (E2E − TTFT) / (output tokens − 1); it excludes the first token.
- E2E: from send/arrival to the last content chunk.
Peers differ: guidellm's "ITL" is this TPOT and its "TPOT" includes TTFT; AIPerf's "ITL" is this TPOT.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

PERCENTILES = (50, 90, 95, 99)
SOURCES = ("measured", "simulated", "analytic")

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


class GapWindows(Sequence[float]):
    """A request's inter-token gaps held as windows onto shared arrays of step gaps.

    In a simulator every sequence decoding in an engine step sees that step's duration as its gap,
    so the gaps of 100,000 requests × hundreds of tokens are a few hundred thousand step durations
    shared by all: a request keeps (track, start, stop) windows onto them, not one float per token.
    It reads as the sequence of floats it stands for (len, iteration, indexing, ==), so JSON and SLO
    checks see the gaps themselves; summarize() pools the windows without expanding them."""

    __slots__ = ("tracks", "windows")

    def __init__(self, tracks: Sequence[FloatArray], windows: tuple[int, ...]) -> None:
        self.tracks = tracks  # shared by every record of a run
        self.windows = windows  # flat (track, start, stop) triples, in time order

    def _spans(self) -> Iterator[FloatArray]:
        w = self.windows
        for i in range(0, len(w), 3):
            yield self.tracks[w[i]][w[i + 1]:w[i + 2]]

    def __len__(self) -> int:
        w = self.windows
        return sum(w[i + 2] - w[i + 1] for i in range(0, len(w), 3))

    def __iter__(self) -> Iterator[float]:
        for span in self._spans():
            yield from span.tolist()

    @overload
    def __getitem__(self, i: int) -> float: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[float, ...]: ...

    def __getitem__(self, i: int | slice) -> float | tuple[float, ...]:
        return tuple(self)[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (GapWindows, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"GapWindows({len(self)} gaps)"

    def max(self) -> float | None:
        peaks = [float(s.max()) for s in self._spans() if s.size]
        return max(peaks) if peaks else None


def _max_gap(gaps: Sequence[float]) -> float | None:
    if isinstance(gaps, GapWindows):
        return gaps.max()
    return max(gaps) if gaps else None


@dataclass(frozen=True)
class RequestRecord:
    """One request's life. Times are seconds on the run's clock (0 = run start)."""

    request_id: str
    source: str  # measured | simulated | analytic
    arrival_s: float  # sent (measured) or arrived (simulated)
    prompt_tokens: int
    output_tokens: int
    first_token_s: float | None = None
    end_s: float | None = None
    # Gaps between consecutive content chunks; empty when only summary times are kept. The simulator
    # fills it with a GapWindows (the same floats, held compactly); JSON always has the plain list.
    itl_s: Sequence[float] = ()
    cached_prompt_tokens: int = 0
    error: str | None = None
    status: int | None = None
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.first_token_s is not None and self.end_s is not None

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_s is None else self.first_token_s - self.arrival_s

    @property
    def e2e_s(self) -> float | None:
        return None if self.end_s is None else self.end_s - self.arrival_s

    @property
    def tpot_s(self) -> float | None:
        """(E2E − TTFT) / (output tokens − 1); None for one-token answers."""
        first, end = self.first_token_s, self.end_s
        if not self.ok or first is None or end is None or self.output_tokens < 2:  # ok: neither is None
            return None
        return (end - first) / (self.output_tokens - 1)

    def to_json(self) -> dict[str, Any]:
        # not asdict(): it would deep-copy a GapWindows' shared tracks for every record
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["itl_s"] = list(self.itl_s)
        d["extra"] = dict(self.extra)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RequestRecord:
        d = dict(d)
        d["itl_s"] = tuple(d.get("itl_s") or ())
        d["extra"] = dict(d.get("extra") or {})
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass(frozen=True)
class Latency:
    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None

    @classmethod
    def of(cls, values: Iterable[float] | FloatArray, weights: Iterable[int] | IntArray | None = None) -> Latency:
        """Mean and percentiles; with integer `weights`, exactly those of each value repeated that
        many times (np.percentile's linear rule), without building the repeated array."""
        arr = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float)
        if weights is not None:
            return cls._weighted(arr, np.asarray(weights if isinstance(weights, np.ndarray) else list(weights),
                                                 dtype=np.int64))
        if arr.size == 0:
            return cls(None, None, None, None, None)
        p = np.percentile(arr, PERCENTILES)
        return cls(float(arr.mean()), *(float(x) for x in p))

    @classmethod
    def _weighted(cls, arr: FloatArray, w: IntArray) -> Latency:
        if not (arr.size and (w > 0).all() and (arr[1:] >= arr[:-1]).all()):
            # pooled_gaps' output is already sorted with positive weights: a stable sort would leave it as it is
            keep = w > 0
            arr, w = arr[keep], w[keep]
            if arr.size == 0:
                return cls(None, None, None, None, None)
            order = np.argsort(arr, kind="stable")
            arr, w = arr[order], w[order]
            del order
        cum = np.cumsum(w)
        n = int(cum[-1])
        out = []
        for p in PERCENTILES:
            pos = p / 100.0 * (n - 1)
            lo = math.floor(pos)
            hi = min(lo + 1, n - 1)
            v_lo = arr[np.searchsorted(cum, lo, side="right")]
            v_hi = arr[np.searchsorted(cum, hi, side="right")]
            out.append(float(v_lo + (v_hi - v_lo) * (pos - lo)))
        del cum  # before the product's float copy of the weights
        # numpy's own pairwise sum, not a BLAS dot: a dot's result moves in the last bit with the BLAS thread
        # count (a Ray worker runs one thread), and the same run must give the same summary wherever it runs
        return cls(float(np.sum(arr * w) / n), *out)

    def get(self, name: str) -> float | None:
        value: float | None = getattr(self, name)
        return value


# The SLO plan and cost hold a deployment to when the user gives none: a chat-like service.
DEFAULT_SLO = "ttft_p95=1s,tpot_p95=50ms"


@dataclass(frozen=True)
class SLO:
    """Per-metric limits, e.g. {'ttft_p95': 0.5, 'tpot_p95': 0.05}; a request meets the SLO
    when each of its own values is within the limit (the percentile says which share must).
    `judge` says how a prediction is held to a limit: `band` (its 80% band's pessimistic edge must be
    within it: one chance in ten that the measured value is worse) or `prediction` (the predicted value
    itself: an even chance; the band is still shown)."""

    limits: Mapping[str, float]
    judge: str = "band"

    METRICS = ("ttft", "tpot", "e2e", "itl")
    JUDGES = ("band", "prediction")

    def __post_init__(self) -> None:
        if self.judge not in self.JUDGES:
            from vazao.errors import VazaoError

            raise VazaoError(f"SLO judge {str(self.judge)[:40]!r}: expected one of {', '.join(self.JUDGES)}")

    @property
    def held(self) -> str:
        """How the limits are held, in words (what plan and cost print beside them)."""
        return ("each held at the prediction (--judge prediction)" if self.judge == "prediction"
                else "each held at its band's pessimistic edge")

    def judged_by(self, judge: str | None) -> SLO:
        """These limits held by `judge` (None: as they are)."""
        return self if judge is None or judge == self.judge else SLO(dict(self.limits), judge)

    @classmethod
    def parse(cls, text: str) -> SLO:
        from vazao.errors import VazaoError
        from vazao.inputs import split_list
        from vazao.units import parse_duration

        if not str(text).strip():
            raise VazaoError("empty SLO; give e.g. ttft_p95=500ms,tpot_p95=50ms")
        limits: dict[str, float] = {}
        pcts = ", ".join(f"p{q}" for q in PERCENTILES)
        for part in split_list(text, "slo", max_items=32):
            if "=" not in part:
                raise VazaoError(f"SLO term {part[:60]!r}: expected metric_pNN=duration, e.g. ttft_p95=500ms")
            key, value = (s.strip() for s in part.split("=", 1))
            metric, _, pct = key.partition("_")
            if metric not in cls.METRICS or pct not in ("mean", *(f"p{q}" for q in PERCENTILES)):
                raise VazaoError(f"SLO term {key[:60]!r}: metric must be ttft|tpot|e2e|itl with _mean or a "
                                 f"percentile the summary has ({pcts})")
            limits[key] = parse_duration(value)
        return cls(limits)

    def request_ok(self, r: RequestRecord) -> bool:
        if not r.ok:
            return False
        for key, limit in self.limits.items():
            metric = key.split("_", 1)[0]
            if metric == "itl":
                value = _max_gap(r.itl_s) if len(r.itl_s) else r.tpot_s
            else:
                value = getattr(r, f"{metric}_s")
            if value is not None and value > limit:
                return False
        return True

    def met_by(self, summary: RunSummary) -> bool:
        """Whether the run's percentiles are within every limit."""
        for key, limit in self.limits.items():
            metric, pct = key.split("_", 1)
            value = getattr(summary, f"{metric}_s").get(pct)
            if value is None or value > limit:
                return False
        return True


# The latencies a RunSummary holds, as every summary table names them (console, HTML, a comparison of runs).
LATENCIES = (("TTFT", "ttft_s"), ("ITL", "itl_s"), ("TPOT", "tpot_s"), ("E2E", "e2e_s"))


@dataclass(frozen=True)
class RunSummary:
    requests: int
    errors: int
    duration_s: float
    ttft_s: Latency
    itl_s: Latency
    tpot_s: Latency
    e2e_s: Latency
    request_throughput_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    goodput_requests_per_s: float | None = None
    source: str = "measured"
    prompt_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        d = {k: (asdict(v) if isinstance(v, Latency) else v) for k, v in self.__dict__.items()}
        if d["goodput_requests_per_s"] is None:
            del d["goodput_requests_per_s"]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunSummary:
        kw = dict(d)
        for k in ("ttft_s", "itl_s", "tpot_s", "e2e_s"):
            kw[k] = Latency(**kw[k])
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in kw.items() if k in known})


def pooled_gaps(records: Sequence[RequestRecord]) -> tuple[FloatArray, IntArray]:
    """Every inter-token gap of the records as (sorted distinct values, how many times each occurs).

    Plain gaps count once each; a GapWindows adds one to every step its windows cover (counted from
    the windows' sorted ends, so the cost is steps + windows, not tokens). Records that kept no gaps
    stand for their (output tokens − 1) gaps with their TPOT. Whatever the producer, the same
    multiset of gaps gives the same arrays, so a simulated run and its records read back from JSONL
    summarise to the same numbers."""
    plain: list[float] = []
    tpot_v: list[float] = []
    tpot_w: list[int] = []
    spans: dict[int, tuple[FloatArray, list[int], list[int]]] = {}
    for r in records:
        gaps = r.itl_s
        if isinstance(gaps, GapWindows):
            w = gaps.windows
            for i in range(0, len(w), 3):
                track = gaps.tracks[w[i]]
                entry = spans.get(id(track))
                if entry is None:
                    entry = spans[id(track)] = (track, [], [])
                entry[1].append(w[i + 1])
                entry[2].append(w[i + 2])
        elif gaps:
            plain.extend(gaps)
        elif r.output_tokens >= 2 and (t := r.tpot_s) is not None:
            tpot_v.append(t)
            tpot_w.append(r.output_tokens - 1)
    parts: list[tuple[FloatArray, Weights]] = []
    if plain:
        parts.append((np.asarray(plain, dtype=float), lambda i, j: np.ones(j - i, dtype=np.int64)))
    elif not spans and tpot_v:  # only a producer that kept no gaps at all is stood in for by its TPOTs
        tw = np.asarray(tpot_w, dtype=np.int64)
        parts.append((np.asarray(tpot_v, dtype=float), lambda i, j: tw[i:j]))
    parts += [(track, coverage(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)))
              for track, a, b in spans.values()]
    return merge_counts(parts)


Weights = Callable[[int, int], IntArray]  # the weights of values[i:j], made a slice at a time


def coverage(start: IntArray, stop: IntArray) -> Weights:
    """How many of the windows [start, stop) cover each step: begun by it less ended by it, made a
    chunk at a time (a track is millions of steps; a weight array as long would be 25 MB)."""
    start, stop = np.sort(start), np.sort(stop)

    def weights(i: int, j: int) -> IntArray:
        steps = np.arange(i, j)
        return start.searchsorted(steps, "right") - stop.searchsorted(steps, "right")

    return weights


def window_gaps(tracks: Sequence[FloatArray], track: IntArray, start: IntArray,
                stop: IntArray) -> tuple[FloatArray, IntArray]:
    """pooled_gaps() of GapWindows given as columns, one row per window (track index, start, stop)."""
    return merge_counts([(values, coverage(start[track == k], stop[track == k]))
                         for k, values in enumerate(tracks) if (track == k).any()])


_CHUNK = 1 << 18


def merge_counts(parts: Sequence[tuple[FloatArray, Weights]]) -> tuple[FloatArray, IntArray]:
    """(values, weights) pairs merged into (sorted distinct values, total weight of each), values whose
    total is zero left out: what a stable sort of the concatenation and a merge of its runs of equal
    values give, with one sorted copy of one part at a time and no permutation (a simulated run's
    track is millions of steps: each array as long as it is 25 MB)."""
    parts = [(np.asarray(v, dtype=float), w) for v, w in parts if len(v)]
    if not parts:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    distinct = [_distinct(v) for v, _ in parts]
    found = [d for d in distinct if d is not None]
    if len(found) < len(distinct):
        del distinct, found
        return _merge_by_permutation(np.concatenate([v for v, _ in parts]),
                                     np.concatenate([w(0, len(v)) for v, w in parts]))
    del distinct
    uniq = found[0] if len(found) == 1 else _distinct(np.concatenate(found))
    del found
    assert uniq is not None  # parts without a NaN or a -0.0 make a whole without either
    counts = np.zeros(uniq.size, dtype=np.int64)
    for values, weights in parts:
        for i in range(0, values.size, _CHUNK):  # integer sums: any order gives the same totals
            j = min(i + _CHUNK, values.size)
            np.add.at(counts, uniq.searchsorted(values[i:j]), weights(i, j))
    keep = counts > 0
    if keep.all():
        return uniq, counts
    return uniq[keep], counts[keep]


def _distinct(values: FloatArray) -> FloatArray | None:
    """The distinct values, sorted; None where an unstable sort could change the outcome (a NaN is a
    run of its own, and which of -0.0 and 0.0 comes first names their run)."""
    v = np.sort(values)  # in place on its copy: a stable sort would take another half as much
    if np.isnan(v[-1]) or (v[0] <= 0.0 and np.signbit(v[v == 0.0]).any()):
        return None
    first = np.empty(v.size, dtype=bool)
    first[0] = True
    np.not_equal(v[1:], v[:-1], out=first[1:])
    return v[first]


def _merge_by_permutation(v: FloatArray, w: IntArray) -> tuple[FloatArray, IntArray]:
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
    counts = np.add.reduceat(w, starts).astype(np.int64)
    uniq = v[starts]
    keep = counts > 0
    return uniq[keep], counts[keep]


@dataclass(frozen=True)
class Background:
    """Requests a summary leaves out of its latencies (a run's warm-up) but whose work falls in its window: the
    engine served them there, so the window's throughput counts it (each ok record's first token, prompt, end)."""

    first_token_s: FloatArray
    end_s: FloatArray
    prompt_tokens: IntArray
    output_tokens: IntArray

    @classmethod
    def of(cls, records: Iterable[RequestRecord]) -> Background:
        done = [(r.first_token_s, r.end_s, r.prompt_tokens, r.output_tokens) for r in records
                if r.error is None and r.first_token_s is not None and r.end_s is not None]
        cols = list(zip(*done, strict=True)) if done else [(), (), (), ()]
        return cls(np.array(cols[0], dtype=float), np.array(cols[1], dtype=float),
                   np.array(cols[2], dtype=np.int64), np.array(cols[3], dtype=np.int64))

    def within(self, start: float, stop: float) -> tuple[float, float, float]:
        """(requests, prompt tokens, output tokens) of the window [start, stop]: each record's output tokens
        made in it (its first token where it came, the rest spread evenly up to its end: the records keep no
        per-token times), and that share of it as a request and of its prompt, so that the window's rates
        stay one request's mix (requests × mean answer = output tokens)."""
        first, end, out = self.first_token_s, self.end_s, self.output_tokens
        if not first.size:
            return 0.0, 0.0, 0.0
        head = ((first >= start) & (first <= stop)).astype(float)
        rest = np.maximum(out - 1, 0).astype(float)
        span = end - first
        overlap = np.clip(np.minimum(end, stop) - np.maximum(first, start), 0.0, None)
        spread = np.where(span > 0, overlap / np.where(span > 0, span, 1.0), head)
        made = head + rest * spread
        share = made / np.maximum(out, 1)
        return float(share.sum()), float((self.prompt_tokens * share).sum()), float(made.sum())


def _window(duration_s: float, start: float | None, background: Background | None) -> tuple[float, float, float]:
    if background is None or start is None:
        return 0.0, 0.0, 0.0
    return background.within(start, start + duration_s)


def summarize(
    records: Sequence[RequestRecord],
    slo: SLO | None = None,
    duration_s: float | None = None,
    itl_gaps: FloatArray | None = None,
    itl_weights: IntArray | None = None,
    background: Background | None = None,
) -> RunSummary:
    """Percentiles and throughputs over a run's records: the one summary every producer (bench,
    simulator, a records file read back) goes through.

    duration_s defaults to first arrival → last completion. ITL pools every gap of the ok records
    (see pooled_gaps); `itl_gaps` (with `itl_weights`, how many times each occurred) overrides it.
    `background`: the records left out (the warm-up), whose work inside that window its throughputs count."""
    # the properties (ok, ttft_s, e2e_s, tpot_s) spelled out: the same arithmetic, once per record
    done = [(r, first, end) for r in records
            if r.error is None and (first := r.first_token_s) is not None and (end := r.end_s) is not None]
    ok = [r for r, _, _ in done]
    start = min(r.arrival_s for r in records) if records else None
    if duration_s is None:
        if start is not None:
            ends = [r.end_s for r in records if r.end_s is not None] or [start]
            duration_s = max(ends) - start
        else:
            duration_s = 0.0
    if itl_gaps is None:
        itl_gaps, itl_weights = pooled_gaps(ok)
    return _assemble(
        records[0].source if records else "measured", len(records), len(ok), float(duration_s),
        sum(r.prompt_tokens for r in ok), sum(r.output_tokens for r in ok),
        Latency.of([first - r.arrival_s for r, first, _ in done]), Latency.of(itl_gaps, itl_weights),
        Latency.of([(end - first) / (r.output_tokens - 1) for r, first, end in done if r.output_tokens >= 2]),
        Latency.of([end - r.arrival_s for r, _, end in done]), sum(slo.request_ok(r) for r in ok) if slo else None,
        _window(float(duration_s), start, background))


@dataclass(frozen=True)
class RecordColumns:
    """A run's records as columns, for a producer that holds them so (the simulator): one row per
    record, times NaN where a record's is None, and its gap windows one row each (the record's row,
    a track index into `tracks`, start, stop)."""

    source: str
    arrival_s: FloatArray
    first_token_s: FloatArray
    end_s: FloatArray
    prompt_tokens: IntArray
    output_tokens: IntArray
    failed: BoolArray  # the record has an error
    tracks: Sequence[FloatArray]
    window_row: IntArray
    window_track: IntArray
    window_start: IntArray
    window_stop: IntArray


def summarize_columns(cols: RecordColumns, slo: SLO | None = None,
                      records: Callable[[], Iterable[RequestRecord]] | None = None,
                      background: Background | None = None) -> RunSummary:
    """summarize() of the records the columns stand for, the same numbers to the last bit (the same
    float operations in the same order) without building them; `records` yields them one at a time,
    for an SLO's per-request check."""
    ok = ~cols.failed & ~np.isnan(cols.first_token_s) & ~np.isnan(cols.end_s)
    n = len(cols.arrival_s)
    duration_s = 0.0
    start = None
    if n:
        start = float(cols.arrival_s.min())
        ends = cols.end_s[~np.isnan(cols.end_s)]
        duration_s = float((ends.max() if ends.size else start) - start)
    arrival, first, end, out = cols.arrival_s[ok], cols.first_token_s[ok], cols.end_s[ok], cols.output_tokens[ok]
    many = out >= 2
    tpot = (end[many] - first[many]) / (out[many] - 1)
    sel = ok[cols.window_row]
    if sel.any():
        gaps, weights = window_gaps(cols.tracks, cols.window_track[sel], cols.window_start[sel],
                                    cols.window_stop[sel])
    else:  # no record kept gaps: each stands for its (output tokens − 1) gaps with its TPOT, as in pooled_gaps
        tw = out[many] - 1
        gaps, weights = merge_counts([(tpot, lambda i, j: tw[i:j])])
    good = None
    if slo:
        if records is None:
            raise ValueError("summarize_columns: an SLO needs the records, one at a time, for its per-request check")
        good = sum(slo.request_ok(r) for r in records())
    return _assemble(cols.source, n, int(ok.sum()), duration_s, int(cols.prompt_tokens[ok].sum()), int(out.sum()),
                     Latency.of(first - arrival), Latency.of(gaps, weights), Latency.of(tpot),
                     Latency.of(end - arrival), good, _window(duration_s, start, background))


def _assemble(source: str, requests: int, ok: int, duration_s: float, in_tok: int, out_tok: int, ttft: Latency,
              itl: Latency, tpot: Latency, e2e: Latency, good: int | None,
              extra: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> RunSummary:
    """`extra`: (requests ended, prompt and output tokens) of the left-out records inside the window, which the
    throughputs count (Background.within); the latencies and token totals are the counted records' alone."""
    dur = duration_s if duration_s > 0 else math.nan
    x_req, x_in, x_out = extra

    def rate(x: float) -> float:
        return 0.0 if math.isnan(dur) else x / dur

    return RunSummary(
        requests=requests, errors=requests - ok, duration_s=duration_s, ttft_s=ttft, itl_s=itl, tpot_s=tpot,
        e2e_s=e2e, request_throughput_per_s=rate(ok + x_req) if x_req else rate(ok),
        output_tokens_per_s=rate(out_tok + x_out) if x_out else rate(out_tok),
        total_tokens_per_s=rate(out_tok + in_tok + x_out + x_in) if (x_out or x_in) else rate(out_tok + in_tok),
        # the counted requests' share that met the SLO, of every request the window completed
        goodput_requests_per_s=None if good is None else rate(good * (ok + x_req) / ok if x_req and ok else good),
        source=source, prompt_tokens=in_tok, output_tokens=out_tok)


@dataclass(frozen=True)
class TaskSummary:
    """A run's requests grouped into tasks (an agent task: its agents' calls and the merge), a task's
    figures over the requests it made. A task counts as done when every request of it ended well;
    its end-to-end time runs from its first request's arrival to its last request's last token."""

    tasks: int  # done
    incomplete: int  # a request failed, or never ran
    duration_s: float  # the run's: first arrival → last completion, over every record
    e2e_s: Latency  # per done task
    requests_per_task: float  # means over the done tasks
    prompt_tokens_per_task: float
    output_tokens_per_task: float
    cached_prompt_tokens_per_task: float  # what the prefix cache served (0 where the producer cannot tell)

    @property
    def tasks_per_s(self) -> float:
        return self.tasks / self.duration_s if self.duration_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        d = {k: (asdict(v) if isinstance(v, Latency) else v) for k, v in self.__dict__.items()}
        d["tasks_per_s"] = self.tasks_per_s
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TaskSummary:
        kw = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        kw["e2e_s"] = Latency(**kw["e2e_s"])
        return cls(**kw)


def summarize_tasks(records: Iterable[RequestRecord], task_of: Mapping[str, str],
                    planned: Mapping[str, int] | None = None) -> TaskSummary:
    """Group records by task (`task_of`: request_id → task id; records of no task are left out) and
    summarise the tasks. `planned` (task → its request count) marks a task with requests that never
    produced a record incomplete; without it, a task is judged by the records it has."""
    groups: dict[str, list[RequestRecord]] = {}
    start, end = math.inf, -math.inf
    for r in records:
        start = min(start, r.arrival_s)
        if r.end_s is not None:
            end = max(end, r.end_s)
        task = task_of.get(r.request_id)
        if task is not None:
            groups.setdefault(task, []).append(r)
    done = [g for t, g in groups.items()
            if all(r.ok for r in g) and (planned is None or len(g) == planned.get(t, len(g)))]
    incomplete = len(groups) - len(done) + (sum(1 for t in planned if t not in groups) if planned else 0)
    n = len(done)

    def mean(x: Callable[[RequestRecord], int]) -> float:
        return sum(x(r) for g in done for r in g) / n if n else 0.0

    e2e = [max(r.end_s for r in g if r.end_s is not None) - min(r.arrival_s for r in g) for g in done]
    return TaskSummary(n, incomplete, max(0.0, end - start) if end > -math.inf else 0.0, Latency.of(e2e),
                       mean(lambda r: 1), mean(lambda r: r.prompt_tokens), mean(lambda r: r.output_tokens),
                       mean(lambda r: r.cached_prompt_tokens))


def write_jsonl(path: str | os.PathLike[str], records: Iterable[RequestRecord], what: str = "records file") -> int:
    """Write records as JSONL, one per line; returns how many. A regular file is written under a
    temporary name and renamed, so a failed write (a full disk) leaves no half file; a device
    (/dev/null, /dev/full) is written in place. Any OSError is a VazaoError naming the file."""
    from vazao.errors import VazaoError

    p = Path(path)
    special = p.exists() and not p.is_file()
    target = p if special else p.with_name(f".{p.name}.{os.getpid()}.tmp")
    n = 0
    try:
        try:
            with open(target, "w", encoding="utf-8") as fh:
                for r in records:
                    fh.write(json.dumps(r.to_json()) + "\n")
                    n += 1
            if not special:
                os.replace(target, p)
        finally:
            if not special and target.exists():
                target.unlink()
    except OSError as exc:
        raise VazaoError(f"cannot write {what} {p}: {exc.strerror or exc}") from None
    return n


def read_jsonl(path: str | os.PathLike[str]) -> tuple[list[RequestRecord], int]:
    """Records from a JSONL file; returns (records, malformed_line_count). A crash mid-line loses one line."""
    out: list[RequestRecord] = []
    bad = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
                if d.get("kind", "record") != "record":
                    continue
                out.append(RequestRecord.from_json(d))
            except (ValueError, TypeError, KeyError):
                bad += 1
    return out, bad
