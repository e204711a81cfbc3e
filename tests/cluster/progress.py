"""Progress lines for long control-plane work: which step, and how long it has been running."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, prefix: str = "cluster") -> None:
        self.prefix = prefix
        self.started = time.monotonic()
        self.step_started = self.started

    def _emit(self, marker: str, message: str) -> None:
        elapsed = time.monotonic() - self.started
        sys.stderr.write(f"[{self.prefix} {elapsed:6.1f}s] {marker} {message}\n")
        sys.stderr.flush()

    def step(self, message: str) -> None:
        self.step_started = time.monotonic()
        self._emit("==>", message)

    def note(self, message: str) -> None:
        self._emit("   ", message)

    def elapsed(self) -> float:
        return time.monotonic() - self.started
