"""`LocalQueue.quota`: what is left behind a LocalQueue, for a caller who may `get` it.

The figures are the ClusterQueue's and its cohort tree's. They appear when the caller may read
the ClusterQueue (CALLER_RBAC), or, when she may not, only with the quota disclosure policy at
`quota` (DISCLOSURE_POLICY; `kueue_graphql.lookups.disclosure`). Otherwise FORBIDDEN, exactly as
reading the ClusterQueue itself: nothing is guessed behind a 403.
"""

from __future__ import annotations

import strawberry

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import ForbiddenError, NotFoundError
from kueue_graphql.diagnosis.headroom import Headroom, headroom
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.diagnosis import QuotaLine
from kueue_graphql.graph.quantity import Quantity
from kueue_graphql.kube.resources import CLUSTER_QUEUE
from kueue_graphql.kueue.model import known
from kueue_graphql.lookups.disclosure import NumbersSource, quota_view

__all__ = ["CohortQuotaTotal", "QueueQuota"]


@strawberry.type(
    description="One (flavor, resource) summed over the whole cohort tree: counts and sums, "
    "no ClusterQueue names."
)
class CohortQuotaTotal:
    cohort: str = strawberry.field(description="The tree's root cohort.")
    flavor: str
    resource: str
    nominal_quota: Quantity = strawberry.field(
        description="All member ClusterQueues' nominal quota plus the Cohorts' own."
    )
    reserved: Quantity = strawberry.field(
        description="All member ClusterQueues' `flavorsReservation`."
    )
    cluster_queues: int = strawberry.field(description="ClusterQueues in the tree.")


@strawberry.type(
    description="The quota behind a LocalQueue: its ClusterQueue's nominal quota, borrowing "
    "and lending limits, usage and headroom per (flavor, resource), and the cohort's totals."
)
class QueueQuota:
    result: strawberry.Private[Headroom]
    source: strawberry.Private[NumbersSource]

    @strawberry.field
    def cluster_queue_name(self) -> str:
        return self.result.cluster_queue

    @field(
        description="CALLER_RBAC: the caller may read the ClusterQueue; DISCLOSURE_POLICY: the "
        "service's quota disclosure policy discloses it (the caller still may not read the "
        "ClusterQueue object)."
    )
    def numbers_from(self) -> NumbersSource:
        return self.source

    @strawberry.field
    def cohort(self) -> str | None:
        return self.result.cohort

    @field(
        description="Per (flavor, resource), nothing requested: `reserved` is the usage, "
        "`availableNow` the headroom, `maximumCapacity` the most a Workload could ever get."
    )
    def lines(self) -> list[QuotaLine]:
        return [QuotaLine.of(line) for line in self.result.lines]

    @field(description="Empty when not in a cohort or when cohort members could not be read.")
    def cohort_totals(self) -> list[CohortQuotaTotal]:
        return [
            CohortQuotaTotal(
                cohort=t.cohort,
                flavor=t.flavor,
                resource=t.resource,
                nominal_quota=Quantity.computed(t.nominal_quota, t.resource),
                reserved=Quantity.computed(t.reserved, t.resource),
                cluster_queues=t.cluster_queues,
            )
            for t in self.result.cohort_totals
        ]

    @strawberry.field
    def detail(self) -> str:
        return self.result.detail

    @classmethod
    async def load(cls, info: Info, cluster_queue: str) -> QueueQuota:
        view = await quota_view(reads(info), info.context.disclosure, cluster_queue)
        cq = view.cluster_queue
        if isinstance(cq, dx.Absent):
            raise NotFoundError("ClusterQueue", cluster_queue)
        if isinstance(cq, dx.Forbidden) or not view.show_numbers:
            # As reading the ClusterQueue itself answers (policy off, or at `verdict` only).
            raise ForbiddenError(
                "get", CLUSTER_QUEUE.group, CLUSTER_QUEUE.plural, None, cluster_queue
            )

        members = known(view.cluster_queues)
        cohorts = known(view.cohorts)
        return cls(result=headroom(cq, members, cohorts), source=view.numbers_from)
