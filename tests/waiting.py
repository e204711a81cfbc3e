"""Waiting in tests for a condition, bounded by what is waited for, not by a guess at speed.

What a test waits for (Kueue admitting a Workload, a server answering /readyz, objects being
deleted) happens within seconds on an idle machine, or not at all. The bounds below only say
when to give up: they are generous so that the suite passes on a machine whose CPUs are shared
with other busy processes, and a wait returns as soon as its condition holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

# The control plane acting on what a test did (an admission, an eviction, a status update).
SETTLE_SECONDS = 180.0
# A server process getting ready (the CLI's imports alone took 30-60 s on a loaded machine).
READY_SECONDS = 300.0
# Work on hundreds of objects: creating them, Kueue queueing them, deleting them (a namespace
# and everything in it).
BULK_SECONDS = 600.0


def wait_until(
    what: str,
    check: Callable[[], T | None],
    seconds: float = SETTLE_SECONDS,
    interval: float = 0.5,
    *,
    detail: Callable[[], str] | None = None,
) -> T:
    """Call `check` until it returns something true, and return that; AssertionError naming
    `what` (and `detail()`, when given) after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            said = f": {detail()}" if detail is not None else ""
            raise AssertionError(f"{what}: not within {seconds:g} s{said}")
        time.sleep(interval)


async def async_wait_until(
    what: str,
    check: Callable[[], Awaitable[T | None]],
    seconds: float = SETTLE_SECONDS,
    interval: float = 0.2,
    *,
    detail: Callable[[], str] | None = None,
) -> T:
    """`wait_until` for an async check, sleeping without blocking the event loop (an
    in-process server keeps serving meanwhile)."""
    deadline = time.monotonic() + seconds
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            said = f": {detail()}" if detail is not None else ""
            raise AssertionError(f"{what}: not within {seconds:g} s{said}")
        await asyncio.sleep(interval)
