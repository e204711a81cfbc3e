"""Handing malloc's free memory back to the OS once a burst of subscriptions has closed.

A round of subscriptions leaves the Python heap as it was, but glibc's malloc keeps the ~1 MiB
per subscription it handed out (diagnoses, the JSON of their messages, on several threads'
arenas) as free memory of the process: RSS after close then creeps up round after round (see
docs/service.md, *Memory after close*). `malloc_trim(0)` returns those free pages. It runs in a
worker thread (it walks every arena; ctypes releases the GIL), once closes have been quiet for
`quiet_seconds`, and at the latest `max_delay_seconds` after the first close not yet returned,
so steady churn is trimmed too. Without glibc (musl, macOS) it does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


def glibc_malloc_trim() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)` as a callable, or None where the C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def trim_all() -> int:
        return int(trim(0))

    return trim_all


class FreeMemoryReturner:
    """`closed()` after each closed subscription; the trim follows once closes pause."""

    def __init__(
        self,
        trim: Callable[[], int] | None,
        quiet_seconds: float = 2.0,
        max_delay_seconds: float = 30.0,
    ) -> None:
        self.trim = trim
        self.quiet_seconds = quiet_seconds
        self.max_delay_seconds = max_delay_seconds
        self.trims = 0
        self._timer: asyncio.TimerHandle | None = None
        self._first_pending: float | None = None
        self._running: asyncio.Future[int] | None = None

    def closed(self) -> None:
        if self.trim is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # closed outside the event loop (tests): nothing to schedule
            return
        now = time.monotonic()
        if self._first_pending is None:
            self._first_pending = now
        if self._timer is not None:
            self._timer.cancel()
        delay = min(self.quiet_seconds, self._first_pending + self.max_delay_seconds - now)
        self._timer = loop.call_later(max(0.0, delay), self._start, loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if self._running is not None and not self._running.done():
            # One trim at a time; this close is returned by the next one.
            self._timer = loop.call_later(self.quiet_seconds, self._start, loop)
            return
        self._first_pending = None
        assert self.trim is not None
        self._running = loop.run_in_executor(None, self.trim)
        self._running.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[int]) -> None:
        self.trims += 1
        if future.cancelled() or future.exception() is not None:
            log.debug("malloc_trim failed", exc_info=future.exception())

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
