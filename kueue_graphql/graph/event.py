"""core/v1 Event."""

from __future__ import annotations

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import EVENT


@strawberry.type
class InvolvedObject:
    api_version: str | None
    kind: str | None
    namespace: str | None
    name: str | None
    uid: str | None


@strawberry.type
class Event(KubeObject):
    RESOURCE = EVENT

    @strawberry.field
    async def type(self, info: Info) -> str | None:
        return (await self.obj(info)).get("type")

    @strawberry.field
    async def reason(self, info: Info) -> str | None:
        return (await self.obj(info)).get("reason")

    @strawberry.field
    async def message(self, info: Info) -> str | None:
        return (await self.obj(info)).get("message")

    @strawberry.field
    async def count(self, info: Info) -> int | None:
        return (await self.obj(info)).get("count")

    @strawberry.field
    async def first_timestamp(self, info: Info) -> str | None:
        return (await self.obj(info)).get("firstTimestamp")

    @strawberry.field
    async def last_timestamp(self, info: Info) -> str | None:
        return (await self.obj(info)).get("lastTimestamp")

    @strawberry.field
    async def event_time(self, info: Info) -> str | None:
        return (await self.obj(info)).get("eventTime")

    @strawberry.field
    async def reporting_controller(self, info: Info) -> str | None:
        obj = await self.obj(info)
        return obj.get("reportingComponent") or (obj.get("source") or {}).get("component")

    @strawberry.field
    async def involved_object(self, info: Info) -> InvolvedObject | None:
        involved = (await self.obj(info)).get("involvedObject") or {}
        return InvolvedObject(
            api_version=involved.get("apiVersion"),
            kind=involved.get("kind"),
            namespace=involved.get("namespace"),
            name=involved.get("name"),
            uid=involved.get("uid"),
        )


@strawberry.type
class EventQuery:
    @field(description="core/v1 Events of a namespace (all namespaces if omitted).")
    async def events(
        self,
        info: Info,
        first: int,
        namespace: str | None = None,
        after: str | None = None,
        reason: str | None = None,
    ) -> Connection[Event] | None:
        selector = f"reason={reason}" if reason else None
        found = await reads(info).list_page(
            EVENT, namespace, field_selector=selector, page=page_request(info, first, after)
        )
        return connection(found, Event.from_json, after=after)
