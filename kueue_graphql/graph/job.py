"""batch/v1 Job: the usual owner of a Workload, and the parent of its Pods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Condition, Info, conditions, field, reads
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.kube.resources import JOB
from kueue_graphql.kueue.objects import metadata, spec, status

if TYPE_CHECKING:
    from kueue_graphql.graph.pod import Pod
    from kueue_graphql.graph.workload import Workload

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


@strawberry.type(description="batch/v1 Job.")
class Job(KubeObject):
    RESOURCE = JOB

    @field(description="The `kueue.x-k8s.io/queue-name` label: its LocalQueue.")
    async def queue_name(self, info: Info) -> str | None:
        return (metadata(await self.obj(info)).get("labels") or {}).get(QUEUE_NAME_LABEL)

    @strawberry.field
    async def suspend(self, info: Info) -> bool | None:
        return bool(spec(await self.obj(info)).get("suspend", False))

    @strawberry.field
    async def parallelism(self, info: Info) -> int | None:
        return spec(await self.obj(info)).get("parallelism")

    @strawberry.field
    async def completions(self, info: Info) -> int | None:
        return spec(await self.obj(info)).get("completions")

    @strawberry.field
    async def active(self, info: Info) -> int | None:
        return int(status(await self.obj(info)).get("active", 0))

    @strawberry.field
    async def succeeded(self, info: Info) -> int | None:
        return int(status(await self.obj(info)).get("succeeded", 0))

    @strawberry.field
    async def failed(self, info: Info) -> int | None:
        return int(status(await self.obj(info)).get("failed", 0))

    @strawberry.field
    async def start_time(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("startTime")

    @strawberry.field
    async def completion_time(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("completionTime")

    @strawberry.field
    async def conditions(self, info: Info) -> list[Condition] | None:
        return conditions(await self.obj(info))

    @field(description="Pods this Job created (by its controller-uid label).")
    async def pods(
        self, info: Info
    ) -> list[Annotated[Pod, strawberry.lazy("kueue_graphql.graph.pod")]] | None:
        from kueue_graphql.graph.pod import sorted_pods

        return sorted_pods(await reads(info).job_pods(await self.obj(info)))

    @field(description="The Workload Kueue created for this Job.")
    async def workload(
        self, info: Info
    ) -> Annotated[Workload, strawberry.lazy("kueue_graphql.graph.workload")] | None:
        from kueue_graphql.graph.workload import workload_of_owner

        return await workload_of_owner(info, self.ref_namespace or "", "Job", self.ref_name)


@strawberry.type
class JobQuery:
    @strawberry.field
    async def job(self, info: Info, namespace: str, name: str) -> Job | None:
        return Job.from_json(await reads(info).get(JOB, namespace, name))

    @strawberry.field
    async def jobs(
        self,
        info: Info,
        first: int,
        after: str | None = None,
        namespace: str | None = None,
        local_queue: str | None = None,
    ) -> Connection[Job] | None:
        selector = f"{QUEUE_NAME_LABEL}={local_queue}" if local_queue else None
        found = await reads(info).list_page(
            JOB, namespace, label_selector=selector, page=page_request(info, first, after)
        )
        return connection(found, Job.from_json, after=after)
