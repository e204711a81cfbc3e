"""core/v1 Node."""

from __future__ import annotations

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import (
    Condition,
    Info,
    Taint,
    conditions,
    reads,
    taints,
)
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.graph.quantity import ResourceQuantity, resource_list
from kueue_graphql.kube.resources import NODE
from kueue_graphql.kueue.objects import spec, status


@strawberry.type(description="core/v1 Node.")
class Node(KubeObject):
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
class NodeQuery:
    @strawberry.field
    async def node(self, info: Info, name: str) -> Node | None:
        return Node.from_json(await reads(info).get(NODE, None, name))

    @strawberry.field
    async def nodes(
        self,
        info: Info,
        first: int,
        after: str | None = None,
        label_selector: str | None = None,
    ) -> Connection[Node] | None:
        found = await reads(info).list_page(
            NODE, label_selector=label_selector, page=page_request(info, first, after)
        )
        return connection(found, Node.from_json)
