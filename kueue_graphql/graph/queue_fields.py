"""The fields LocalQueue and ClusterQueue share: Kueue gives both the same `spec.stopPolicy` and
`spec.fairSharing`, the same conditions, Workload counters and flavor usage in `status`. One
resolver each, declared in each type where its field stands (so each type keeps its order)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import (
    JSON,
    Condition,
    FlavorUsage,
    Info,
    conditions,
    flavor_usages,
    reads,
)
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kueue.objects import spec, status

if TYPE_CHECKING:
    from kueue_graphql.graph.workload import Workload, WorkloadStatus


async def stop_policy(root: KubeObject, info: Info) -> str | None:
    return spec(await root.obj(info)).get("stopPolicy")


async def fair_sharing(root: KubeObject, info: Info) -> JSON | None:
    return spec(await root.obj(info)).get("fairSharing")


async def queue_conditions(root: KubeObject, info: Info) -> list[Condition] | None:
    return conditions(await root.obj(info))


async def flavors_reservation(root: KubeObject, info: Info) -> list[FlavorUsage] | None:
    return flavor_usages(status(await root.obj(info)).get("flavorsReservation"))


async def flavors_usage(root: KubeObject, info: Info) -> list[FlavorUsage] | None:
    return flavor_usages(status(await root.obj(info)).get("flavorsUsage"))


async def pending_workloads(root: KubeObject, info: Info) -> int | None:
    return status(await root.obj(info)).get("pendingWorkloads")


async def reserving_workloads(root: KubeObject, info: Info) -> int | None:
    return status(await root.obj(info)).get("reservingWorkloads")


async def admitted_workloads(root: KubeObject, info: Info) -> int | None:
    return status(await root.obj(info)).get("admittedWorkloads")


async def workloads(
    root: KubeObject,
    info: Info,
    first: int,
    after: str | None = None,
    status: Annotated[WorkloadStatus, strawberry.lazy("kueue_graphql.graph.workload")]
    | None = None,
) -> Connection[Annotated[Workload, strawberry.lazy("kueue_graphql.graph.workload")]] | None:
    """A LocalQueue's Workloads (its namespace, by queue name) or a ClusterQueue's (admitted
    there or pending in one of its LocalQueues), paged."""
    from kueue_graphql.graph.workload import Workload

    local = root.ref_namespace is not None
    found = await reads(info).workloads(
        root.ref_namespace,
        local_queue=root.ref_name if local else None,
        cluster_queue=None if local else root.ref_name,
        status=status.value if status is not None else None,
        page=page_request(info, first, after),
    )
    return connection(found, Workload.from_json, after=after)
