"""tests/node_clients.py's `bounded`: a Node (or npm) run that overstays its bound is killed
with everything it started, and the test fails saying so."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.node_clients import bounded
from tests.waiting import wait_until


def gone(pid: int) -> bool:
    """No such process, or a zombie waiting to be reaped (it runs nothing)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


async def test_a_run_over_its_bound_is_killed_with_its_children(tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    # A parent that starts a child and waits for it, as npm does with its workers.
    script = f"sleep 600 & echo $! > {child}; wait"
    with pytest.raises(AssertionError, match="did not finish within 1 s"):
        # A child left running would hold the pipes open, and the kill's wait with them.
        await asyncio.wait_for(bounded(["sh", "-c", script], 1.0), 60)
    pid = int(child.read_text())
    wait_until(f"sleep {pid} killed", lambda: gone(pid), 30, interval=0.05)


async def test_a_run_within_its_bound_returns_its_output() -> None:
    finished = await bounded(["sh", "-c", "echo out; echo err >&2; exit 3"], 60)
    assert (finished.returncode, finished.stdout, finished.stderr) == (3, "out\n", "err\n")
