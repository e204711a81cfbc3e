"""http.memory: free memory goes back to the OS once subscription closes pause (pure timing,
with a counting stand-in for malloc_trim, and the real glibc call once)."""

from __future__ import annotations

import asyncio
import threading

from kueue_graphql.http.memory import FreeMemoryReturner, glibc_malloc_trim
from tests.waiting import async_wait_until


class CountingTrim:
    def __init__(self) -> None:
        self.calls = 0
        self.threads: set[int] = set()

    def __call__(self) -> int:
        self.calls += 1
        self.threads.add(threading.get_ident())
        return 1


async def test_a_burst_of_closes_is_one_trim_after_the_quiet_time() -> None:
    trim = CountingTrim()
    returner = FreeMemoryReturner(trim, quiet_seconds=0.05, max_delay_seconds=5)
    for _ in range(50):
        returner.closed()
    assert trim.calls == 0

    async def trimmed() -> bool:
        return returner.trims >= 1

    await async_wait_until("the trim after the burst", trimmed, 60, interval=0.05)
    assert trim.calls == 1
    assert returner.trims == 1
    # Off the event loop's thread.
    assert threading.get_ident() not in trim.threads


async def test_steady_churn_is_trimmed_within_the_maximum_delay() -> None:
    """Closes never pause for the (huge) quiet time, so only the maximum delay can trim: the
    test holds however slowly the machine runs its sleeps."""
    trim = CountingTrim()
    returner = FreeMemoryReturner(trim, quiet_seconds=3600, max_delay_seconds=0.3)
    churning = True

    async def churn() -> None:
        while churning:
            returner.closed()
            await asyncio.sleep(0.05)

    task = asyncio.create_task(churn())
    try:

        async def trimmed_twice() -> bool:
            return returner.trims >= 2

        await async_wait_until("two trims during steady churn", trimmed_twice, 60, interval=0.05)
    finally:
        churning = False
        await task
        returner.close()
    assert trim.calls >= 2


async def test_without_glibc_nothing_is_scheduled() -> None:
    returner = FreeMemoryReturner(None, quiet_seconds=0.01)
    returner.closed()
    await asyncio.sleep(0.05)
    assert returner.trims == 0


def test_closed_outside_a_running_loop_is_ignored() -> None:
    trim = CountingTrim()
    FreeMemoryReturner(trim).closed()
    assert trim.calls == 0


def test_glibc_malloc_trim_is_callable_here() -> None:
    trim = glibc_malloc_trim()
    assert trim is not None  # this machine runs glibc (Debian)
    assert trim() in (0, 1)
