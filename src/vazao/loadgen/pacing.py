"""Two timers of the streaming client (client.py): the watchdog that ends a silent or overlong
request, and the pacer that spreads the work of ending requests over event-loop iterations."""

from __future__ import annotations

import asyncio
import collections
import math
import time

from vazao.loadgen import h1

__all__ = ["Pacer", "Watchdog"]


class Watchdog:
    """Ends a request that has been silent for `stall_s` or has run past `total_s`: one timer,
    re-armed from the last read, instead of a timer reset on every chunk."""

    __slots__ = ("task", "ex", "stall_s", "deadline", "handle", "loop", "why")

    def __init__(self, task: asyncio.Task | None, ex: h1.Exchange, stall_s: float | None, total_s: float | None,
                 t0: float):
        self.task, self.ex, self.stall_s, self.handle, self.why = task, ex, stall_s or None, None, None
        self.deadline = t0 + total_s if total_s else math.inf
        if task is not None and (self.stall_s or total_s):
            self.loop = asyncio.get_running_loop()
            self.handle = self.loop.call_later(self._due() - t0, self._check)

    def _due(self) -> float:
        return min(self.ex.last_read + self.stall_s if self.stall_s else math.inf, self.deadline)

    def _check(self) -> None:
        now = time.perf_counter()
        if now >= self.deadline:
            self.why = "timeout"
        elif self.stall_s and now - self.ex.last_read >= self.stall_s:
            self.why = "stall"
        else:
            self.handle = self.loop.call_later(self._due() - now, self._check)
            return
        self.handle = None
        self.task.cancel()

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


class Pacer:
    """Turns for the work that ends a request (its record, its log line, the dispatch of the next
    one), `per_iteration` (one) per event-loop iteration. Streams that end together (a closed
    loop's round, a burst) would otherwise run hundreds of these back to back, each a few hundred
    µs, while the sockets of the streams still running wait unread and their timestamps go late;
    one a turn, the loop polls its sockets between any two. A turn is immediate while the
    iteration's budget lasts. At 512 streams this cuts the mean ITL error against the truth by a
    third or more (bench/bench_client.py)."""

    __slots__ = ("per", "budget", "waiters", "handle")

    def __init__(self, per_iteration: int = 1):
        self.per = self.budget = per_iteration
        self.waiters: collections.deque[asyncio.Future] = collections.deque()
        self.handle: asyncio.Handle | None = None

    def _refill(self) -> None:
        self.handle = None
        self.budget = self.per
        while self.budget and self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                self.budget -= 1
                fut.set_result(None)
        if self.waiters or self.budget < self.per:
            self.handle = asyncio.get_running_loop().call_soon(self._refill)

    async def turn(self) -> None:
        loop = asyncio.get_running_loop()
        if self.handle is None:
            self.handle = loop.call_soon(self._refill)
        if self.budget > 0 and not self.waiters:
            self.budget -= 1
            return
        fut = loop.create_future()
        self.waiters.append(fut)
        await fut
