"""ClusterQueue: quota, cohort membership, usage, and the queues and workloads it serves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from kueue_graphql.graph import queue_fields
from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import JSON, Info, field, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.graph.quantity import Quantity, amount_of, replaced_by, text_of
from kueue_graphql.kube.resources import CLUSTER_QUEUE
from kueue_graphql.kueue.objects import spec
from kueue_graphql.lookups import flavor_names

if TYPE_CHECKING:
    from kueue_graphql.graph.cohort import Cohort
    from kueue_graphql.graph.localqueue import LocalQueue
    from kueue_graphql.graph.resourceflavor import ResourceFlavor


@strawberry.type(description="Quota of one resource in one flavor (`resourceGroups[].flavors[]`).")
class ResourceQuota:
    name: str
    nominal_quota_value: Quantity | None
    borrowing_limit_value: Quantity | None = strawberry.field(description="Null: no limit.")
    lending_limit_value: Quantity | None = strawberry.field(description="Null: no limit.")

    @replaced_by("nominalQuotaValue")
    def nominal_quota(self) -> str | None:
        return text_of(self.nominal_quota_value)

    @replaced_by("nominalQuotaValue")
    def nominal_quota_amount(self) -> Decimal | None:
        return amount_of(self.nominal_quota_value)

    @replaced_by("borrowingLimitValue")
    def borrowing_limit(self) -> str | None:
        return text_of(self.borrowing_limit_value)

    @replaced_by("borrowingLimitValue")
    def borrowing_limit_amount(self) -> Decimal | None:
        return amount_of(self.borrowing_limit_value)

    @replaced_by("lendingLimitValue")
    def lending_limit(self) -> str | None:
        return text_of(self.lending_limit_value)

    @replaced_by("lendingLimitValue")
    def lending_limit_amount(self) -> Decimal | None:
        return amount_of(self.lending_limit_value)


@strawberry.type
class FlavorQuotas:
    name: str
    resources: list[ResourceQuota]

    @strawberry.field
    def flavor(
        self,
    ) -> Annotated[ResourceFlavor, strawberry.lazy("kueue_graphql.graph.resourceflavor")]:
        from kueue_graphql.graph.resourceflavor import ResourceFlavor

        return ResourceFlavor.ref(self.name)


@strawberry.type
class ResourceGroup:
    covered_resources: list[str]
    flavors: list[FlavorQuotas]


def resource_groups(groups: Sequence[Mapping[str, Any]] | None) -> list[ResourceGroup]:
    result = []
    for group in groups or []:
        flavors = []
        for flavor in group.get("flavors") or []:
            quotas = []
            for resource in flavor.get("resources") or []:
                quotas.append(
                    ResourceQuota(
                        name=str(resource.get("name", "")),
                        nominal_quota_value=Quantity.maybe_written(resource.get("nominalQuota")),
                        borrowing_limit_value=Quantity.maybe_written(
                            resource.get("borrowingLimit")
                        ),
                        lending_limit_value=Quantity.maybe_written(resource.get("lendingLimit")),
                    )
                )
            flavors.append(FlavorQuotas(name=str(flavor.get("name", "")), resources=quotas))
        result.append(
            ResourceGroup(
                covered_resources=[str(r) for r in group.get("coveredResources") or []],
                flavors=flavors,
            )
        )
    return result


@strawberry.type(description="kueue.x-k8s.io/v1beta2 ClusterQueue.")
class ClusterQueue(KubeObject):
    RESOURCE = CLUSTER_QUEUE

    @strawberry.field
    async def cohort_name(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("cohortName")

    @field(description="The cohort, explicit (a Cohort object) or implicit (a name).")
    async def cohort(
        self, info: Info
    ) -> Annotated[Cohort, strawberry.lazy("kueue_graphql.graph.cohort")] | None:
        from kueue_graphql.graph.cohort import Cohort

        name = spec(await self.obj(info)).get("cohortName")
        return Cohort(name=name) if name else None

    @strawberry.field
    async def resource_groups(self, info: Info) -> list[ResourceGroup] | None:
        return resource_groups(spec(await self.obj(info)).get("resourceGroups"))

    @strawberry.field
    async def flavors(
        self, info: Info
    ) -> (
        list[Annotated[ResourceFlavor, strawberry.lazy("kueue_graphql.graph.resourceflavor")]]
        | None
    ):
        from kueue_graphql.graph.resourceflavor import ResourceFlavor

        return [ResourceFlavor.ref(name) for name in sorted(flavor_names(await self.obj(info)))]

    @strawberry.field
    async def queueing_strategy(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("queueingStrategy")

    @strawberry.field
    async def namespace_selector(self, info: Info) -> JSON | None:
        return spec(await self.obj(info)).get("namespaceSelector")

    @strawberry.field
    async def preemption(self, info: Info) -> JSON | None:
        return spec(await self.obj(info)).get("preemption")

    @strawberry.field
    async def flavor_fungibility(self, info: Info) -> JSON | None:
        return spec(await self.obj(info)).get("flavorFungibility")

    @strawberry.field
    async def admission_checks_strategy(self, info: Info) -> JSON | None:
        return spec(await self.obj(info)).get("admissionChecksStrategy")

    stop_policy = strawberry.field(resolver=queue_fields.stop_policy)
    fair_sharing = strawberry.field(resolver=queue_fields.fair_sharing)
    conditions = strawberry.field(resolver=queue_fields.queue_conditions)
    flavors_reservation = strawberry.field(resolver=queue_fields.flavors_reservation)
    flavors_usage = strawberry.field(resolver=queue_fields.flavors_usage)
    pending_workloads = strawberry.field(resolver=queue_fields.pending_workloads)
    reserving_workloads = strawberry.field(resolver=queue_fields.reserving_workloads)
    admitted_workloads = strawberry.field(resolver=queue_fields.admitted_workloads)

    @field(description="LocalQueues (in any namespace) pointing at this ClusterQueue.")
    async def local_queues(
        self, info: Info
    ) -> list[Annotated[LocalQueue, strawberry.lazy("kueue_graphql.graph.localqueue")]] | None:
        from kueue_graphql.graph.localqueue import LocalQueue

        items = (await reads(info).local_queues(cluster_queue=self.ref_name)).items
        return [LocalQueue.from_json(q) for q in items]

    workloads = strawberry.field(
        resolver=queue_fields.workloads,
        description="Workloads admitted here or pending in one of its LocalQueues, paged.",
    )


@strawberry.type
class ClusterQueueQuery:
    @strawberry.field
    async def cluster_queue(self, info: Info, name: str) -> ClusterQueue | None:
        return ClusterQueue.from_json(await reads(info).get(CLUSTER_QUEUE, None, name))

    @strawberry.field
    async def cluster_queues(
        self, info: Info, first: int, after: str | None = None, cohort: str | None = None
    ) -> Connection[ClusterQueue] | None:
        found = await reads(info).cluster_queues(
            cohort=cohort, page=page_request(info, first, after)
        )
        return connection(found, ClusterQueue.from_json, after=after)
