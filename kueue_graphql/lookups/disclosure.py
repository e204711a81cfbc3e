"""The quota disclosure policy: ClusterQueue figures for callers who may only `get` a LocalQueue.

Off by default (`serve --quota-disclosure none`): a caller sees a ClusterQueue's quota only when
RBAC lets her read the ClusterQueue, and nothing is guessed behind a 403. An admin may opt in:

- `verdict`: whatIf answers verdict, flavors and limiting factor for the ClusterQueue behind
  any LocalQueue the caller may `get`, without a single quota figure;
- `quota`: also the figures: nominal quota, borrowing and lending limits, usage, headroom and
  the cohort's totals (whatIf, `LocalQueue.quota`, `diagnose { quota }`).

The caller is never granted the ClusterQueue object itself (`clusterQueue(name:)` and
`LocalQueue.clusterQueue { ... }` stay FORBIDDEN). The figures come from reads the service makes
under its own identity (`QuotaSource`): in `impersonate` mode a per-request read of the
ClusterQueues, Cohorts and ResourceFlavors (its ServiceAccount then needs get/list on those,
ClusterRole `kueue-graphql-quota-disclosure`); the watch cache of the `cache` read mode can serve
the same interface. With the policy off no such read is ever made.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.core.names import check_name
from kueue_graphql.kube.client import (
    ApiCallMeter,
    ApiStatusError,
    JsonObject,
    KubeClient,
    read_error,
)
from kueue_graphql.kube.resources import (
    CLUSTER_QUEUE,
    COHORT,
    NODE,
    POD,
    PRIORITY_CLASS,
    RESOURCE_FLAVOR,
    TOPOLOGY,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
    Resource,
)
from kueue_graphql.kueue.model import known
from kueue_graphql.kueue.objects import spec
from kueue_graphql.kueue.vocabulary import VISIBILITY_API_VERSION, VISIBILITY_GROUP
from kueue_graphql.lookups.observed import observe
from kueue_graphql.lookups.reader import KueueReader

# Kueue's visibility API of a ClusterQueue: read as the service (the policy's own reads), so not
# in kube/resources.py, which lists what callers are impersonated for.
_VISIBILITY_CLUSTER_QUEUE = Resource(
    "ClusterQueue", VISIBILITY_GROUP, VISIBILITY_API_VERSION, "clusterqueues", namespaced=False
)

__all__ = [
    "DisclosurePolicy",
    "NumbersSource",
    "QuotaDisclosure",
    "QuotaSource",
    "QuotaView",
    "ServiceQuotaReads",
    "quota_view",
]


class NumbersSource(enum.Enum):
    """Where the ClusterQueue figures of an answer come from."""

    CALLER_RBAC = "CALLER_RBAC"
    """The caller may read the ClusterQueue herself."""
    DISCLOSURE_POLICY = "DISCLOSURE_POLICY"
    """The service read them under its own identity because the policy allows it."""
    NONE = "NONE"
    """Not shown: the caller may not read the ClusterQueue and the policy does not allow it."""


class QuotaSource(Protocol):
    """The quota objects as the service itself sees them (not as the caller)."""

    async def cluster_queue(self, name: str) -> JsonObject: ...

    async def list_objects(self, resource: Resource) -> list[JsonObject]: ...

    async def cluster_queue_pending(self, name: str, limit: int) -> list[JsonObject]: ...


class ServiceQuotaReads:
    """QuotaSource over per-request reads under the service's own identity (no impersonation).

    Only ClusterQueues, Cohorts and ResourceFlavors, WorkloadPriorityClasses and PriorityClasses
    (a `whatIf` priorityClass' value), and the visibility API's pending list of a ClusterQueue
    (for `aheadOfMe`'s counts): never a Workload, so no other tenant's object is read. Each
    object or list is read at most once per request.
    """

    KINDS = (
        CLUSTER_QUEUE,
        COHORT,
        RESOURCE_FLAVOR,
        WORKLOAD_PRIORITY_CLASS,
        PRIORITY_CLASS,
        # whatIf's TAS step (its verdict only, no domain or Node name is passed on): where
        # the service may list them (ClusterRole kueue-graphql-topology-disclosure).
        TOPOLOGY,
        NODE,
        POD,
        WORKLOAD,
    )

    def __init__(self, client: KubeClient, meter: ApiCallMeter) -> None:
        self._client = client
        self._meter = meter
        self._reads: dict[str, asyncio.Future[JsonObject]] = {}

    def _once(self, key: str, read: Callable[[], Awaitable[JsonObject]]) -> Awaitable[JsonObject]:
        if key not in self._reads:
            self._reads[key] = asyncio.ensure_future(read())
        return asyncio.shield(self._reads[key])

    async def _get(self, path: str, resource: Resource, name: str | None) -> JsonObject:
        try:
            return await self._client.request_json("GET", path, meter=self._meter)
        except ApiStatusError as error:
            raise read_error(error, "get" if name else "list", resource, None, name) from error

    async def cluster_queue(self, name: str) -> JsonObject:
        check_name(name)
        path = CLUSTER_QUEUE.path(None, name)
        return await self._once(path, lambda: self._get(path, CLUSTER_QUEUE, name))

    async def cluster_queue_pending(self, name: str, limit: int) -> list[JsonObject]:
        """The first `limit` entries of Kueue's visibility list of the ClusterQueue's pending
        Workloads (priority, creationTimestamp, positions; names are never passed on)."""
        check_name(name)
        path = (
            f"/apis/{VISIBILITY_GROUP}/{VISIBILITY_API_VERSION}/clusterqueues/{name}"
            f"/pendingworkloads?limit={max(1, limit)}"
        )
        try:
            listed = await self._client.request_json("GET", path, meter=self._meter)
        except ApiStatusError as error:
            raise read_error(error, "get", _VISIBILITY_CLUSTER_QUEUE, None, name) from error
        return list(listed.get("items") or [])

    async def list_objects(self, resource: Resource) -> list[JsonObject]:
        if resource not in self.KINDS:
            raise ValueError(f"the disclosure policy does not read {resource}")
        path = resource.path()
        listed = await self._once(path, lambda: self._get(path, resource, None))
        return list(listed.get("items") or [])


@dataclass(frozen=True)
class DisclosurePolicy:
    level: QuotaDisclosure = QuotaDisclosure.NONE
    source: QuotaSource | None = None
    """None exactly when the level is NONE: then nothing can read as the service."""

    @property
    def enabled(self) -> bool:
        return self.level is not QuotaDisclosure.NONE and self.source is not None


@dataclass(frozen=True)
class QuotaView:
    """A ClusterQueue and what its arithmetic needs, as one answer may use them."""

    cluster_queue_name: str
    cluster_queue: dx.Observed[JsonObject]
    resource_flavors: dx.Observed[list[JsonObject]]
    cluster_queues: dx.Observed[list[JsonObject]]
    cohorts: dx.Observed[list[JsonObject]]
    numbers_from: NumbersSource
    show_numbers: bool
    detail: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


async def quota_view(
    reader: KueueReader, policy: DisclosurePolicy, cluster_queue: str
) -> QuotaView:
    """The ClusterQueue behind a LocalQueue the caller has already read (`get`).

    As the caller first; where RBAC refuses the ClusterQueue and the policy allows, as the
    service. Cohort members are read only for a ClusterQueue in a cohort.
    """
    cq = await observe(reader.get(CLUSTER_QUEUE, None, cluster_queue))
    if not isinstance(cq, dx.Forbidden):
        flavors = await observe(reader.list_objects(RESOURCE_FLAVOR))
        members: dx.Observed[list[JsonObject]] = dx.Absent("not in a cohort")
        cohorts: dx.Observed[list[JsonObject]] = dx.Absent("not in a cohort")
        read_cq = known(cq)
        if read_cq is not None and spec(read_cq).get("cohortName"):
            members, cohorts = await asyncio.gather(
                observe(reader.list_objects(CLUSTER_QUEUE)), observe(reader.list_objects(COHORT))
            )
        return QuotaView(
            cluster_queue, cq, flavors, members, cohorts, NumbersSource.CALLER_RBAC, True
        )
    if not policy.enabled or policy.source is None:
        return QuotaView(
            cluster_queue,
            cq,
            dx.Forbidden("not read"),
            dx.Forbidden("not read"),
            dx.Forbidden("not read"),
            NumbersSource.NONE,
            False,
            detail=f"you may not read ClusterQueue {cluster_queue}, and this service's quota "
            "disclosure policy is off",
        )
    source = policy.source
    service_cq = await observe(source.cluster_queue(cluster_queue))
    flavors_read = await observe(source.list_objects(RESOURCE_FLAVOR))
    members = cohorts = dx.Absent("not in a cohort")
    read_cq = known(service_cq)
    if read_cq is not None and spec(read_cq).get("cohortName"):
        members, cohorts = await asyncio.gather(
            observe(source.list_objects(CLUSTER_QUEUE)), observe(source.list_objects(COHORT))
        )
    if isinstance(service_cq, dx.Forbidden):
        # The service's own ServiceAccount lacks the read: say so, never "you may not".
        service_cq = dx.Forbidden(
            "the quota disclosure policy is on but the service may not read ClusterQueues "
            "(its ServiceAccount needs ClusterRole kueue-graphql-quota-disclosure)"
        )
    show = policy.level is QuotaDisclosure.QUOTA
    return QuotaView(
        cluster_queue,
        service_cq,
        flavors_read,
        members,
        cohorts,
        NumbersSource.DISCLOSURE_POLICY,
        show,
        detail=""
        if show
        else "figures withheld: this service's quota disclosure policy discloses verdicts only",
    )
