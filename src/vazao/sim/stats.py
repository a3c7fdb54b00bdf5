"""What a simulation measures while it runs, in memory that does not grow with tokens: per request a
few numbers and the windows of engine steps it decoded in, per engine one gap per decode step (every
sequence in the step shares it), and a KV timeline thinned to a fixed number of points. The run's
summary is results.summarize() over its records, the same function `vazao summarize` runs on them
read back from JSONL."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from vazao.resultfiles import from_document
from vazao.results import (
    SLO,
    Background,
    FloatArray,
    GapWindows,
    RecordColumns,
    RequestRecord,
    RunSummary,
    summarize_columns,
)

if TYPE_CHECKING:
    from vazao.sim.kv_pool import BlockPool
    from vazao.sim.sequence import Seq

T = TypeVar("T")


class EngineView(Protocol):
    """What a timeline sample reads of an engine (sim/engine.py): a Protocol, not the class, because
    engine.py imports this module (through cohort.py) and a type-only import back would close a loop."""

    @property
    def pool(self) -> BlockPool: ...
    @property
    def bs(self) -> int: ...
    @property
    def running(self) -> Sized: ...
    @property
    def waiting(self) -> Sized: ...
    def kv_tokens(self) -> int: ...


@dataclass(frozen=True)
class TimelinePoint:
    t_s: float
    kv_used: float  # share of KV blocks allocated (reservations and in-use cache included)
    kv_tokens: float  # share of KV capacity holding live tokens of running requests
    running: int
    waiting: int
    preemptions: int  # cumulative

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TimelinePoint:
        return from_document(cls, d)


class Stats:
    def __init__(self, timeline_points: int = 256) -> None:
        self.preemptions = 0
        self.prefill_tokens = 0
        self.cached_tokens = 0
        self.steps = 0
        self.busy_s = 0.0
        self.seq_s = 0.0  # Σ step time × sequences in the step
        self.peak_running = 0
        # Gap tracks: track 0 holds gaps that belong to one request alone (the first decode after a
        # KV transfer or a recompute); each engine owns one more, one entry per decode step.
        self.tracks: list[array[float]] = [array("d")]
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
        # a request's gap windows: one (track, start, stop) in columns, more (rare) in r_windows
        self.r_track = array("q")
        self.r_start = array("q")
        self.r_stop = array("q")
        self.r_windows: dict[int, tuple[int, ...]] = {}
        # timeline
        self.points = max(8, timeline_points)
        self.timeline: list[TimelinePoint] = []
        self.sample_dt = 0.05
        self.on_sample: Callable[[float, int], None] | None = None  # (sim time, requests done): a progress bar
        self.next_sample = 0.0

    def step(self, dur: float, nseq: int, running: int) -> None:
        self.steps += 1
        self.busy_s += dur
        self.seq_s += dur * nseq
        if running > self.peak_running:
            self.peak_running = running

    def new_track(self) -> int:
        self.tracks.append(array("d"))
        return len(self.tracks) - 1

    def own_gap(self, seq: Seq, gap: float) -> None:
        """A gap only `seq` saw (its first token after a KV transfer or a recompute)."""
        own = self.tracks[0]
        own.append(gap)
        add_window(seq, 0, len(own) - 1, len(own))

    def record(self, seq: Seq, end_s: float | None, error: str | None = None) -> None:
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
        w = seq.windows
        if w is None:
            self.r_track.append(-1)
            self.r_start.append(0)
            self.r_stop.append(0)
        elif len(w) == 3:
            self.r_track.append(w[0])
            self.r_start.append(w[1])
            self.r_stop.append(w[2])
        else:
            self.r_track.append(-2)
            self.r_start.append(0)
            self.r_stop.append(0)
            self.r_windows[i] = tuple(w)
        seq.windows = None

    def sample(self, t: float, engines: Sequence[EngineView]) -> None:
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
        if self.on_sample is not None:
            self.on_sample(t, len(self.r_id))

    # ---- after the run ---------------------------------------------------------------------------
    def records(self, counted_only: bool = True) -> list[RequestRecord]:
        """Every request's record, in completion order, its gaps as windows onto the run's tracks. Built
        on each call and not kept: a sweep of many runs holds their columns, not their records."""
        return list(self.iter_records(counted_only))

    def _tracks(self) -> list[FloatArray]:
        # views, not copies (a track is millions of steps); a track is never appended to after its run
        return [np.frombuffer(t, dtype=float) if len(t) else np.zeros(0) for t in self.tracks]

    def iter_records(self, counted_only: bool = True) -> Iterator[RequestRecord]:
        n = len(self.r_id)
        tracks = self._tracks()
        windows, errors = self.r_windows, self.r_error
        nan = math.isnan
        rows = zip(range(n), self.r_id, self.r_arrival, self.r_first, self.r_end, self.r_prompt, self.r_output,
                   self.r_cached, self.r_preempt, self.r_counted, self.r_track, self.r_start, self.r_stop,
                   strict=True)
        for i, rid, arrival, first, end, prompt, output, cached, preempt, counted, t, a, b in rows:
            if counted_only and not counted:
                continue
            gaps = (() if t == -1 else GapWindows(tracks, windows[i] if t == -2 else (t, a, b)))
            yield RequestRecord(rid, "simulated", arrival, prompt, output, None if nan(first) else first,
                                None if nan(end) else end, gaps, cached, errors.get(i), None,
                                {"preemptions": preempt} if preempt else {})

    def columns(self) -> RecordColumns:
        """The counted records as columns (what summarize_columns reads)."""
        counted = np.array(self.r_counted, dtype=bool)
        failed = np.zeros(len(self.r_id), dtype=bool)
        failed[list(self.r_error)] = True
        track = np.array(self.r_track, dtype=np.int64)
        row = np.flatnonzero(track >= 0)
        w_track = track[row]
        w_start, w_stop = np.array(self.r_start, np.int64)[row], np.array(self.r_stop, np.int64)[row]
        if self.r_windows:  # the rare requests with several windows: one row per window
            extra = [(i, w[j], w[j + 1], w[j + 2]) for i, w in self.r_windows.items() for j in range(0, len(w), 3)]
            more = np.array(extra, dtype=np.int64).reshape(-1, 4)
            row = np.concatenate((row, more[:, 0]))
            w_track, w_start, w_stop = (np.concatenate((a, more[:, k])) for k, a in ((1, w_track), (2, w_start),
                                                                                     (3, w_stop)))
        keep = counted[row]
        position = np.cumsum(counted) - 1  # a row's index among the counted rows
        return RecordColumns(
            "simulated", np.array(self.r_arrival, dtype=float)[counted], np.array(self.r_first, dtype=float)[counted],
            np.array(self.r_end, dtype=float)[counted], np.array(self.r_prompt, dtype=np.int64)[counted],
            np.array(self.r_output, dtype=np.int64)[counted], failed[counted], self._tracks(),
            position[row[keep]], w_track[keep], w_start[keep], w_stop[keep])

    def summary(self, slo: SLO | None) -> RunSummary:
        """results.summarize() over the run's counted records (warm-up left out), read from the columns; the
        warm-up's work inside their window counts in its throughputs (results.Background)."""
        return summarize_columns(self.columns(), slo, self.iter_records, self.background())

    def background(self) -> Background | None:
        """The requests not counted (the warm-up) that ended well, for the summary's window; None: every one
        is counted."""
        counted = np.array(self.r_counted, dtype=bool)
        if counted.all():
            return None
        rest = np.flatnonzero(~counted)
        failed = np.zeros(len(self.r_id), dtype=bool)
        failed[list(self.r_error)] = True
        first, end = np.array(self.r_first, dtype=float)[rest], np.array(self.r_end, dtype=float)[rest]
        ok = ~failed[rest] & ~np.isnan(first) & ~np.isnan(end)
        return Background(first[ok], end[ok], np.array(self.r_prompt, dtype=np.int64)[rest][ok],
                          np.array(self.r_output, dtype=np.int64)[rest][ok])


def add_window(seq: Seq, track: int, start: int, stop: int) -> None:
    """Append a window of gaps to a request's list (merged with the last one when contiguous)."""
    if stop <= start:
        return
    w = seq.windows
    if w is None:
        seq.windows = [track, start, stop]
    elif w[-3] == track and w[-1] == start:
        w[-1] = stop
    else:
        w.extend((track, start, stop))


def thin(points: Iterable[T], n: int) -> list[T]:
    """At most n points, evenly spaced through the run, the last one always kept."""
    pts = list(points)
    if len(pts) <= n:
        return pts
    step = len(pts) / n
    picked = [pts[int(i * step)] for i in range(n - 1)]
    return [*picked, pts[-1]]
