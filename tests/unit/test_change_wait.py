"""WatchChanges.wait when the subscription is cancelled just as a change arrives.

Regression: with `asyncio.wait_for(event.wait(), timeout)` Python 3.11 returns the event's
result and drops the cancellation when both happen in the same loop iteration, so a closed
subscription kept recomputing forever with its watches open, and the WebSocket handler waiting
for it never finished (after 200 subscriptions closed under load: 16 left, 105 tasks).
"""

from __future__ import annotations

import asyncio

import pytest

from kueue_graphql.kube.changes import WatchChanges


def _changes() -> WatchChanges:
    return WatchChanges(None, None, [])  # type: ignore[arg-type]


async def test_cancel_wins_over_a_change_arriving_at_once() -> None:
    for _ in range(20):
        changes = _changes()
        waiting = asyncio.create_task(changes.wait(30))
        await asyncio.sleep(0)
        changes._changed.set()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting


async def test_wait_reports_a_change_and_quiet() -> None:
    changes = _changes()
    assert await changes.wait(0) is False
    assert await changes.wait(0.01) is False
    changes._changed.set()
    assert await changes.wait(0) is True
    assert await changes.wait(0) is False
    later = asyncio.get_running_loop().call_later(0.01, changes._changed.set)
    assert await changes.wait(5) is True
    later.cancel()
