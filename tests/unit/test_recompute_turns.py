"""Recomputes woken for a queue position only take bounded turns; a stream whose own inputs
changed never waits behind them (issue 26: a change that moved the positions of hundreds of
subscriptions delayed the answer of the Workload that changed behind all their recomputes)."""

from __future__ import annotations

import asyncio

from kueue_graphql.context.live import RecomputeTurns


async def test_position_recomputes_wait_their_turn_and_urgent_ones_never_wait() -> None:
    turns = RecomputeTurns(2)
    release = asyncio.Event()
    order: list[str] = []

    async def recompute(name: str, urgent: bool) -> None:
        async with turns.turn(urgent):
            order.append(name)
            await release.wait()

    ripples = [asyncio.create_task(recompute(f"ripple-{i}", False)) for i in range(5)]
    await asyncio.sleep(0)
    assert order == ["ripple-0", "ripple-1"]
    assert turns.waiting() == 3
    urgent = asyncio.create_task(recompute("direct", True))
    await asyncio.sleep(0)
    assert order[-1] == "direct"  # while three wait
    assert turns.running == 3
    # A waiter that goes away gives up its place.
    ripples[2].cancel()
    await asyncio.gather(ripples[2], return_exceptions=True)
    assert turns.waiting() == 2
    release.set()
    await asyncio.gather(urgent, *ripples[:2], *ripples[3:])
    assert order == ["ripple-0", "ripple-1", "direct", "ripple-3", "ripple-4"]
    assert turns.running == 0
    assert turns.waiting() == 0


async def test_a_waiter_cancelled_while_a_turn_is_freed_neither_takes_nor_loses_it() -> None:
    """A waiting recompute whose stream closes in the same moment a turn is freed (its future
    cancelled, its task not yet resumed): the turn goes to the next waiter, nothing fails."""
    turns = RecomputeTurns(1)
    release = asyncio.Event()
    order: list[str] = []

    async def recompute(name: str) -> None:
        async with turns.turn(False):
            order.append(name)
            await release.wait()

    first = asyncio.create_task(recompute("first"))
    await asyncio.sleep(0)
    gone, last = (asyncio.create_task(recompute(n)) for n in ("gone", "last"))
    await asyncio.sleep(0)
    assert turns.waiting() == 2
    release.set()  # "first" resumes, and frees its turn, before "gone" runs
    gone.cancel()  # its future is cancelled now; its task runs after "first"
    async with asyncio.timeout(30):  # before the fix: "last" waited for ever
        results = await asyncio.gather(first, last, gone, return_exceptions=True)
    assert results[:2] == [None, None], results
    assert order == ["first", "last"]
    assert gone.cancelled()
    assert turns.running == 0
    assert turns.waiting() == 0
