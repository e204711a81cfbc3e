"""`Diagnosis.aheadOfMe`: what is ahead of a pending Workload, in counts and sums only.

No name, namespace or owner of another Workload ever appears: the types below have no field
that could carry one. Loaded by `kueue_graphql.lookups.ahead`, computed by the pure
`kueue_graphql.diagnosis.ahead`.
"""

from __future__ import annotations

from decimal import Decimal

import strawberry

from kueue_graphql.diagnosis.ahead import AheadReport, WhyAhead, ahead_of_me
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.quantity import (
    Quantity,
    ResourceQuantity,
    computed_quantities,
    replaced_by,
)
from kueue_graphql.kube.resources import WORKLOAD
from kueue_graphql.lookups.ahead import load_ahead

__all__ = ["AheadOfMe", "FlavorResourceAmount", "StartEstimateInfo", "WhyAheadCounts"]


@strawberry.type(description="How many of those ahead are ahead for which of Kueue's reasons.")
class WhyAheadCounts:
    higher_priority: int
    same_priority_earlier: int = strawberry.field(
        description="Same priority, submitted no later than this Workload."
    )
    same_priority_requeued: int = strawberry.field(
        description="Same priority, created later: Kueue orders an evicted Workload by its "
        "eviction time (this one's, or theirs)."
    )

    @classmethod
    def of(cls, why: WhyAhead | None) -> WhyAheadCounts | None:
        if why is None:
            return None
        return cls(
            higher_priority=why.higher_priority,
            same_priority_earlier=why.same_priority_earlier,
            same_priority_requeued=why.same_priority_requeued,
        )


@strawberry.type(description="An amount of one resource in one flavor.")
class FlavorResourceAmount:
    flavor: str
    resource: str
    value: Quantity

    @replaced_by("value")
    def quantity(self) -> str:
        return self.value.quantity

    @classmethod
    def of(cls, flavor: str, resource: str, value: Decimal) -> FlavorResourceAmount:
        return cls(flavor=flavor, resource=resource, value=Quantity.computed(value, resource))


@strawberry.type(
    description="When enough quota is released for a pending Workload, only with its basis."
)
class StartEstimateInfo:
    releases_by: str | None = strawberry.field(
        description="RFC 3339: quota for it is released by then at the latest (admitted "
        "Workloads' maximumExecutionTimeSeconds / Jobs' activeDeadlineSeconds). Null without "
        "a basis."
    )
    explanation: str = strawberry.field(description="The basis, or why there is no estimate.")


@strawberry.type(
    description="What is ahead of a pending Workload: counts and sums, never names, namespaces "
    "or owners of other Workloads. Parts that could not be read are null and named in "
    "`unavailable`."
)
class AheadOfMe:
    report: strawberry.Private[AheadReport]

    @field(description="Workloads ahead in its LocalQueue (its own namespace's).")
    def in_local_queue(self) -> int | None:
        return self.report.in_local_queue

    @field(description="Workloads ahead in its ClusterQueue, every namespace (Kueue's position).")
    def in_cluster_queue(self) -> int | None:
        return self.report.in_cluster_queue

    @field(
        description="Total requests of the Workloads ahead in its LocalQueue, per resource "
        "(pending Workloads have no flavor yet)."
    )
    def requested_ahead_in_local_queue(self) -> list[ResourceQuantity] | None:
        r = self.report.local_requests
        return None if r is None else computed_quantities(r)

    @field(description="The same over the whole ClusterQueue; null in `impersonate` mode.")
    def requested_ahead_in_cluster_queue(self) -> list[ResourceQuantity] | None:
        r = self.report.cluster_requests
        return None if r is None else computed_quantities(r)

    @field(
        description="Quota held by admitted Workloads in its ClusterQueue (status."
        "flavorsReservation), per flavor and resource."
    )
    def held_by_admitted(self) -> list[FlavorResourceAmount] | None:
        held = self.report.held
        return None if held is None else [FlavorResourceAmount.of(f, r, v) for f, r, v in held]

    @strawberry.field
    def why_ahead_in_local_queue(self) -> WhyAheadCounts | None:
        return WhyAheadCounts.of(self.report.why_local)

    @strawberry.field
    def why_ahead_in_cluster_queue(self) -> WhyAheadCounts | None:
        return WhyAheadCounts.of(self.report.why_cluster)

    @strawberry.field
    def queueing_strategy(self) -> str | None:
        return self.report.queueing_strategy

    @field(description="How Kueue orders the queue, and what the queueing strategy means here.")
    def ordering(self) -> str:
        return self.report.ordering

    @field(description="The earliest-start estimate, with its basis; null fields without one.")
    def start_estimate(self) -> StartEstimateInfo | None:
        est = self.report.start
        if est is None:
            return None
        when = est.releases_by.strftime("%Y-%m-%dT%H:%M:%SZ") if est.releases_by else None
        return StartEstimateInfo(releases_by=when, explanation=est.explanation)

    @field(description="What could not be answered, and why (e.g. which parts need `cache` mode).")
    def unavailable(self) -> list[str]:
        return list(self.report.unavailable)

    @classmethod
    async def load(
        cls, info: Info, namespace: str, name: str, local_queue: str, cluster_queue: str | None
    ) -> AheadOfMe | None:
        reader = reads(info)
        workload = await reader.get(WORKLOAD, namespace, name)
        loaded = await load_ahead(
            reader, info.context.disclosure, namespace, workload, local_queue, cluster_queue
        )
        return None if loaded is None else cls(report=ahead_of_me(loaded))
