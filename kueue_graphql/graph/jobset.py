"""jobset.x-k8s.io/v1alpha2 JobSet: replicated jobs, their Jobs and their Pods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Condition, Info, conditions, field, reads
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import JOB, JOB_SET, POD, Resource
from kueue_graphql.kueue.objects import labels, metadata, spec, status
from kueue_graphql.kueue.owners import JOB_SET_UID_LABEL, REPLICATED_JOB_NAME_LABEL

if TYPE_CHECKING:
    from kueue_graphql.graph.job import Job
    from kueue_graphql.graph.pod import Pod
    from kueue_graphql.graph.workload import Workload

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


def pods_per_replica(replicated_job: JsonObject) -> int:
    """Pods of one replica (one Job), as Kueue counts them: min(parallelism, completions),
    parallelism defaulting to 1 (kueue pkg/controller/jobs/jobset/jobset_controller.go,
    `PodsCountPerReplica`)."""
    job_spec = (replicated_job.get("template") or {}).get("spec") or {}
    parallelism = job_spec.get("parallelism")
    count = int(parallelism) if isinstance(parallelism, int) else 1
    completions = job_spec.get("completions")
    if isinstance(completions, int) and completions < count:
        count = completions
    return count


@strawberry.type(description="One of a JobSet's replicated jobs: `replicas` Jobs of one template.")
class ReplicatedJob:
    name: str
    replicas: int
    parallelism: int | None
    completions: int | None
    pods_per_replica: int = strawberry.field(
        description="min(parallelism, completions) of the Job template: Pods per Job as Kueue "
        "counts them."
    )
    pod_count: int = strawberry.field(
        description="replicas x podsPerReplica: the count of this pod set in the Workload."
    )
    ready: int | None = strawberry.field(description="From `status.replicatedJobsStatus`.")
    active: int | None
    succeeded: int | None
    failed: int | None
    suspended: int | None
    job_set: strawberry.Private[JobSet]

    @field(description="The Jobs the JobSet controller created for it (listed as the caller).")
    async def jobs(
        self, info: Info
    ) -> list[Annotated[Job, strawberry.lazy("kueue_graphql.graph.job")]] | None:
        from kueue_graphql.graph.job import Job

        children = await self.job_set.children(info, JOB)
        mine = [j for j in children if labels(j).get(REPLICATED_JOB_NAME_LABEL) == self.name]
        return sorted((Job.from_json(j) for j in mine), key=lambda j: j.ref_name)

    @field(description="The Pods of its Jobs (listed as the caller, by the JobSet's uid label).")
    async def pods(
        self, info: Info
    ) -> list[Annotated[Pod, strawberry.lazy("kueue_graphql.graph.pod")]] | None:
        from kueue_graphql.graph.pod import sorted_pods

        children = await self.job_set.children(info, POD)
        return sorted_pods(
            [p for p in children if labels(p).get(REPLICATED_JOB_NAME_LABEL) == self.name]
        )


@strawberry.type(description="jobset.x-k8s.io/v1alpha2 JobSet.")
class JobSet(KubeObject):
    RESOURCE = JOB_SET

    @field(description="The `kueue.x-k8s.io/queue-name` label: its LocalQueue.")
    async def queue_name(self, info: Info) -> str | None:
        return (metadata(await self.obj(info)).get("labels") or {}).get(QUEUE_NAME_LABEL)

    @strawberry.field
    async def suspend(self, info: Info) -> bool | None:
        return bool(spec(await self.obj(info)).get("suspend", False))

    @strawberry.field
    async def conditions(self, info: Info) -> list[Condition] | None:
        return conditions(await self.obj(info))

    @field(description="`status.terminalState`: Completed or Failed once the JobSet ended.")
    async def terminal_state(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("terminalState")

    @strawberry.field
    async def restarts(self, info: Info) -> int | None:
        return status(await self.obj(info)).get("restarts")

    @field(description="Its replicated jobs, in spec order: Kueue's pod sets, one each.")
    async def replicated_jobs(self, info: Info) -> list[ReplicatedJob] | None:
        obj = await self.obj(info)
        statuses = {
            str(s.get("name")): s for s in status(obj).get("replicatedJobsStatus") or [] if s
        }
        out = []
        for raw in spec(obj).get("replicatedJobs") or []:
            name = str(raw.get("name", ""))
            job_spec: dict[str, Any] = (raw.get("template") or {}).get("spec") or {}
            replicas = int(raw.get("replicas", 1))
            per_replica = pods_per_replica(raw)
            state = statuses.get(name, {})
            out.append(
                ReplicatedJob(
                    name=name,
                    replicas=replicas,
                    parallelism=job_spec.get("parallelism"),
                    completions=job_spec.get("completions"),
                    pods_per_replica=per_replica,
                    pod_count=replicas * per_replica,
                    ready=state.get("ready"),
                    active=state.get("active"),
                    succeeded=state.get("succeeded"),
                    failed=state.get("failed"),
                    suspended=state.get("suspended"),
                    job_set=self,
                )
            )
        return out

    async def children(self, info: Info, resource: Resource) -> list[JsonObject]:
        """Its Jobs or Pods: one list as the caller, by the JobSet's uid label, which the JobSet
        controller puts on both (so an older JobSet of the same name's are not taken)."""
        uid = metadata(await self.obj(info)).get("uid")
        selector = f"{JOB_SET_UID_LABEL}={uid}"
        return await reads(info).list_objects(resource, self.ref_namespace, label_selector=selector)

    @field(description="Every Pod of its Jobs.")
    async def pods(
        self, info: Info
    ) -> list[Annotated[Pod, strawberry.lazy("kueue_graphql.graph.pod")]] | None:
        from kueue_graphql.graph.pod import sorted_pods

        return sorted_pods(await self.children(info, POD))

    @field(description="The Workload Kueue created for this JobSet.")
    async def workload(
        self, info: Info
    ) -> Annotated[Workload, strawberry.lazy("kueue_graphql.graph.workload")] | None:
        from kueue_graphql.graph.workload import workload_of_owner

        return await workload_of_owner(info, self.ref_namespace or "", "JobSet", self.ref_name)


@strawberry.type
class JobSetQuery:
    @strawberry.field
    async def job_set(self, info: Info, namespace: str, name: str) -> JobSet | None:
        return JobSet.from_json(await reads(info).get(JOB_SET, namespace, name))
