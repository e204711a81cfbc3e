"""What a request's context holds is freed when the request ends, even though the API client's
pooled connections outlive it.

asyncio copies the current `contextvars` context into every Task and Handle made under it: a
pooled connection's read handler, made while some request's API call opened the connection,
would keep that request's context (and everything its ContextVars hold: a subscription's reads
with their DataLoaders, cached answers and API-call meter, `graph.common.LIVE_READS`) alive for
as long as the connection stays in the pool. The round-2 growth of
`test_python_heap_flat_over_rounds_of_open_and_close` (DataLoader, Future, ApiCall, LoaderTask)
was that."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref

from kueue_graphql.kube.client import ApiCallMeter
from tests.unit.apiserver_stub import apiserver_stub


class RequestState:
    """Stands for what a request's ContextVar holds (a subscription's reads)."""


HELD: contextvars.ContextVar[RequestState | None] = contextvars.ContextVar("HELD", default=None)


def ok(method: str, path: str, body: object) -> tuple[int, dict[str, object]]:
    return 200, {"kind": "Namespace"}


async def test_a_pooled_connection_does_not_keep_the_request_context_alive() -> None:
    async with apiserver_stub(ok) as stub:

        async def request() -> weakref.ref[RequestState]:
            state = RequestState()
            HELD.set(state)
            # The first call opens a connection, which the pool keeps after the request.
            await stub.kube.request_json("GET", "/api/v1/namespaces/a", meter=ApiCallMeter(5))
            return weakref.ref(state)

        # A request in a Task of its own, as the server runs each one (its context a copy).
        state = await asyncio.create_task(request())
        # The loop's handle that woke this test up still refers to the finished request Task
        # (and so to its context) until the loop moves on.
        await asyncio.sleep(0)
        connector = stub.kube.api_client.rest_client.pool_manager.connector
        assert sum(len(held) for held in connector._conns.values()) == 1, "a pooled connection"
        gc.collect()
        assert state() is None, [type(r).__name__ for r in gc.get_referrers(state())]
