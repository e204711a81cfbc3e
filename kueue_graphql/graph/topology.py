"""Topology: the node-label levels used for topology-aware scheduling."""

from __future__ import annotations

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Info, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import TOPOLOGY
from kueue_graphql.kueue.objects import spec


@strawberry.type
class TopologyLevel:
    node_label: str


@strawberry.type(description="kueue.x-k8s.io/v1beta2 Topology.")
class Topology(KubeObject):
    RESOURCE = TOPOLOGY

    @strawberry.field
    async def levels(self, info: Info) -> list[TopologyLevel] | None:
        return [
            TopologyLevel(node_label=str(level.get("nodeLabel", "")))
            for level in spec(await self.obj(info)).get("levels") or []
        ]


@strawberry.type
class TopologyQuery:
    @strawberry.field
    async def topology(self, info: Info, name: str) -> Topology | None:
        return Topology.from_json(await reads(info).get(TOPOLOGY, None, name))

    @strawberry.field
    async def topologies(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[Topology] | None:
        found = await reads(info).list_page(TOPOLOGY, page=page_request(info, first, after))
        return connection(found, Topology.from_json, after=after)
