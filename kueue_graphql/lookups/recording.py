"""A KueueReader that records what a computation read: its dependencies.

A live answer (graph/subscription.py) is computed through a `RecordingReader`. Each read adds a
`Dependency` (kube/dependencies.py) with a fingerprint of what it answered (resourceVersions,
the pending entries) and a way to read it again. A change source wakes the subscription only
on a change that touches one of the keys; the dependencies it cannot see (e.g. a ClusterQueue
an `impersonate`-mode stream does not watch, a position moved by other namespaces' Workloads)
are read again at the periodic re-check (`changed_since`), and the answer is recomputed only
when one of their fingerprints differs.

Not recorded: Events (they change with the object they are about, whose key is recorded) and
identity / access decisions (the re-check asks those itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kueue_graphql.core.errors import NotFoundError
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import ApiCallMeter, JsonObject
from kueue_graphql.kube.dependencies import (
    Dependency,
    list_key,
    object_key,
    owner_key,
    position_key,
)
from kueue_graphql.kube.paging import Page, PageRequest
from kueue_graphql.kube.reads import PendingRead
from kueue_graphql.kube.resources import CLUSTER_QUEUE, COHORT, LOCAL_QUEUE, POD, WORKLOAD, Resource
from kueue_graphql.kueue.objects import metadata, spec
from kueue_graphql.lookups.reader import NO_OWNER_READS, KueueReader, OwnerReads
from kueue_graphql.lookups.selection import CONTROLLER_UID_LABEL

T = TypeVar("T")

Fingerprint = object
Replay = Callable[[KueueReader], Awaitable[Fingerprint]]


@dataclass(frozen=True)
class Recorded:
    fingerprint: Fingerprint
    replay: Replay
    """Reads the same again through another reader and gives its fingerprint."""


def _version(obj: JsonObject | None) -> object:
    if obj is None:
        return None
    meta = metadata(obj)
    return (meta.get("namespace"), meta.get("name"), meta.get("resourceVersion"))


def _versions(items: Collection[JsonObject]) -> object:
    return tuple(sorted(str(_version(item)) for item in items))


ObjectFingerprint = Callable[[JsonObject | None], object]


def ignoring_status(*fields: str) -> ObjectFingerprint:
    """An object's fingerprint that a write of only these status fields leaves as it was (a
    write's resourceVersion does not count): for an answer that never reads them, e.g. the
    pending counts Kueue writes to a queue after each change of its pending Workloads."""
    dropped = frozenset(fields)

    def fingerprint(obj: JsonObject | None) -> object:
        if obj is None:
            return None
        meta = {
            k: v for k, v in metadata(obj).items() if k not in ("resourceVersion", "managedFields")
        }
        current = obj.get("status")
        kept = (
            {k: v for k, v in current.items() if k not in dropped}
            if isinstance(current, dict)
            else current
        )
        return (meta, obj.get("spec"), kept)

    return fingerprint


def _entries(read: PendingRead) -> object:
    # What a position is made of: the order, each entry's positions and priority, and what
    # is ahead when it came counted.
    return (
        read.forbidden,
        read.absent,
        read.failure,
        read.beyond,
        None
        if read.own is None
        else (read.own.position_in_local_queue, read.own.item.get("positionInClusterQueue")),
        tuple(
            (
                metadata(item).get("namespace"),
                metadata(item).get("name"),
                item.get("positionInClusterQueue"),
                item.get("positionInLocalQueue"),
                item.get("priority"),
            )
            for item in read.items
        ),
        read.ahead,  # counts and sums of what is ahead (the `cache` read mode)
    )


async def _fingerprint(read: Awaitable[T], of: Callable[[T], object]) -> Fingerprint:
    try:
        return of(await read)
    except NotFoundError:
        return "not found"
    except Exception as error:  # the same failure again is no change; its end is one
        return f"failed: {type(error).__name__}"


async def changed_since(
    reader: KueueReader, recorded: dict[Dependency, Recorded], which: Collection[Dependency]
) -> bool:
    """Whether any of `which` reads differently through `reader` than when it was recorded."""
    keys = [key for key in which if key in recorded]
    now = await asyncio.gather(*(recorded[key].replay(reader) for key in keys))
    return any(value != recorded[key].fingerprint for key, value in zip(keys, now, strict=True))


class RecordingReader:
    """`KueueReader` over `inner` that records each read's Dependency (see the module doc)."""

    def __init__(
        self, inner: KueueReader, fingerprints: Mapping[Resource, ObjectFingerprint] | None = None
    ) -> None:
        self.inner = inner
        self.meter: ApiCallMeter = inner.meter
        self.recorded: dict[Dependency, Recorded] = {}
        # What a read object of these kinds is compared by (default: its resourceVersion).
        self.fingerprints: Mapping[Resource, ObjectFingerprint] = fingerprints or {}

    def _of(self, resource: Resource) -> ObjectFingerprint:
        return self.fingerprints.get(resource, _version)

    def _all_of(self, resource: Resource) -> Callable[[Collection[JsonObject]], object]:
        one = self.fingerprints.get(resource)
        if one is None:
            return _versions
        return lambda items: tuple(
            sorted(
                ((str(metadata(i).get("namespace")), str(metadata(i).get("name")), one(i))
                 for i in items),
                key=lambda named: named[:2],
            )
        )  # fmt: skip

    async def _read(
        self,
        key: Dependency,
        read: Callable[[KueueReader], Awaitable[T]],
        of: Callable[[T], object],
    ) -> T:
        async def replay(reader: KueueReader) -> Fingerprint:
            return await _fingerprint(read(reader), of)

        try:
            result = await read(self.inner)
        except NotFoundError:
            self.recorded.setdefault(key, Recorded("not found", replay))
            raise
        except Exception as error:
            self.recorded.setdefault(key, Recorded(f"failed: {type(error).__name__}", replay))
            raise
        self.recorded.setdefault(key, Recorded(of(result), replay))
        return result

    # -- identity and access: not recorded ------------------------------------------------------

    async def identity(self) -> Identity:
        return await self.inner.identity()

    async def may(self, access: Access) -> bool:
        return await self.inner.may(access)

    def decisions(self) -> dict[Access, bool]:
        return self.inner.decisions()

    def cache_report(self) -> JsonObject | None:
        return self.inner.cache_report()

    # -- objects and lists ---------------------------------------------------------------------

    async def get(self, resource: Resource, namespace: str | None, name: str) -> JsonObject:
        return await self._read(
            object_key(resource, namespace, name),
            lambda r: r.get(resource, namespace, name),
            self._of(resource),
        )

    async def find(self, resource: Resource, namespace: str | None, name: str) -> JsonObject | None:
        return await self._read(
            object_key(resource, namespace, name),
            lambda r: r.find(resource, namespace, name),
            self._of(resource),
        )

    async def list_objects(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[JsonObject]:
        return await self._read(
            list_key(resource, namespace, label_selector),
            lambda r: r.list_objects(
                resource, namespace, label_selector=label_selector, field_selector=field_selector
            ),
            self._all_of(resource),
        )

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        return await self._read(
            list_key(resource, namespace, label_selector),
            lambda r: r.list_page(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                page=page,
            ),
            _page_versions,
        )

    async def pending_read(
        self, namespace: str, local_queue: str, name: str, *, ahead: bool = False
    ) -> PendingRead:
        return await self._read(
            position_key(namespace, local_queue, name),
            lambda r: r.pending_read(namespace, local_queue, name, ahead=ahead),
            _entries,
        )

    async def events_for(self, obj: JsonObject) -> list[JsonObject]:
        return await self.inner.events_for(obj)

    async def job_pods(self, job: JsonObject) -> list[JsonObject]:
        meta = metadata(job)
        selector = f"{CONTROLLER_UID_LABEL}={meta.get('uid')}"
        return await self._read(
            list_key(POD, meta.get("namespace"), selector), lambda r: r.job_pods(job), _versions
        )

    # -- lookups -------------------------------------------------------------------------------

    async def workload_for_owner(
        self, namespace: str, kind: str, name: str, next_reads: OwnerReads = NO_OWNER_READS
    ) -> JsonObject:
        # Keyed by owner: a change of the Workload, or a new one of the owner, touches it.
        return await self._read(
            owner_key(WORKLOAD, namespace, kind, name),
            lambda r: r.workload_for_owner(namespace, kind, name, next_reads),
            _version,
        )

    async def workloads(
        self,
        namespace: str | None = None,
        *,
        local_queue: str | None = None,
        cluster_queue: str | None = None,
        status: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        return await self._read(
            list_key(WORKLOAD, namespace),
            lambda r: r.workloads(
                namespace,
                local_queue=local_queue,
                cluster_queue=cluster_queue,
                status=status,
                page=page,
            ),
            _page_versions,
        )

    async def cluster_queue_name_of(self, workload: JsonObject) -> str | None:
        meta = metadata(workload)
        queue = str(spec(workload).get("queueName") or "")
        if not queue:
            return await self.inner.cluster_queue_name_of(workload)
        return await self._read(
            object_key(LOCAL_QUEUE, meta.get("namespace"), queue),
            lambda r: r.cluster_queue_name_of(workload),
            _same,
        )

    async def local_queues(
        self,
        namespace: str | None = None,
        *,
        cluster_queue: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        return await self._read(
            list_key(LOCAL_QUEUE, namespace),
            lambda r: r.local_queues(namespace, cluster_queue=cluster_queue, page=page),
            _page_versions,
        )

    async def cluster_queues(
        self,
        *,
        cohort: str | None = None,
        flavor: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        return await self._read(
            list_key(CLUSTER_QUEUE, None),
            lambda r: r.cluster_queues(cohort=cohort, flavor=flavor, page=page),
            _page_versions,
        )

    async def child_cohorts(self, cohort: str) -> list[JsonObject]:
        return await self._read(
            list_key(COHORT, None), lambda r: r.child_cohorts(cohort), _versions
        )

    async def cohort_names(self) -> list[str]:
        # Explicit Cohorts and the ClusterQueues' cohortName: a change of either touches it.
        names: list[str] = await self._read(
            list_key(COHORT, None), lambda r: r.cohort_names(), _same
        )
        self.recorded.setdefault(
            list_key(CLUSTER_QUEUE, None), self.recorded[list_key(COHORT, None)]
        )
        return names


def _same(value: Any) -> object:
    return value


def _page_versions(page: Page) -> object:
    return _versions(page.items)
