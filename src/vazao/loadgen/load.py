"""Load patterns: closed loop (fixed concurrency), open loop (each request at its planned arrival
time: Poisson, bursts, trace replay), multi-turn dependencies, sweeps of levels and a search for
the highest load that meets an SLO.

A level is bounded by its plan's request count, by an optional duration (dispatch stops; requests
in flight get `drain_s` to finish, then are cancelled and recorded as errors), and the whole run
by `max_time_s`. Every request ends as a record in the log, warm-ups included (as ``warmup``
lines, excluded from summaries): nothing is dropped silently.
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from vazao.loadgen.client import Prompt, StreamClient, error_kind
from vazao.loadgen.cpu import CpuMonitor, CpuReport
from vazao.loadgen.progress import LiveProgress
from vazao.loadgen.prompts import PromptBuilder
from vazao.loadgen.records import RecordLog
from vazao.loadgen.waits import within
from vazao.results import SLO, Background, RequestRecord, RunSummary, summarize

if TYPE_CHECKING:  # the plan package (pydantic) is not imported for a type
    from vazao.workload.types import RequestSpec

__all__ = ["LevelResult", "LoadOptions", "find_max", "run_level"]


@dataclass(frozen=True)
class LoadOptions:
    duration_s: float | None = None  # per level: stop dispatching after this long
    drain_s: float = 30.0  # after dispatch stops, how long requests in flight may still finish
    warmup: int | None = None  # overrides the workload's warm-up count
    deadline: float | None = None  # absolute perf_counter() time the whole run must end by


@dataclass
class LevelResult:
    level: dict[str, Any]  # {"concurrency": 4} | {"rate": 2.0} | {}
    records: list[RequestRecord]
    warmup: list[RequestRecord]
    summary: RunSummary
    cpu: CpuReport
    stopped: str  # plan | duration | max_time
    errors: dict[str, int] = field(default_factory=dict)
    not_sent: int = 0  # planned requests never sent because the level's time ran out
    dispatch_lag_p99_s: float | None = None  # open loop: how late requests left against their plan
    peak_in_flight: int = 0

    def to_json(self) -> dict:
        return {
            **self.level,
            "summary": self.summary.to_json(),
            "errors": self.errors,
            "warmup_requests": len(self.warmup),
            "not_sent": self.not_sent,
            "stopped": self.stopped,
            "dispatch_lag_p99_s": self.dispatch_lag_p99_s,
            "peak_in_flight": self.peak_in_flight,
            "client_cpu": self.cpu.to_json(),
        }


def error_counts(records: Sequence[RequestRecord]) -> dict[str, int]:
    c = Counter(error_kind(r.error) for r in records if r.error is not None)
    c.update("no_first_token" for r in records if r.error is None and not r.ok)
    return dict(c.most_common())


class _Level:
    """One level's run: its clock and limits, the slots of the closed loop, the requests in flight,
    the conversation turns waiting on earlier ones, and what has been recorded."""

    def __init__(self, client: StreamClient, builder: PromptBuilder, *, concurrency: int | None, warmup: int,
                 log: RecordLog, progress: LiveProgress, options: LoadOptions, level: dict[str, Any],
                 point: int | None):
        self.client, self.builder, self.warmup, self.log, self.progress = client, builder, warmup, log, progress
        self.options, self.level = options, level
        self.t0 = time.perf_counter()
        self.level_end = self.t0 + options.duration_s if options.duration_s else math.inf
        self.deadline = self.level_end if options.deadline is None else min(self.level_end, options.deadline)
        self.sem = asyncio.Semaphore(concurrency) if concurrency else None
        self.records: list[RequestRecord] = []
        self.warm: list[RequestRecord] = []
        self.lags: list[float] = []  # open loop: how late each request left against its plan
        self.in_flight: set[asyncio.Task] = set()
        self.seen: set[str] = set()  # ids of conversation turns dispatched
        self.finished: set[str] = set()  # ... and finished (or given up)
        self.waiters: dict[str, asyncio.Event] = {}
        self.peak = self.sending = self.not_sent = 0
        self.stop = False
        self.extra_base = dict(level)
        if point is not None:
            self.extra_base["point"] = point
        self.cpu = CpuMonitor()
        self.chunks0 = client.chunks

    # ---- one request ---------------------------------------------------------------------------
    def release(self, spec: RequestSpec) -> None:
        """The turn is over: the conversation's next turn may go."""
        if spec.conversation_id is not None:
            self.finished.add(spec.request_id)
            ev = self.waiters.pop(spec.request_id, None)
            if ev is not None:
                ev.set()

    async def wait_turn(self, spec: RequestSpec) -> None:
        """Wait for `after` (and every `join`: a merge waits for all its agents) to finish, then the think time."""
        befores = [b for b in (spec.after, *spec.join) if b is not None and b in self.seen]
        if not befores:
            return
        for before in befores:
            if before not in self.finished:
                ev = self.waiters.get(before) or self.waiters.setdefault(before, asyncio.Event())
                await ev.wait()
        think = float(spec.think_time_s or 0.0)
        if think > 0:
            await asyncio.sleep(think)

    def over(self) -> bool:
        return self.stop or time.perf_counter() >= self.deadline

    async def one(self, i: int, spec: RequestSpec, holding: bool, scheduled: float | None) -> None:
        got_slot = holding
        try:
            try:
                await self.wait_turn(spec)
                if not self.over() and self.sem is not None and not got_slot:
                    await self.sem.acquire()
                    got_slot = True
            except asyncio.CancelledError:
                self.not_sent += 1
                self.release(spec)
                raise
            if self.over():
                self.not_sent += 1
                self.release(spec)
                return
            prompt = self.builder.build(i, spec)
            rec, text = await self.send(spec, prompt, scheduled)
        finally:
            if got_slot and self.sem is not None:
                self.sem.release()
        self.builder.completed(spec, prompt, rec.prompt_tokens, rec.output_tokens, text)
        self.keep(i, rec)
        self.release(spec)

    async def send(self, spec: RequestSpec, prompt: Prompt, scheduled: float | None
                   ) -> tuple[RequestRecord, str | None]:
        extra = dict(self.extra_base)
        if spec.conversation_id is not None:
            extra["conversation_id"] = spec.conversation_id
            extra["turn"] = spec.turn
        if spec.task_id is not None:
            extra["task_id"] = spec.task_id
        if scheduled is not None:
            extra["scheduled_s"] = round(scheduled - self.client.origin, 6)
        self.sending += 1
        self.peak = max(self.peak, self.sending)
        try:
            return await self.client.send(str(spec.request_id), prompt, extra=extra,
                                          keep_text=self.builder.needs_text(spec))
        finally:
            self.sending -= 1

    def keep(self, i: int, rec: RequestRecord) -> None:
        is_warm = i < self.warmup
        (self.warm if is_warm else self.records).append(rec)
        self.log.record(rec, kind="warmup" if is_warm else "record")
        if not is_warm:
            self.progress.add(rec.ok, rec.output_tokens, rec.ttft_s)

    def spawn(self, i: int, spec: RequestSpec, holding: bool, scheduled: float | None = None) -> None:
        if spec.conversation_id is not None:
            self.seen.add(spec.request_id)
        task = asyncio.get_running_loop().create_task(self.one(i, spec, holding, scheduled))
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)

    # ---- the level -------------------------------------------------------------------------------
    def out_of_time(self) -> str:
        """Which limit ended the level: the one that comes first (not the clock read, since a timer
        may fire a millisecond early)."""
        o = self.options
        return "max_time" if o.deadline is not None and o.deadline <= self.level_end else "duration"

    async def dispatch(self, plan: Iterable[RequestSpec], total: int | None) -> str:
        """Send the plan, each spec when its time or its slot comes; returns why dispatch stopped."""
        pc, deadline, sem = time.perf_counter, self.deadline, self.sem
        stopped = "plan"
        for i, spec in enumerate(plan):
            if pc() >= deadline:
                stopped = self.out_of_time()
                break
            arrival = spec.arrival_s
            if arrival is not None:
                target = self.t0 + float(arrival)
                if target >= deadline:
                    stopped = self.out_of_time()
                    break
                delay = target - pc()
                while delay > 0:  # uvloop's timers (whole ms) can wake up to a ms early: never send early
                    await asyncio.sleep(delay)
                    delay = target - pc()
                self.lags.append(pc() - target)
                self.spawn(i, spec, False, target)
            elif spec.after in self.seen or sem is None:
                self.spawn(i, spec, False)
            else:
                remaining = deadline - pc()
                try:
                    if math.isinf(remaining):
                        await sem.acquire()
                    else:  # not asyncio.wait_for: it can lose an interrupt (loadgen/waits.py)
                        await within(sem.acquire(), remaining, abandon=lambda _: sem.release())
                except asyncio.TimeoutError:
                    stopped = self.out_of_time()
                    break
                self.spawn(i, spec, True)
        if stopped != "plan" and total is not None:
            self.not_sent += max(0, total - i)
        return stopped

    async def drain(self) -> None:
        """Let every dispatched request finish, within the drain allowance once the time is up;
        cancel (and so record) what is still in flight after it."""
        o, pc = self.options, time.perf_counter
        limit = self.deadline + o.drain_s
        if o.deadline is not None:
            limit = min(limit, o.deadline + o.drain_s)
        while self.in_flight and pc() < limit:
            await asyncio.wait(set(self.in_flight), timeout=None if math.isinf(limit) else limit - pc())
        self.stop = True
        if self.in_flight:
            await _cancel_all(self.in_flight)

    def result(self, stopped: str, slo: SLO | None) -> LevelResult:
        lags = self.lags
        return LevelResult(
            level=self.level, records=self.records, warmup=self.warm,
            summary=summarize(self.records, slo, background=Background.of(self.warm)),
            cpu=self.cpu.stop(self.client.chunks - self.chunks0), stopped=stopped,
            errors=error_counts(self.records), not_sent=self.not_sent,
            dispatch_lag_p99_s=float(np.percentile(lags, 99)) if lags else None, peak_in_flight=self.peak)


async def run_level(
    client: StreamClient,
    builder: PromptBuilder,
    plan: Iterable[RequestSpec],
    *,
    concurrency: int | None,
    warmup: int,
    log: RecordLog,
    progress: LiveProgress,
    options: LoadOptions,
    total: int | None = None,
    slo: SLO | None = None,
    level: dict[str, Any] | None = None,
    point: int | None = None,
    label: str = "bench",
    on_interrupt: Callable[[LevelResult], None] | None = None,
) -> LevelResult:
    """Run one plan (a list, or an endless stream cut off by the duration). Specs with
    ``arrival_s`` are sent at that time after the level starts (open loop); the rest take one of
    `concurrency` slots (closed loop). A spec with ``after`` waits for that request to finish, then
    ``think_time_s``, before it takes a slot. The first `warmup` specs are excluded from the summary.
    Cancelled (the run interrupted), the requests in flight are cancelled and recorded, and the
    level so far goes to `on_interrupt` before the cancellation goes on up."""
    gc.collect()  # before the level's clock starts: it takes tens of ms (see gc.freeze below)
    run = _Level(client, builder, concurrency=concurrency, warmup=warmup, log=log, progress=progress,
                 options=options, level=dict(level or {}), point=point)
    if total is None and isinstance(plan, Sequence):
        total = len(plan)
    run.cpu.start()
    progress.start(label, None if total is None else max(0, total - warmup))
    ticker = asyncio.get_running_loop().create_task(_refresh(progress))
    # Everything alive now (modules, the previous levels' records) leaves the garbage collector's
    # view for the level: a full collection over it would pause the loop for tens of ms, late
    # timestamps on every stream at once. What the level allocates is still collected.
    gc.freeze()
    try:
        stopped = await run.dispatch(plan, total)
        await run.drain()
    except asyncio.CancelledError:
        run.stop = True
        await _cancel_all(run.in_flight)
        if on_interrupt is not None:
            on_interrupt(run.result("interrupted", slo))
        raise
    finally:
        ticker.cancel()
        progress.finish()
        gc.unfreeze()
    return run.result(stopped, slo)


async def _cancel_all(tasks: set[asyncio.Task], wait_s: float = 5.0) -> None:
    """Cancelled requests end as records (error "cancelled"), written before this returns. A
    second interrupt (a second Ctrl-C) does not cut this short: each record is a loop turn away."""
    pending = set(tasks)
    for t in pending:
        t.cancel()
    end = time.perf_counter() + wait_s
    interrupted = False
    while pending and time.perf_counter() < end:
        try:
            _, pending = await asyncio.wait(pending, timeout=end - time.perf_counter())
        except asyncio.CancelledError:
            interrupted = True
    if interrupted:
        raise asyncio.CancelledError


async def _refresh(progress: LiveProgress, every_s: float = 0.25) -> None:
    while True:
        await asyncio.sleep(every_s)
        progress.refresh()


# ---- the highest load that meets an SLO ------------------------------------------------------


async def find_max(
    trial: Callable[[float], Awaitable[LevelResult]],
    slo: SLO,
    start: float,
    *,
    integer: bool = False,
    max_trials: int = 8,
    precision: float = 0.1,
    max_errors: float = 0.0,
) -> tuple[LevelResult | None, list[LevelResult]]:
    """Double the load from `start` until a trial misses the SLO (or errors exceed `max_errors` as
    a share of requests), then bisect between the last pass and the first miss until they are
    within `precision` (relative) or `max_trials` ran. Returns (best passing trial, all trials)."""
    trials: list[LevelResult] = []

    def passes(r: LevelResult) -> bool:
        s = r.summary
        if s.requests == 0 or s.errors > max_errors * s.requests:
            return False
        return slo.met_by(s)

    def norm(x: float) -> float:
        return float(max(1, round(x))) if integer else x

    best: LevelResult | None = None
    lo, hi = None, None  # highest pass, lowest miss
    x = norm(start)
    while len(trials) < max_trials:
        r = await trial(x)
        trials.append(r)
        if passes(r):
            lo, best = x, r
        else:
            hi = x
        if hi is None:
            x = norm(x * 2)
        elif lo is None:
            nxt = norm(x / 2)
            if nxt == x or (integer and x <= 1) or x < 1e-6:
                break
            x = nxt
        else:
            if hi / lo <= 1 + precision:
                break
            nxt = norm(math.sqrt(lo * hi)) if not integer else norm((lo + hi) / 2)
            if nxt in (lo, hi):
                break
            x = nxt
    return best, trials
