"""core/v1 Namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import LOCAL_QUEUE, NAMESPACE
from kueue_graphql.kueue.objects import status

if TYPE_CHECKING:
    from kueue_graphql.graph.localqueue import LocalQueue


@strawberry.type(description="core/v1 Namespace.")
class Namespace(KubeObject):
    RESOURCE = NAMESPACE

    @strawberry.field
    async def phase(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("phase")

    @strawberry.field
    async def local_queues(
        self, info: Info
    ) -> list[Annotated[LocalQueue, strawberry.lazy("kueue_graphql.graph.localqueue")]] | None:
        from kueue_graphql.graph.localqueue import LocalQueue

        return [
            LocalQueue.from_json(q)
            for q in await reads(info).list_objects(LOCAL_QUEUE, self.ref_name)
        ]


@strawberry.type
class NamespaceQuery:
    @field(name="namespace")
    async def namespace_by_name(self, info: Info, name: str) -> Namespace | None:
        return Namespace.from_json(await reads(info).get(NAMESPACE, None, name))

    @strawberry.field
    async def namespaces(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[Namespace] | None:
        found = await reads(info).list_page(NAMESPACE, page=page_request(info, first, after))
        return connection(found, Namespace.from_json, after=after)
