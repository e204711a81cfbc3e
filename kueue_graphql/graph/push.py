"""The send queue of one streamed operation (a subscription over WebSocket or HTTP).

The results of a subscription are computed by a producer task and handed to the transport
through a queue of at most `limit` results. The transport's send waits while the socket's
buffers are full (a subscriber that stopped reading), so results pile up here, and only here:
when one more is computed with the queue full, the stream stops at once (its watches closed,
its slot freed), the queued results are dropped, and the subscriber gets one last message with
`extensions.code` SLOW_CONSUMER when it reads again. Memory per subscription is thereby bounded
by `limit` results plus what the socket holds, whatever the event rate.

The same wrapper counts pushed messages and why each subscription ended (observe.metrics).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

from graphql import GraphQLError
from strawberry.types import ExecutionResult

from kueue_graphql.core.errors import ErrorCode
from kueue_graphql.observe.metrics import SUBSCRIPTION_MESSAGES, SUBSCRIPTIONS_ENDED

CLOSED = "closed"
COMPLETED = "completed"


def slow_consumer_result(limit: int) -> ExecutionResult:
    return ExecutionResult(
        data=None,
        errors=[
            GraphQLError(
                f"the subscription ended: {limit} messages were waiting to be sent and the "
                "client was not reading them (read faster, or select fewer fields)",
                extensions={"code": ErrorCode.SLOW_CONSUMER.value},
            )
        ],
    )


def _final_code(result: ExecutionResult) -> str | None:
    """The code of a result that ends its stream (no data, an error), else None."""
    if result.data is not None or not result.errors:
        return None
    code = (result.errors[0].extensions or {}).get("code")
    return str(code or ErrorCode.INTERNAL.value)


async def pushed(
    results: AsyncGenerator[ExecutionResult, None], field: str, limit: int
) -> AsyncGenerator[ExecutionResult, None]:
    queue: asyncio.Queue[ExecutionResult | None] = asyncio.Queue(limit)
    overflowed = False

    def drop_queued() -> None:
        while not queue.empty():
            queue.get_nowait()

    async def produce() -> None:
        nonlocal overflowed
        try:
            async for result in results:
                if queue.full():
                    overflowed = True
                    break
                queue.put_nowait(result)
        except Exception:
            drop_queued()
            queue.put_nowait(None)
            raise
        finally:
            # Also when cancelled (the consumer went away): the stream's watches close now.
            await results.aclose()
        # Not reached when cancelled: nobody would take the end marker.
        if overflowed:
            drop_queued()
        await queue.put(None)

    producer = asyncio.create_task(produce())
    reason = CLOSED
    try:
        last: ExecutionResult | None = None
        while (result := await queue.get()) is not None:
            last = result
            SUBSCRIPTION_MESSAGES.labels(field).inc()
            yield result
        # The producer ended by itself; one that raised is reported like a stream error.
        await asyncio.wait([producer])
        error = producer.exception()
        if overflowed:
            reason = ErrorCode.SLOW_CONSUMER.value
            SUBSCRIPTION_MESSAGES.labels(field).inc()
            yield slow_consumer_result(limit)
        elif error is not None:
            reason = ErrorCode.INTERNAL.value
            raise error
        else:
            reason = (_final_code(last) if last is not None else None) or COMPLETED
    finally:
        if not producer.done():
            producer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await producer
        SUBSCRIPTIONS_ENDED.labels(reason).inc()
