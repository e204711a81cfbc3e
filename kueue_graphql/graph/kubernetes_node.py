"""core/v1 Node: a machine of the cluster (named KubernetesNode in the schema: `Node` is
Relay's interface of objects with a global id, graph/node.py)."""

from __future__ import annotations

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import (
    Condition,
    Info,
    Taint,
    conditions,
    field,
    reads,
    taints,
)
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.graph.quantity import ResourceQuantity, resource_list
from kueue_graphql.kube.resources import NODE
from kueue_graphql.kueue.objects import spec, status


@strawberry.type(description="core/v1 Node: a machine of the cluster.")
class KubernetesNode(KubeObject):
    RESOURCE = NODE

    @strawberry.field
    async def taints(self, info: Info) -> list[Taint] | None:
        return taints(spec(await self.obj(info)).get("taints"))

    @strawberry.field
    async def unschedulable(self, info: Info) -> bool | None:
        return bool(spec(await self.obj(info)).get("unschedulable", False))

    @strawberry.field
    async def allocatable(self, info: Info) -> list[ResourceQuantity] | None:
        return resource_list(status(await self.obj(info)).get("allocatable"))

    @strawberry.field
    async def capacity(self, info: Info) -> list[ResourceQuantity] | None:
        return resource_list(status(await self.obj(info)).get("capacity"))

    @strawberry.field
    async def conditions(self, info: Info) -> list[Condition] | None:
        return conditions(await self.obj(info))


@strawberry.type
class KubernetesNodeQuery:
    @field(description="A core/v1 Node by name (`node(id:)` is Relay's lookup by global id).")
    async def kubernetes_node(self, info: Info, name: str) -> KubernetesNode | None:
        return KubernetesNode.from_json(await reads(info).get(NODE, None, name))

    @field(description="core/v1 Nodes, optionally matching a label selector.")
    async def kubernetes_nodes(
        self,
        info: Info,
        first: int,
        after: str | None = None,
        label_selector: str | None = None,
    ) -> Connection[KubernetesNode] | None:
        found = await reads(info).list_page(
            NODE, label_selector=label_selector, page=page_request(info, first, after)
        )
        return connection(found, KubernetesNode.from_json, after=after)
