"""Live answers: subscriptions that push a changed verdict, as the caller.

A subscription waits on a `ChangeSource` (watches opened as the caller in `impersonate` mode),
coalesces bursts, and recomputes with a fresh per-message context: the identity is re-reviewed
(TokenReview cache TTL) and every read re-authorized exactly as a query's, so a revoked token or
RoleBinding ends the stream with UNAUTHENTICATED / FORBIDDEN within the re-check interval.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import strawberry

from kueue_graphql import diagnosis as dx
from kueue_graphql.context import RequestContext
from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.graph.common import LIVE_READS, Info
from kueue_graphql.graph.diagnosis import Diagnosis, diagnose_object
from kueue_graphql.kube.changes import ChangeSource, WatchChanges, WatchTarget
from kueue_graphql.kube.resources import JOB, POD, WORKLOAD


def _fresh(info: Info) -> RequestContext:
    if info.context.renew is None or info.context.live is None:
        raise BadRequestError("subscriptions are served over WebSocket (graphql-transport-ws)")
    return info.context.renew()


@strawberry.type
class Subscription:
    @strawberry.subscription(  # type: ignore[untyped-decorator]
        description="The Diagnosis now, then a new one each time its stage, layer, blocking "
        "object, reason codes, quota verdict or queue position changes (not on every "
        "resourceVersion). Ends with FORBIDDEN / UNAUTHENTICATED when the caller loses access."
    )
    def diagnosis(
        self, info: Info, namespace: str, kind: str, name: str
    ) -> AsyncGenerator[Diagnosis, None]:
        # Not a generator itself: over plain HTTP this raises BAD_REQUEST at once.
        _fresh(info)
        return _diagnosis_stream(info, namespace, kind, name)


async def _diagnosis_stream(
    info: Info, namespace: str, kind: str, name: str
) -> AsyncGenerator[Diagnosis, None]:
    context = _fresh(info)
    registry = info.context.live
    assert registry is not None
    limits = registry.limits
    # The first answer is computed before any watch opens: a caller who may not read the
    # object gets FORBIDDEN and nothing else, and no watch is opened for them.
    token = LIVE_READS.set(context.reads)
    try:
        current = await diagnose_object(context.reads, namespace, kind, name)
    finally:
        LIVE_READS.reset(token)
    identity = await context.reads.identity()
    watch_client = info.context.watch_client
    assert watch_client is not None  # set on every WebSocket connection
    with registry.slot(id(info.context), identity.username):
        changes: ChangeSource = WatchChanges(
            watch_client,
            identity if context.impersonate else None,
            [
                WatchTarget(WORKLOAD, namespace),
                WatchTarget(POD, namespace),
                *([WatchTarget(JOB, namespace)] if kind == "Job" else []),
            ],
        )
        try:
            last = dx.verdict_key(current.result)
            LIVE_READS.set(context.reads)
            yield current
            while True:
                changed = await changes.wait(limits.recheck_seconds)
                if changed:
                    # Let the rest of a burst arrive; it is absorbed by this recompute.
                    await asyncio.sleep(limits.coalesce_seconds)
                    await changes.wait(0)
                context = _fresh(info)
                LIVE_READS.set(context.reads)
                current = await diagnose_object(context.reads, namespace, kind, name)
                key = dx.verdict_key(current.result)
                if key != last:
                    last = key
                    yield current
        finally:
            await changes.close()
