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
from typing import Any

import numpy as np

from vazao.bench.client import StreamClient, error_kind
from vazao.bench.cpu import CpuMonitor, CpuReport
from vazao.bench.progress import LiveProgress
from vazao.bench.prompts import PromptBuilder
from vazao.bench.records import RecordLog
from vazao.results import SLO, RequestRecord, RunSummary, summarize

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


async def run_level(
    client: StreamClient,
    builder: PromptBuilder,
    plan: Iterable[Any],
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
    level = dict(level or {})
    loop = asyncio.get_running_loop()
    pc = time.perf_counter
    t0 = pc()
    level_end = t0 + options.duration_s if options.duration_s else math.inf
    deadline = level_end if options.deadline is None else min(level_end, options.deadline)
    sem = asyncio.Semaphore(concurrency) if concurrency else None
    if total is None and isinstance(plan, Sequence):
        total = len(plan)
    records: list[RequestRecord] = []
    warm: list[RequestRecord] = []
    lags: list[float] = []
    in_flight: set[asyncio.Task] = set()
    seen: set[Any] = set()  # ids of conversation turns dispatched
    finished: set[Any] = set()  # ... and finished (or given up)
    waiters: dict[Any, asyncio.Event] = {}
    state = {"peak": 0, "sending": 0, "not_sent": 0, "stop": False}
    extra_base = dict(level)
    if point is not None:
        extra_base["point"] = point

    def release(spec: Any) -> None:
        if getattr(spec, "conversation_id", None) is not None:
            finished.add(spec.request_id)
            ev = waiters.pop(spec.request_id, None)
            if ev is not None:
                ev.set()

    async def wait_turn(spec: Any) -> None:
        after = getattr(spec, "after", None)
        if after is None or after not in seen:
            return
        if after not in finished:
            ev = waiters.get(after) or waiters.setdefault(after, asyncio.Event())
            await ev.wait()
        think = float(getattr(spec, "think_time_s", 0.0) or 0.0)
        if think > 0:
            await asyncio.sleep(think)

    async def one(i: int, spec: Any, holding: bool, scheduled: float | None) -> None:
        got_slot = holding
        try:
            try:
                await wait_turn(spec)
                if not state["stop"] and pc() < deadline and sem is not None and not got_slot:
                    await sem.acquire()
                    got_slot = True
            except asyncio.CancelledError:
                state["not_sent"] += 1
                release(spec)
                raise
            if state["stop"] or pc() >= deadline:
                state["not_sent"] += 1
                release(spec)
                return
            prompt = builder.build(i, spec)
            extra = dict(extra_base)
            if getattr(spec, "conversation_id", None) is not None:
                extra["conversation_id"] = spec.conversation_id
                extra["turn"] = getattr(spec, "turn", 0)
            if scheduled is not None:
                extra["scheduled_s"] = round(scheduled - client.origin, 6)
            state["sending"] += 1
            state["peak"] = max(state["peak"], state["sending"])
            try:
                rec, text = await client.send(str(spec.request_id), prompt, extra=extra,
                                              keep_text=builder.needs_text(spec))
            finally:
                state["sending"] -= 1
        finally:
            if got_slot and sem is not None:
                sem.release()
        builder.completed(spec, prompt, rec.prompt_tokens, rec.output_tokens, text)
        is_warm = i < warmup
        (warm if is_warm else records).append(rec)
        log.record(rec, kind="warmup" if is_warm else "record")
        if not is_warm:
            progress.add(rec.ok, rec.output_tokens, rec.ttft_s)
        release(spec)

    def spawn(i: int, spec: Any, holding: bool, scheduled: float | None = None) -> None:
        if getattr(spec, "conversation_id", None) is not None:
            seen.add(spec.request_id)
        task = loop.create_task(one(i, spec, holding, scheduled))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)

    def out_of_time() -> str:
        """Which limit ended the level: the one that comes first (not the clock read, since a timer
        may fire a millisecond early)."""
        return "max_time" if options.deadline is not None and options.deadline <= level_end else "duration"

    cpu = CpuMonitor()
    cpu.start()
    chunks0 = client.chunks

    def result(stopped: str) -> LevelResult:
        return LevelResult(
            level=level, records=records, warmup=warm, summary=summarize(records, slo),
            cpu=cpu.stop(client.chunks - chunks0), stopped=stopped, errors=error_counts(records),
            not_sent=state["not_sent"], dispatch_lag_p99_s=float(np.percentile(lags, 99)) if lags else None,
            peak_in_flight=state["peak"])

    progress.start(label, None if total is None else max(0, total - warmup))
    ticker = loop.create_task(_refresh(progress))
    stopped = "plan"
    # Everything alive now (modules, the previous levels' records) leaves the garbage collector's
    # view for the level: a full collection over it would pause the loop for tens of ms, late
    # timestamps on every stream at once. What the level allocates is still collected.
    gc.freeze()
    try:
        for i, spec in enumerate(plan):
            if pc() >= deadline:
                stopped = out_of_time()
                break
            arrival = getattr(spec, "arrival_s", None)
            if arrival is not None:
                target = t0 + float(arrival)
                if target >= deadline:
                    stopped = out_of_time()
                    break
                delay = target - pc()
                while delay > 0:  # uvloop's timers (whole ms) can wake up to a ms early: never send early
                    await asyncio.sleep(delay)
                    delay = target - pc()
                lags.append(pc() - target)
                spawn(i, spec, False, target)
            elif getattr(spec, "after", None) in seen or sem is None:
                spawn(i, spec, False)
            else:
                remaining = deadline - pc()
                try:
                    await asyncio.wait_for(sem.acquire(), None if math.isinf(remaining) else remaining)
                except asyncio.TimeoutError:
                    stopped = out_of_time()
                    break
                spawn(i, spec, True)
        if stopped != "plan" and total is not None:
            state["not_sent"] += max(0, total - i)
        # let every dispatched request finish, within the drain allowance once the time is up
        limit = deadline + options.drain_s
        if options.deadline is not None:
            limit = min(limit, options.deadline + options.drain_s)
        while in_flight and pc() < limit:
            await asyncio.wait(set(in_flight), timeout=None if math.isinf(limit) else limit - pc())
        state["stop"] = True
        if in_flight:
            await _cancel_all(in_flight)
    except asyncio.CancelledError:
        state["stop"] = True
        await _cancel_all(in_flight)
        if on_interrupt is not None:
            on_interrupt(result("interrupted"))
        raise
    finally:
        ticker.cancel()
        progress.finish()
        gc.unfreeze()
    return result(stopped)


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
