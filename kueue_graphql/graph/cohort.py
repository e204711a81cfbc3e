"""Cohort: explicit (a Cohort object) or implicit (only named by ClusterQueues' cohortName)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from kueue_graphql.core.errors import NotFoundError
from kueue_graphql.graph.clusterqueue import ClusterQueue, ResourceGroup, resource_groups
from kueue_graphql.graph.common import JSON, Info, as_json, field, reads
from kueue_graphql.graph.node import Node, global_id
from kueue_graphql.graph.pagination import Connection, connection, page_request, paginate
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import COHORT
from kueue_graphql.kueue.objects import metadata, spec
from kueue_graphql.lookups import page_of

if TYPE_CHECKING:
    from kueue_graphql.graph.event import Event


@strawberry.type(
    description="A Cohort. Kueue lets a cohort exist only as a ClusterQueue's `cohortName`; "
    "such an implicit cohort has `explicit: false`, no parent and no object of its own."
)
class Cohort(Node):
    name: str

    @field(
        description="Global and stable, from the cohort's name (explicit or implicit); "
        "`node(id:)` finds it again."
    )
    def id(self) -> strawberry.ID:
        return global_id("Cohort", "", self.name)

    async def obj(self, info: Info) -> JsonObject | None:
        return await reads(info).find(COHORT, None, self.name)

    @field(description="Whether a Cohort object exists for this name.")
    async def explicit(self, info: Info) -> bool | None:
        return await self.obj(info) is not None

    @strawberry.field
    async def parent_name(self, info: Info) -> str | None:
        obj = await self.obj(info)
        return spec(obj).get("parentName") if obj else None

    @strawberry.field
    async def parent(self, info: Info) -> Cohort | None:
        obj = await self.obj(info)
        parent = spec(obj).get("parentName") if obj else None
        return Cohort(name=parent) if parent else None

    @strawberry.field
    async def resource_groups(self, info: Info) -> list[ResourceGroup] | None:
        obj = await self.obj(info)
        return resource_groups(spec(obj).get("resourceGroups")) if obj else []

    @strawberry.field
    async def fair_sharing(self, info: Info) -> JSON | None:
        obj = await self.obj(info)
        return spec(obj).get("fairSharing") if obj else None

    @field(description="The Cohort object's JSON; null for an implicit cohort.")
    async def raw(self, info: Info) -> JSON | None:
        return as_json(await self.obj(info))

    @field(description="ClusterQueues whose `cohortName` is this cohort, paged.")
    async def members(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[ClusterQueue] | None:
        found = await reads(info).cluster_queues(
            cohort=self.name, page=page_request(info, first, after)
        )
        return connection(found, ClusterQueue.from_json, after=after)

    @field(description="Cohorts whose `parentName` is this cohort, paged.")
    async def children(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[Cohort] | None:
        # Cohorts are few and cluster-scoped: the list is read whole, then paged.
        page = page_of(await reads(info).child_cohorts(self.name), page_request(info, first, after))
        return connection(page, lambda c: Cohort(name=str(metadata(c).get("name"))), after=after)

    @strawberry.field
    async def events(
        self, info: Info
    ) -> list[Annotated[Event, strawberry.lazy("kueue_graphql.graph.event")]] | None:
        from kueue_graphql.graph.event import Event

        obj = await self.obj(info)
        if obj is None:
            return []
        return [Event.from_json(e) for e in await reads(info).events_for(obj)]


@strawberry.type
class CohortQuery:
    @field(description="A cohort by name, explicit or implicit.")
    async def cohort(self, info: Info, name: str) -> Cohort | None:
        return await load_cohort(info, name)

    @field(description="All cohorts, explicit and implicit.")
    async def cohorts(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[Cohort] | None:
        # Implicit cohorts have no object; paginate over name-only stand-ins.
        named = [{"metadata": {"name": n}} for n in await reads(info).cohort_names()]
        return paginate(
            named,
            first,
            after,
            info.context.limits.max_page_size,
            lambda o: Cohort(name=str(o["metadata"]["name"])),
        )


async def load_cohort(info: Info, name: str) -> Cohort:
    """The cohort named `name`, explicit or implicit; NotFoundError when there is neither."""
    if await reads(info).find(COHORT, None, name) is not None:
        return Cohort(name=name)
    if name in await reads(info).cohort_names():
        return Cohort(name=name)
    raise NotFoundError("Cohort", name)
