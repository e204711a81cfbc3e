"""ray.io/v1 RayJob (KubeRay ray-operator v1.6.0): its state, its Pods, its Workload."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import Condition, Info, conditions, field, reads
from kueue_graphql.kube.resources import RAY_JOB
from kueue_graphql.kueue.objects import metadata, spec, status
from kueue_graphql.lookups import owner_pods

if TYPE_CHECKING:
    from kueue_graphql.graph.pod import Pod
    from kueue_graphql.graph.workload import Workload

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


@strawberry.type(description="ray.io/v1 RayJob.")
class RayJob(KubeObject):
    RESOURCE = RAY_JOB

    @field(description="The `kueue.x-k8s.io/queue-name` label: its LocalQueue.")
    async def queue_name(self, info: Info) -> str | None:
        return (metadata(await self.obj(info)).get("labels") or {}).get(QUEUE_NAME_LABEL)

    @field(description="`spec.suspend`: Kueue holds it suspended until it admits its Workload.")
    async def suspend(self, info: Info) -> bool | None:
        return bool(spec(await self.obj(info)).get("suspend", False))

    @field(description="`spec.submissionMode` (K8sJobMode adds Kueue's `submitter` pod set).")
    async def submission_mode(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("submissionMode")

    @field(
        description="`status.jobDeploymentStatus`, set by the KubeRay operator (null before "
        "it acted: Initializing, Running, Complete, Failed, Suspended ...)."
    )
    async def job_deployment_status(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("jobDeploymentStatus") or None

    @field(description="`status.jobStatus`: the Ray job's own status (PENDING, RUNNING ...).")
    async def job_status(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("jobStatus") or None

    @field(description="`status.rayClusterName`: the RayCluster the KubeRay operator made for it.")
    async def ray_cluster_name(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("rayClusterName") or None

    @strawberry.field
    async def conditions(self, info: Info) -> list[Condition] | None:
        return conditions(await self.obj(info))

    @field(description="Its RayCluster's Pods (by `ray.io/cluster`, listed as the caller).")
    async def pods(
        self, info: Info
    ) -> list[Annotated[Pod, strawberry.lazy("kueue_graphql.graph.pod")]] | None:
        from kueue_graphql.graph.pod import sorted_pods

        found = await owner_pods(reads(info), self.ref_namespace or "", await self.obj(info), None)
        return sorted_pods(found)

    @field(description="The Workload Kueue created for this RayJob.")
    async def workload(
        self, info: Info
    ) -> Annotated[Workload, strawberry.lazy("kueue_graphql.graph.workload")] | None:
        from kueue_graphql.graph.workload import workload_of_owner

        return await workload_of_owner(info, self.ref_namespace or "", "RayJob", self.ref_name)


@strawberry.type
class RayJobQuery:
    @strawberry.field
    async def ray_job(self, info: Info, namespace: str, name: str) -> RayJob | None:
        return RayJob.from_json(await reads(info).get(RAY_JOB, namespace, name))
