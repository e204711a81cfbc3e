"""AdmissionCheck: an extra gate a ClusterQueue can require before admission."""

from __future__ import annotations

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import JSON, Condition, Info, conditions, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import ADMISSION_CHECK
from kueue_graphql.kueue.objects import spec


@strawberry.type(description="kueue.x-k8s.io/v1beta2 AdmissionCheck.")
class AdmissionCheck(KubeObject):
    RESOURCE = ADMISSION_CHECK

    @strawberry.field
    async def controller_name(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("controllerName")

    @strawberry.field
    async def parameters(self, info: Info) -> JSON | None:
        return spec(await self.obj(info)).get("parameters")

    @strawberry.field
    async def conditions(self, info: Info) -> list[Condition] | None:
        return conditions(await self.obj(info))


@strawberry.type
class AdmissionCheckQuery:
    @strawberry.field
    async def admission_check(self, info: Info, name: str) -> AdmissionCheck | None:
        return AdmissionCheck.from_json(await reads(info).get(ADMISSION_CHECK, None, name))

    @strawberry.field
    async def admission_checks(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[AdmissionCheck] | None:
        found = await reads(info).list_page(ADMISSION_CHECK, page=page_request(info, first, after))
        return connection(found, AdmissionCheck.from_json, after=after)
