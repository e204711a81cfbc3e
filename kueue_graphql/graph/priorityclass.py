"""WorkloadPriorityClass."""

from __future__ import annotations

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Info, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import WORKLOAD_PRIORITY_CLASS


@strawberry.type(description="kueue.x-k8s.io/v1beta2 WorkloadPriorityClass.")
class WorkloadPriorityClass(KubeObject):
    RESOURCE = WORKLOAD_PRIORITY_CLASS

    @strawberry.field
    async def value(self, info: Info) -> int | None:
        return (await self.obj(info)).get("value")

    @strawberry.field
    async def description(self, info: Info) -> str | None:
        return (await self.obj(info)).get("description")


@strawberry.type
class WorkloadPriorityClassQuery:
    @strawberry.field
    async def workload_priority_class(self, info: Info, name: str) -> WorkloadPriorityClass | None:
        return WorkloadPriorityClass.from_json(
            await reads(info).get(WORKLOAD_PRIORITY_CLASS, None, name)
        )

    @strawberry.field
    async def workload_priority_classes(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[WorkloadPriorityClass] | None:
        found = await reads(info).list_page(
            WORKLOAD_PRIORITY_CLASS, page=page_request(info, first, after)
        )
        return connection(found, WorkloadPriorityClass.from_json, after=after)
