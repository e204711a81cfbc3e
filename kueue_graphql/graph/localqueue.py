"""LocalQueue: a namespace's door into a ClusterQueue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from kueue_graphql.graph import queue_fields
from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import LOCAL_QUEUE
from kueue_graphql.kueue.objects import spec

if TYPE_CHECKING:
    from kueue_graphql.graph.clusterqueue import ClusterQueue
    from kueue_graphql.graph.headroom import QueueQuota


@strawberry.type(description="kueue.x-k8s.io/v1beta2 LocalQueue.")
class LocalQueue(KubeObject):
    RESOURCE = LOCAL_QUEUE

    @field(description="`spec.clusterQueue`: the ClusterQueue's name.")
    async def cluster_queue_name(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("clusterQueue")

    @field(description="The ClusterQueue; `name` needs no access to it.")
    async def cluster_queue(
        self, info: Info
    ) -> Annotated[ClusterQueue, strawberry.lazy("kueue_graphql.graph.clusterqueue")] | None:
        from kueue_graphql.graph.clusterqueue import ClusterQueue

        name = spec(await self.obj(info)).get("clusterQueue")
        return ClusterQueue.ref(name) if name else None

    @field(
        description="The quota behind this LocalQueue: its ClusterQueue's nominal quota, "
        "borrowing/lending limits, usage and headroom, and the cohort's totals. FORBIDDEN unless "
        "the caller may read the ClusterQueue or the service's quota disclosure policy is at "
        "`quota` (then `numbersFrom: DISCLOSURE_POLICY`)."
    )
    async def quota(
        self, info: Info
    ) -> Annotated[QueueQuota, strawberry.lazy("kueue_graphql.graph.headroom")] | None:
        from kueue_graphql.graph.headroom import QueueQuota

        name = spec(await self.obj(info)).get("clusterQueue")
        return await QueueQuota.load(info, str(name)) if name else None

    stop_policy = strawberry.field(resolver=queue_fields.stop_policy)
    fair_sharing = strawberry.field(resolver=queue_fields.fair_sharing)
    conditions = strawberry.field(resolver=queue_fields.queue_conditions)
    pending_workloads = strawberry.field(resolver=queue_fields.pending_workloads)
    reserving_workloads = strawberry.field(resolver=queue_fields.reserving_workloads)
    admitted_workloads = strawberry.field(resolver=queue_fields.admitted_workloads)
    flavors_reservation = strawberry.field(resolver=queue_fields.flavors_reservation)
    flavors_usage = strawberry.field(resolver=queue_fields.flavors_usage)

    workloads = strawberry.field(
        resolver=queue_fields.workloads,
        description="Workloads submitted to this LocalQueue, paged.",
    )


@strawberry.type
class LocalQueueQuery:
    @strawberry.field
    async def local_queue(self, info: Info, namespace: str, name: str) -> LocalQueue | None:
        return LocalQueue.from_json(await reads(info).get(LOCAL_QUEUE, namespace, name))

    @strawberry.field
    async def local_queues(
        self,
        info: Info,
        first: int,
        after: str | None = None,
        namespace: str | None = None,
        cluster_queue: str | None = None,
    ) -> Connection[LocalQueue] | None:
        found = await reads(info).local_queues(
            namespace, cluster_queue=cluster_queue, page=page_request(info, first, after)
        )
        return connection(found, LocalQueue.from_json, after=after)
