"""Waiting with a time limit without losing a cancellation.

Before Python 3.12, `asyncio.wait_for` returns the awaited result when the work finishes in the same loop
turn as a cancellation of the caller, and the cancellation is lost while the task still counts it as
pending (CPython gh-86296; 3.12 rebuilt wait_for on asyncio.timeout). A bench interrupted while its
closed loop took a freed slot then went on sending until the interrupt watchdog ended it (cli/interrupt.py),
and the run's task, holding that phantom cancellation, was never cancelled again. `within` waits through
`asyncio.wait`, which lets the caller's cancellation through, and hands what came too late to `abandon`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["within"]


async def within(aw: Awaitable[T], timeout: float | None,
                 abandon: Callable[[T], object] | None = None) -> T:
    """`await aw` for at most `timeout` seconds (None: no limit); TimeoutError past it. Cancelled or timed
    out, the work is cancelled, and a result it still produces goes to `abandon` (a semaphore slot
    released, a connection closed) instead of being lost."""
    task = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except asyncio.CancelledError:
        _drop(task, abandon)
        raise
    if not done:
        _drop(task, abandon)
        raise asyncio.TimeoutError
    return task.result()


def _drop(task: asyncio.Future[T], abandon: Callable[[T], object] | None) -> None:
    def late(t: asyncio.Future[T]) -> None:
        if t.cancelled():
            return
        if t.exception() is None and abandon is not None:
            abandon(t.result())

    if task.done():
        late(task)
    else:
        task.cancel()
        task.add_done_callback(late)
