"""ResourceFlavor: a kind of node, and which ClusterQueues offer it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import (
    JSON,
    Info,
    Taint,
    Toleration,
    as_json,
    field,
    reads,
    taints,
    tolerations,
)
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import NODE, RESOURCE_FLAVOR
from kueue_graphql.kueue.objects import spec

if TYPE_CHECKING:
    from kueue_graphql.graph.clusterqueue import ClusterQueue
    from kueue_graphql.graph.kubernetes_node import KubernetesNode
    from kueue_graphql.graph.topology import Topology


@strawberry.type(description="kueue.x-k8s.io/v1beta2 ResourceFlavor.")
class ResourceFlavor(KubeObject):
    RESOURCE = RESOURCE_FLAVOR

    @strawberry.field
    async def node_labels(self, info: Info) -> JSON | None:
        return as_json(dict(spec(await self.obj(info)).get("nodeLabels") or {}))

    @strawberry.field
    async def node_taints(self, info: Info) -> list[Taint] | None:
        return taints(spec(await self.obj(info)).get("nodeTaints"))

    @strawberry.field
    async def tolerations(self, info: Info) -> list[Toleration] | None:
        return tolerations(spec(await self.obj(info)).get("tolerations"))

    @strawberry.field
    async def topology_name(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("topologyName")

    @strawberry.field
    async def topology(
        self, info: Info
    ) -> Annotated[Topology, strawberry.lazy("kueue_graphql.graph.topology")] | None:
        from kueue_graphql.graph.topology import Topology

        name = spec(await self.obj(info)).get("topologyName")
        return Topology.ref(name) if name else None

    @field(description="ClusterQueues that offer this flavor, paged.")
    async def cluster_queues(
        self, info: Info, first: int, after: str | None = None
    ) -> (
        Connection[Annotated[ClusterQueue, strawberry.lazy("kueue_graphql.graph.clusterqueue")]]
        | None
    ):
        from kueue_graphql.graph.clusterqueue import ClusterQueue

        found = await reads(info).cluster_queues(
            flavor=self.ref_name, page=page_request(info, first, after)
        )
        return connection(found, ClusterQueue.from_json, after=after)

    @field(description="Nodes carrying all of this flavor's `nodeLabels`.")
    async def nodes(
        self, info: Info
    ) -> (
        list[Annotated[KubernetesNode, strawberry.lazy("kueue_graphql.graph.kubernetes_node")]]
        | None
    ):
        from kueue_graphql.graph.kubernetes_node import KubernetesNode

        labels = spec(await self.obj(info)).get("nodeLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or None
        return [
            KubernetesNode.from_json(n)
            for n in await reads(info).list_objects(NODE, label_selector=selector)
        ]


@strawberry.type
class ResourceFlavorQuery:
    @strawberry.field
    async def resource_flavor(self, info: Info, name: str) -> ResourceFlavor | None:
        return ResourceFlavor.from_json(await reads(info).get(RESOURCE_FLAVOR, None, name))

    @strawberry.field
    async def resource_flavors(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[ResourceFlavor] | None:
        found = await reads(info).list_page(RESOURCE_FLAVOR, page=page_request(info, first, after))
        return connection(found, ResourceFlavor.from_json, after=after)
