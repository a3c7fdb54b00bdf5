"""loadgen.waits.within: a time-limited wait that never loses the caller's cancellation (CPython gh-86296:
before 3.12, asyncio.wait_for returned the result when the work finished in the loop turn the caller was
cancelled in; an interrupted bench then went on until its watchdog, seen in tests/test_bench_faults.py)."""

from __future__ import annotations

import asyncio

import pytest

from vazao.loadgen.waits import within


def test_a_cancellation_in_the_turn_the_slot_frees_is_kept_and_the_slot_given_back():
    async def main():
        sem = asyncio.Semaphore(0)
        waiter = asyncio.ensure_future(within(sem.acquire(), 30.0, abandon=lambda _: sem.release()))
        await asyncio.sleep(0)  # the waiter now waits on the slot
        await asyncio.sleep(0)
        sem.release()  # the slot frees …
        waiter.cancel()  # … in the same turn as the interrupt
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await asyncio.sleep(0)
        return sem

    sem = asyncio.run(main())
    assert not sem.locked()  # the slot the cancelled waiter was given went back


def test_a_time_limit_raises_and_a_late_result_is_abandoned():
    abandoned = []

    async def slow():
        await asyncio.sleep(0.05)
        return "late"

    async def main():
        async def shielded():  # work that ignores one cancellation and still produces its result
            try:
                return await slow()
            except asyncio.CancelledError:
                return "late"

        with pytest.raises(asyncio.TimeoutError):
            await within(shielded(), 0.001, abandon=abandoned.append)
        await asyncio.sleep(0.01)

    asyncio.run(main())
    assert abandoned == ["late"]


def test_a_result_in_time_is_returned():
    async def main():
        return await within(asyncio.sleep(0, result=7), 1.0), await within(asyncio.sleep(0, result=8), None)

    assert asyncio.run(main()) == (7, 8)
