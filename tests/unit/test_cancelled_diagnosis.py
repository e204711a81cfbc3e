"""A diagnosis' reads when the diagnosis is cancelled (a subscription closed mid-way) or one of
its reads fails: nothing may outlive it, and no read coroutine may be left never awaited.

Regression: with `asyncio.ensure_future(observe(reader.get(...)))` a read task cancelled before
its first step dropped the inner `reader.get(...)` coroutine unawaited ("coroutine
RequestReads.get was never awaited", seen after closing 200 subscriptions), and with
`asyncio.gather` a failed read left its sibling reads running.
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

from kueue_graphql.core.errors import UnavailableError
from kueue_graphql.lookups.diagnosis import load_input

WORKLOAD: dict[str, Any] = {
    "kind": "Workload",
    "metadata": {"name": "job-x-1", "namespace": "team-a", "uid": "w1"},
    "spec": {"queueName": "lq"},
    "status": {},
}
JOB: dict[str, Any] = {
    "kind": "Job",
    "metadata": {"name": "x", "namespace": "team-a", "uid": "j1"},
}


class StalledReader:
    """Every read waits until cancelled; `fail` makes `get` fail at once instead."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail

    async def get(self, *args: object) -> Any:
        if self.fail:
            raise UnavailableError("the API server did not answer")
        await asyncio.Event().wait()

    async def list_objects(self, *args: object, **kwargs: object) -> Any:
        await asyncio.Event().wait()

    async def may(self, *args: object) -> bool:
        await asyncio.Event().wait()
        return False

    async def events_for(self, *args: object) -> Any:
        await asyncio.Event().wait()


def _never_awaited(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "never awaited" in str(w.message)]


async def test_cancel_before_reads_start_leaves_no_unawaited_coroutine() -> None:
    before = asyncio.all_tasks()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        diagnosis = asyncio.create_task(
            load_input(StalledReader(), "team-a", JOB, WORKLOAD)  # type: ignore[arg-type]
        )
        # One step: the diagnosis starts its first round of reads and waits for them; the
        # reads themselves have not run yet when it is cancelled.
        await asyncio.sleep(0)
        diagnosis.cancel()
        with pytest.raises(asyncio.CancelledError):
            await diagnosis
        await asyncio.sleep(0)
        gc.collect()
    assert not _never_awaited(caught), _never_awaited(caught)
    assert not [t for t in asyncio.all_tasks() - before if not t.done()]


async def test_cancel_mid_reads_leaves_no_task() -> None:
    before = asyncio.all_tasks()
    diagnosis = asyncio.create_task(
        load_input(StalledReader(), "team-a", JOB, WORKLOAD)  # type: ignore[arg-type]
    )
    await asyncio.sleep(0.05)
    diagnosis.cancel()
    with pytest.raises(asyncio.CancelledError):
        await diagnosis
    assert not [t for t in asyncio.all_tasks() - before if not t.done()]


async def test_failed_read_cancels_its_siblings() -> None:
    before = asyncio.all_tasks()
    with pytest.raises(UnavailableError):
        await load_input(StalledReader(fail=True), "team-a", JOB, WORKLOAD)  # type: ignore[arg-type]
    leftover = [str(t.get_coro()) for t in asyncio.all_tasks() - before if not t.done()]
    assert not leftover, leftover
