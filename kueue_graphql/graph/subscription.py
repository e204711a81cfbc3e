"""Live answers: subscriptions that push a changed verdict, object or set, as the caller.

Every subscription is the same loop (`_recomputes`): compute the answer now with a fresh
per-message context, then wait on a `ChangeSource` ("something it depends on may have
changed"; watches opened as the caller in `impersonate` mode, a shared cache's events in a
cache read mode), let a burst settle (coalescing), and compute again. Each computation is a
query's: the identity is re-reviewed (TokenReview cache TTL) and every read re-authorized as
the caller, so a revoked token or RoleBinding ends the stream with UNAUTHENTICATED / FORBIDDEN
within the re-check interval, and nothing is pushed that the caller could not query. What is
pushed is decided per subscription: a changed verdict (`diagnosis`), a changed object
(`workload`, `workloadFor`, `clusterQueue`), the changes to a set (`workloads`).

The first answer is computed before any watch opens: a caller who may not read the object gets
FORBIDDEN and nothing else, and no watch is opened for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Mapping, Sequence
from enum import Enum

import strawberry

from kueue_graphql import diagnosis as dx
from kueue_graphql.context import LiveRegistry, RequestContext
from kueue_graphql.core.errors import BadRequestError, NotFoundError
from kueue_graphql.core.identity import Identity
from kueue_graphql.graph.clusterqueue import ClusterQueue
from kueue_graphql.graph.common import LIVE_READS, Info
from kueue_graphql.graph.diagnosis import Diagnosis, diagnose_object
from kueue_graphql.graph.workload import Workload, WorkloadStatus
from kueue_graphql.kube.changes import WatchTarget
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.dependencies import POSITIONS, Dependency
from kueue_graphql.kube.resources import (
    CLUSTER_QUEUE,
    OWNER_KINDS,
    POD,
    WORKLOAD,
    Resource,
    canonical_kind,
)
from kueue_graphql.kueue.objects import metadata, status
from kueue_graphql.lookups.diagnosis import DIAGNOSIS_FINGERPRINTS
from kueue_graphql.lookups.recording import ObjectFingerprint, RecordingReader, changed_since
from kueue_graphql.observe.metrics import (
    SUBSCRIPTION_RECHECKS,
    SUBSCRIPTION_RECOMPUTES,
    SUBSCRIPTION_WAKES,
)


def _fresh(info: Info) -> RequestContext:
    context = info.context
    if context.renew is None or context.live is None or context.changes is None:
        raise BadRequestError(
            "subscriptions are served over WebSocket (graphql-transport-ws) or over HTTP with "
            '`Accept: multipart/mixed;subscriptionSpec="1.0"`'
        )
    return context.renew()


async def _recomputes(
    info: Info,
    targets: Sequence[WatchTarget],
    fingerprints: Mapping[Resource, ObjectFingerprint] | None = None,
) -> AsyncGenerator[RequestContext, None]:
    """A fresh context now, then one after each (coalesced) change of what the last answer
    was computed from. The caller computes its answer with each; LIVE_READS makes the fields of
    what it pushes resolve as the same caller, through the same context.

    Each context's reads are recorded (lookups/recording.py): the change source then wakes
    this stream only for a change touching one of them. When the source says which of them a
    change touched, those are read again first (a queue position: a few bisects in the `cache`
    read mode), and the answer is recomputed only when one of them reads differently. Every
    re-check interval, the identity and each access decision are asked again, and the inputs no
    watch sees (e.g. a queue position in `impersonate` mode) are read again; only when one of
    them differs is the answer recomputed.

    Recomputes take turns (LiveRegistry.turns): a stream whose own inputs changed goes before
    the streams a change of the pending order woke for a position only. `fingerprints`: what
    the answer compares read objects of some kinds by (lookups/recording.py)."""

    def recording() -> tuple[RequestContext, RecordingReader]:
        return _recording(_fresh(info), fingerprints)

    context, recorder = recording()
    registry = info.context.live
    changes_from = info.context.changes
    assert registry is not None  # checked by _fresh
    assert changes_from is not None
    limits = registry.limits
    identity = await context.reads.identity()
    loop = asyncio.get_running_loop()
    # The caps first: over one, BAD_REQUEST before any read of the new stream.
    with registry.slot(id(info.context), identity.username):
        LIVE_READS.set(context.reads)
        yield context
        changes = changes_from.open(identity if context.impersonate else None, targets)
        try:
            unseen = changes.depend_on(recorder.recorded)
            checked = loop.time()
            while True:
                quiet = max(0.0, checked + limits.recheck_seconds - loop.time())
                if await changes.wait(quiet):
                    # Let the rest of a burst arrive; it is absorbed by this recompute.
                    await asyncio.sleep(limits.coalesce_seconds)
                    await changes.wait(0)
                    touched = changes.touched()
                    fresh, fresh_recorder = recording()
                    if await _reads_the_same(fresh_recorder, recorder, touched):
                        SUBSCRIPTION_WAKES.labels("unchanged").inc()
                        continue
                    SUBSCRIPTION_WAKES.labels("recomputed").inc()
                    cause: str | None = "change"
                    urgent = touched is None or any(k.resource != POSITIONS for k in touched)
                else:
                    fresh, fresh_recorder = recording()
                    cause = await _recheck(fresh, identity, context, recorder, unseen, registry)
                    checked = loop.time()
                    if cause is None:
                        SUBSCRIPTION_RECHECKS.labels("unchanged").inc()
                        continue
                    SUBSCRIPTION_RECHECKS.labels("changed").inc()
                    urgent = True
                async with registry.turns.turn(urgent):
                    SUBSCRIPTION_RECOMPUTES.labels(info.field_name, cause or "change").inc()
                    context, recorder = fresh, fresh_recorder
                    LIVE_READS.set(context.reads)
                    yield context
                # A recompute asked the identity and every access decision again.
                checked = loop.time()
                unseen = changes.depend_on(recorder.recorded)
        finally:
            await changes.close()


async def _reads_the_same(
    fresh: RecordingReader, last: RecordingReader, touched: Collection[Dependency] | None
) -> bool:
    """Whether every dependency a change touched reads as the last answer read it, through the
    fresh reader (authorized anew: a read now refused, or a token now rejected, reads
    differently). False when what was touched is not known or not all of it was recorded."""
    if not touched or any(key not in last.recorded for key in touched):
        return False
    return not await changed_since(fresh.inner, last.recorded, touched)


def _recording(
    context: RequestContext, fingerprints: Mapping[Resource, ObjectFingerprint] | None = None
) -> tuple[RequestContext, RecordingReader]:
    recorder = RecordingReader(context.reads, fingerprints)
    return dataclasses.replace(context, reads=recorder), recorder


async def _recheck(
    fresh: RequestContext,
    identity: Identity,
    last: RequestContext,
    recorded: RecordingReader,
    unseen: Collection[Dependency],
    registry: LiveRegistry,
) -> str | None:
    """Why the answer must be computed again after a quiet interval, or None: "access" when
    the caller is no longer exactly `identity` or an access decision the last answer depended
    on changed (TokenReview and SubjectAccessReview, asked anew through their short caches,
    which every subscription of the identity shares: the decisions all cached are read from
    there at once, without a read's machinery); "inputs" when an input no watch sees reads
    differently. Any error says "access": the recompute then meets it and ends the stream
    with it (UNAUTHENTICATED, UNAVAILABLE, ...)."""
    decisions = last.reads.decisions()
    try:
        if await fresh.reads.identity() != identity:
            return "access"
        held = registry.decisions_hold(identity, decisions)
        if held is None:
            accesses = list(decisions)
            now = await asyncio.gather(*(fresh.reads.may(access) for access in accesses))
            held = all(now[i] == decisions[access] for i, access in enumerate(accesses))
    except Exception:
        return "access"
    if not held:
        return "access"
    if unseen and await changed_since(fresh.reads, recorded.recorded, unseen):
        return "inputs"
    return None


def _version(obj: JsonObject | None) -> str | None:
    return str(metadata(obj).get("resourceVersion")) if obj is not None else None


@strawberry.enum(description="What happened to the object of a `workload` / `workloadFor` stream.")
class ObjectEventType(Enum):
    INITIAL = "INITIAL"
    UPDATED = "UPDATED"
    DELETED = "DELETED"


@strawberry.type(
    description="One message of `workload` / `workloadFor`: INITIAL first (with the Workload, "
    "or null when there is none yet), UPDATED on each change (or creation), DELETED last "
    "(then the stream completes)."
)
class WorkloadEvent:
    type: ObjectEventType
    namespace: str
    name: str | None = strawberry.field(description="null while there is no Workload yet.")
    workload: Workload | None = strawberry.field(description="null when DELETED or absent.")


@strawberry.enum
class SetChangeType(Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    REMOVED = "REMOVED"


@strawberry.type(description="A Workload that entered, changed in, or left the matching set.")
class WorkloadChange:
    type: SetChangeType
    namespace: str
    name: str
    workload: Workload | None = strawberry.field(description="null when REMOVED.")


@strawberry.type(
    description="One message of `workloads`. The first has `initial: true`, the number of "
    "matching Workloads and no changes (query `workloads` for the page itself: anything that "
    "changes after this message arrives is in a later one); each later message lists what "
    "was ADDED to, MODIFIED in or REMOVED from the matching set since the previous one."
)
class WorkloadsEvent:
    initial: bool
    count: int = strawberry.field(description="Matching Workloads after these changes.")
    changes: list[WorkloadChange]


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
        # Not a generator itself: without a streaming transport this raises BAD_REQUEST at once.
        _fresh(info)
        return _diagnosis_stream(info, namespace, kind, name)

    @strawberry.subscription(  # type: ignore[untyped-decorator]
        description="The Workload now, then on each change of it, then DELETED when it is "
        "deleted (the stream completes). Authorized as the query `workload`."
    )
    def workload(
        self, info: Info, namespace: str, name: str
    ) -> AsyncGenerator[WorkloadEvent, None]:
        _fresh(info)
        target = WatchTarget(WORKLOAD, namespace, f"metadata.name={name}")

        async def read(context: RequestContext) -> JsonObject | None:
            return await context.reads.find(WORKLOAD, namespace, name)

        return _object_stream(info, namespace, [target], read)

    @strawberry.subscription(  # type: ignore[untyped-decorator]
        description='The Workload of an owner (e.g. kind "Job") now (null while Kueue has not '
        "made it), then on each change, then DELETED when it is deleted. Authorized as the "
        "query `workloadFor`."
    )
    def workload_for(
        self, info: Info, namespace: str, kind: str, name: str
    ) -> AsyncGenerator[WorkloadEvent, None]:
        _fresh(info)

        async def read(context: RequestContext) -> JsonObject | None:
            try:
                return await context.reads.workload_for_owner(namespace, kind, name)
            except NotFoundError:
                return None

        return _object_stream(info, namespace, [WatchTarget(WORKLOAD, namespace)], read)

    @strawberry.subscription(  # type: ignore[untyped-decorator]
        description="Changes to the set of Workloads `workloads(...)` would list with these "
        "filters: the count first, then ADDED / MODIFIED / REMOVED changes (see "
        "WorkloadsEvent). Authorized as the query `workloads`."
    )
    def workloads(
        self,
        info: Info,
        namespace: str | None = None,
        local_queue: str | None = None,
        cluster_queue: str | None = None,
        status: WorkloadStatus | None = None,
    ) -> AsyncGenerator[WorkloadsEvent, None]:
        _fresh(info)
        return _set_stream(info, namespace, local_queue, cluster_queue, status)

    @strawberry.subscription(  # type: ignore[untyped-decorator]
        description="The ClusterQueue now, then each time its usage or reservation changes "
        "(flavorsReservation, flavorsUsage, pending/reserving/admitted counts, conditions). "
        "Authorized as the query `clusterQueue`; NOT_FOUND ends it when it is deleted."
    )
    def cluster_queue(self, info: Info, name: str) -> AsyncGenerator[ClusterQueue, None]:
        _fresh(info)
        return _cluster_queue_stream(info, name)


async def _diagnosis_stream(
    info: Info, namespace: str, kind: str, name: str
) -> AsyncGenerator[Diagnosis, None]:
    owner = OWNER_KINDS.get(canonical_kind(kind))
    targets = [
        WatchTarget(WORKLOAD, namespace),
        WatchTarget(POD, namespace),
        *([WatchTarget(owner, namespace)] if owner is not None and owner is not POD else []),
    ]
    last: object = None
    async with contextlib.aclosing(_recomputes(info, targets, DIAGNOSIS_FINGERPRINTS)) as contexts:
        async for context in contexts:
            current = await diagnose_object(context.reads, namespace, kind, name)
            key = dx.verdict_key(current.result)
            if key != last:
                last = key
                yield current


async def _object_stream(
    info: Info,
    namespace: str,
    targets: Sequence[WatchTarget],
    read: Callable[[RequestContext], Awaitable[JsonObject | None]],
) -> AsyncGenerator[WorkloadEvent, None]:
    first = True
    last: str | None = None
    async with contextlib.aclosing(_recomputes(info, targets)) as contexts:
        async for context in contexts:
            obj: JsonObject | None = await read(context)
            version = _version(obj)
            name = str(metadata(obj).get("name")) if obj is not None else None
            workload = Workload.from_json(obj) if obj is not None else None
            if first:
                first = False
                yield WorkloadEvent(
                    type=ObjectEventType.INITIAL, namespace=namespace, name=name, workload=workload
                )
            elif obj is None and last is not None:
                yield WorkloadEvent(
                    type=ObjectEventType.DELETED, namespace=namespace, name=None, workload=None
                )
                return
            elif obj is not None and version != last:
                yield WorkloadEvent(
                    type=ObjectEventType.UPDATED, namespace=namespace, name=name, workload=workload
                )
            last = version


async def _set_stream(
    info: Info,
    namespace: str | None,
    local_queue: str | None,
    cluster_queue: str | None,
    wanted: WorkloadStatus | None,
) -> AsyncGenerator[WorkloadsEvent, None]:
    known: dict[str, tuple[str, str, str | None]] | None = None  # uid -> (ns, name, version)
    async with contextlib.aclosing(
        _recomputes(info, [WatchTarget(WORKLOAD, namespace)])
    ) as contexts:
        async for context in contexts:
            page = await context.reads.workloads(
                namespace,
                local_queue=local_queue,
                cluster_queue=cluster_queue,
                status=wanted.value if wanted is not None else None,
            )
            now = {
                str(metadata(w).get("uid")): (
                    str(metadata(w).get("namespace")),
                    str(metadata(w).get("name")),
                    _version(w),
                    w,
                )
                for w in page.items
            }
            if known is None:
                known = {uid: entry[:3] for uid, entry in now.items()}
                yield WorkloadsEvent(initial=True, count=len(now), changes=[])
                continue
            changes: list[WorkloadChange] = []
            for uid, (ns, name, version, obj) in now.items():
                before = known.get(uid)
                if before is None or before[2] != version:
                    kind = SetChangeType.ADDED if before is None else SetChangeType.MODIFIED
                    changes.append(
                        WorkloadChange(
                            type=kind, namespace=ns, name=name, workload=Workload.from_json(obj)
                        )
                    )
            for uid, (ns, name, _) in known.items():
                if uid not in now:
                    changes.append(
                        WorkloadChange(
                            type=SetChangeType.REMOVED, namespace=ns, name=name, workload=None
                        )
                    )
            known = {uid: entry[:3] for uid, entry in now.items()}
            if changes:
                yield WorkloadsEvent(initial=False, count=len(now), changes=changes)


def _usage_key(cluster_queue: JsonObject) -> object:
    current = status(cluster_queue)
    return (
        repr(current.get("flavorsReservation")),
        repr(current.get("flavorsUsage")),
        current.get("pendingWorkloads"),
        current.get("reservingWorkloads"),
        current.get("admittedWorkloads"),
        tuple(
            (c.get("type"), c.get("status"), c.get("reason"))
            for c in current.get("conditions") or []
        ),
    )


async def _cluster_queue_stream(info: Info, name: str) -> AsyncGenerator[ClusterQueue, None]:
    target = WatchTarget(CLUSTER_QUEUE, None, f"metadata.name={name}")
    last: object = None
    async with contextlib.aclosing(_recomputes(info, [target])) as contexts:
        async for context in contexts:
            obj = await context.reads.get(CLUSTER_QUEUE, None, name)
            key = _usage_key(obj)
            if key != last:
                last = key
                yield ClusterQueue.from_json(obj)
