"""Workload: the unit of admission, and the `workloadFor` entry point of the admission path."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from kueue_graphql.core.errors import NotFoundError
from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import (
    JSON,
    Condition,
    Info,
    as_json,
    conditions,
    field,
    reads,
    selected_nodes,
)
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.graph.quantity import ResourceQuantity, quantities, resource_list
from kueue_graphql.graph.topology_assignment import (
    TopologyAssignment,
    TopologyRequest,
    topology_assignment_of,
    topology_request_of,
)
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import JOB, JOB_SET, OWNER_KINDS, RAY_JOB, WORKLOAD, Resource
from kueue_graphql.kueue.conditions import workload_status
from kueue_graphql.kueue.node_failure import unhealthy_nodes
from kueue_graphql.kueue.objects import metadata, spec, status
from kueue_graphql.kueue.owners import (
    controller_reference,
    owner_facts,
    owner_status,
    owner_suspended,
    suspended_by,
)
from kueue_graphql.kueue.requests import spec_podset_requests, total_requests
from kueue_graphql.lookups import OwnerReads, diagnosis_input_for_workload, owner_pods

if TYPE_CHECKING:
    from kueue_graphql.graph.clusterqueue import ClusterQueue
    from kueue_graphql.graph.diagnosis import Diagnosis
    from kueue_graphql.graph.job import Job
    from kueue_graphql.graph.jobset import JobSet
    from kueue_graphql.graph.localqueue import LocalQueue
    from kueue_graphql.graph.pod import Pod
    from kueue_graphql.graph.priorityclass import WorkloadPriorityClass
    from kueue_graphql.graph.rayjob import RayJob


@strawberry.enum(description="kueuectl's workload status: the furthest stage reached.")
class WorkloadStatus(Enum):
    PENDING = "pending"
    QUOTARESERVED = "quotareserved"
    ADMITTED = "admitted"
    FINISHED = "finished"


@strawberry.type(description="A pod set with its requests per pod and for all `count` pods.")
class PodSet:
    name: str
    count: int
    min_count: int | None
    requests: list[ResourceQuantity] = strawberry.field(description="Per pod.")
    total_requests: list[ResourceQuantity] = strawberry.field(description="Per pod x count.")
    template: JSON
    topology_request: TopologyRequest | None = strawberry.field(
        description="What this pod set asks of topology-aware scheduling; null: nothing."
    )


@strawberry.type
class FlavorAssignment:
    resource: str
    flavor: str


@strawberry.type
class PodSetAssignment:
    name: str
    flavors: list[FlavorAssignment]
    resource_usage: list[ResourceQuantity]
    count: int | None
    topology_assignment: TopologyAssignment | None = strawberry.field(
        description="Where Kueue's topology-aware scheduling placed the Pods; null without TAS."
    )


@strawberry.type
class Admission:
    cluster_queue: str
    pod_set_assignments: list[PodSetAssignment]


@strawberry.type
class AdmissionCheckState:
    name: str
    state: str
    message: str | None
    last_transition_time: str | None
    retry_count: int | None


@strawberry.type
class RequeueState:
    count: int | None
    requeue_at: str | None


@strawberry.type
class PodSetRequestStatus:
    name: str
    resources: list[ResourceQuantity]


@strawberry.type
class PriorityClassRef:
    group: str | None
    kind: str | None
    name: str


@strawberry.type(description="Where a pending Workload stands, from Kueue's visibility API.")
class QueuePosition:
    position_in_cluster_queue: int
    position_in_local_queue: int
    priority: int | None


@strawberry.type
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None


def _controller_owner(obj: JsonObject) -> dict[str, Any] | None:
    found = controller_reference(obj)
    return dict(found) if found is not None else None


def _owner_named(obj: JsonObject, resource: Resource) -> str | None:
    """The name of the Workload's controlling owner when it is of `resource`'s kind and group."""
    owner = _controller_owner(obj)
    if owner is None or owner.get("kind") != resource.kind:
        return None
    if not str(owner.get("apiVersion", "")).startswith(f"{resource.group}/"):
        return None
    return str(owner.get("name", "")) or None


@strawberry.enum(description="Who holds a suspended owner.")
class SuspendedBy(Enum):
    KUEUE = "kueue"
    USER = "user"


@strawberry.type(
    description="The object Kueue's job framework manages for this Workload (its controlling "
    "ownerReference; for a pod group, its first Pod), whatever its kind. `kind`, `apiVersion` "
    "and `name` come from the Workload; the other fields read the object as the caller "
    "(FORBIDDEN when they may not get it) and are null for a kind the service does not read."
)
class WorkloadOwner:
    kind: str
    api_version: str
    name: str
    namespace: str | None
    workload: strawberry.Private[JsonObject]
    loaded: strawberry.Private[JsonObject | None] = None

    async def obj(self, info: Info) -> JsonObject | None:
        resource = OWNER_KINDS.get(self.kind)
        if resource is None or self.api_version.rpartition("/")[0] != resource.group:
            return None
        if self.loaded is None:
            self.loaded = await reads(info).get(resource, self.namespace, self.name)
        return self.loaded

    @field(
        description="Whether the owner is suspended: `spec.suspend` (Job, JobSet, RayJob, "
        "RayCluster), Kueue's "
        "scheduling gate (Pod); null for a kind without one (StatefulSet: its Pods are gated)."
    )
    async def suspended(self, info: Info) -> bool | None:
        return owner_suspended(await self.obj(info))

    @field(
        description="Who holds it when suspended: KUEUE (its Workload is not admitted, or not "
        "released yet) or USER (the Workload was deactivated, `spec.active: false`)."
    )
    async def suspended_by(self, info: Info) -> SuspendedBy | None:
        who = suspended_by(await self.obj(info), self.workload)
        return SuspendedBy(who) if who else None

    @field(description="The owner's `status.conditions`.")
    async def conditions(self, info: Info) -> list[Condition] | None:
        found = await self.obj(info)
        return conditions(found) if found is not None else None

    @field(
        description="The kind's own one-word state, where it has one: a RayJob's "
        "`status.jobDeploymentStatus`, a RayCluster's `status.state`; null when unset (e.g. "
        "before the KubeRay operator acted) or for other kinds (read `conditions`)."
    )
    async def state(self, info: Info) -> str | None:
        return owner_status(await self.obj(info))

    @field(description="Who creates its Pods once Kueue admits it.")
    def pods_created_by(self) -> str | None:
        facts = owner_facts(self.kind)
        return facts.pods_created_by if facts else None

    @field(description="Its Pods, found as the diagnosis finds them (listed as the caller).")
    async def pods(
        self, info: Info
    ) -> list[Annotated[Pod, strawberry.lazy("kueue_graphql.graph.pod")]] | None:
        from kueue_graphql.graph.pod import sorted_pods

        owner = await self.obj(info)
        return sorted_pods(
            await owner_pods(reads(info), self.namespace or "", owner, self.workload)
        )


@strawberry.type(description="kueue.x-k8s.io/v1beta2 Workload.")
class Workload(KubeObject):
    RESOURCE = WORKLOAD

    @strawberry.field
    async def queue_name(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("queueName")

    @strawberry.field
    async def active(self, info: Info) -> bool | None:
        return bool(spec(await self.obj(info)).get("active", True))

    @strawberry.field
    async def priority(self, info: Info) -> int | None:
        return spec(await self.obj(info)).get("priority")

    @strawberry.field
    async def priority_class_ref(self, info: Info) -> PriorityClassRef | None:
        ref = spec(await self.obj(info)).get("priorityClassRef")
        if not ref or not ref.get("name"):
            return None
        return PriorityClassRef(group=ref.get("group"), kind=ref.get("kind"), name=ref["name"])

    @strawberry.field
    async def unhealthy_nodes(self, info: Info) -> list[str]:
        """status.unhealthyNodes: Nodes of the topology assignment Kueue marked as failed and is
        looking to replace (TAS); cleared once replaced, or when it evicts the Workload."""
        return list(unhealthy_nodes(await self.obj(info)))

    @strawberry.field
    async def maximum_execution_time_seconds(self, info: Info) -> int | None:
        return spec(await self.obj(info)).get("maximumExecutionTimeSeconds")

    @strawberry.field
    async def pod_sets(self, info: Info) -> list[PodSet] | None:
        obj = await self.obj(info)
        specs = spec(obj).get("podSets") or []
        return [
            PodSet(
                name=computed.name,
                count=computed.count,
                min_count=raw.get("minCount"),
                requests=quantities(computed.per_pod),
                total_requests=quantities(computed.total),
                template=as_json(raw.get("template") or {}),
                topology_request=topology_request_of(raw),
            )
            for raw, computed in zip(specs, spec_podset_requests(obj), strict=True)
        ]

    @field(
        description="What admission needs at once: every pod set's per-pod request x count, summed."
    )
    async def total_requests(self, info: Info) -> list[ResourceQuantity] | None:
        return quantities(total_requests(spec_podset_requests(await self.obj(info))))

    @strawberry.field
    async def status(self, info: Info) -> WorkloadStatus | None:
        return WorkloadStatus(workload_status(await self.obj(info)))

    @strawberry.field
    async def conditions(self, info: Info) -> list[Condition] | None:
        return conditions(await self.obj(info))

    @strawberry.field
    async def admission(self, info: Info) -> Admission | None:
        admission = status(await self.obj(info)).get("admission")
        if not admission:
            return None
        return Admission(
            cluster_queue=str(admission.get("clusterQueue", "")),
            pod_set_assignments=[
                PodSetAssignment(
                    name=str(a.get("name", "")),
                    flavors=[
                        FlavorAssignment(resource=r, flavor=f)
                        for r, f in sorted((a.get("flavors") or {}).items())
                    ],
                    resource_usage=resource_list(a.get("resourceUsage")),
                    count=a.get("count"),
                    topology_assignment=topology_assignment_of(a),
                )
                for a in admission.get("podSetAssignments") or []
            ],
        )

    @strawberry.field
    async def admission_checks(self, info: Info) -> list[AdmissionCheckState] | None:
        return [
            AdmissionCheckState(
                name=str(c.get("name", "")),
                state=str(c.get("state", "")),
                message=c.get("message"),
                last_transition_time=c.get("lastTransitionTime"),
                retry_count=c.get("retryCount"),
            )
            for c in status(await self.obj(info)).get("admissionChecks") or []
        ]

    @strawberry.field
    async def requeue_state(self, info: Info) -> RequeueState | None:
        state = status(await self.obj(info)).get("requeueState")
        if not state:
            return None
        return RequeueState(count=state.get("count"), requeue_at=state.get("requeueAt"))

    @field(description="`status.resourceRequests` as Kueue computed it.")
    async def resource_requests(self, info: Info) -> list[PodSetRequestStatus] | None:
        return [
            PodSetRequestStatus(
                name=str(r.get("name", "")), resources=resource_list(r.get("resources"))
            )
            for r in status(await self.obj(info)).get("resourceRequests") or []
        ]

    @strawberry.field
    async def accumulated_past_execution_time_seconds(self, info: Info) -> int | None:
        return status(await self.obj(info)).get("accumulatedPastExecutionTimeSeconds")

    @strawberry.field
    async def owner_references(self, info: Info) -> list[OwnerReference] | None:
        return [
            OwnerReference(
                api_version=str(o.get("apiVersion", "")),
                kind=str(o.get("kind", "")),
                name=str(o.get("name", "")),
                uid=str(o.get("uid", "")),
                controller=o.get("controller"),
            )
            for o in metadata(await self.obj(info)).get("ownerReferences") or []
        ]

    @field(
        description="Position among pending Workloads (0 = next). Null when not pending, "
        "when Kueue's visibility API is unavailable or not permitted, or (`impersonate` mode) "
        "when the Workload is further back than the 20,000 entries read for one position "
        "(`diagnose` then says `positionBeyond`)."
    )
    async def queue_position(self, info: Info) -> QueuePosition | None:
        obj = await self.obj(info)
        queue_name = spec(obj).get("queueName")
        if not queue_name or self.ref_namespace is None or workload_status(obj) != "pending":
            return None
        read = await reads(info).pending_read(self.ref_namespace, queue_name, self.ref_name)
        found = read.own
        if found is None:
            return None
        return QueuePosition(
            position_in_cluster_queue=int(found.item.get("positionInClusterQueue", 0)),
            # Counted among this namespace's entries: Kueue v0.17 lists same-named
            # LocalQueues of other namespaces too (kueue#10575).
            position_in_local_queue=found.position_in_local_queue,
            priority=found.item.get("priority"),
        )

    @field(description="The LocalQueue named by `spec.queueName`.")
    async def local_queue(
        self, info: Info
    ) -> Annotated[LocalQueue, strawberry.lazy("kueue_graphql.graph.localqueue")] | None:
        from kueue_graphql.graph.localqueue import LocalQueue

        queue_name = spec(await self.obj(info)).get("queueName")
        return LocalQueue.ref(queue_name, self.ref_namespace) if queue_name else None

    @field(
        description="The ClusterQueue from `status.admission`, else from the LocalQueue. Its "
        "`name` needs no access to the ClusterQueue; other fields do."
    )
    async def cluster_queue(
        self, info: Info
    ) -> Annotated[ClusterQueue, strawberry.lazy("kueue_graphql.graph.clusterqueue")] | None:
        from kueue_graphql.graph.clusterqueue import ClusterQueue

        name = await reads(info).cluster_queue_name_of(await self.obj(info))
        return ClusterQueue.ref(name) if name else None

    @strawberry.field
    async def priority_class(
        self, info: Info
    ) -> (
        Annotated[WorkloadPriorityClass, strawberry.lazy("kueue_graphql.graph.priorityclass")]
        | None
    ):
        from kueue_graphql.graph.priorityclass import WorkloadPriorityClass

        ref = spec(await self.obj(info)).get("priorityClassRef") or {}
        if ref.get("name") and ref.get("kind", "WorkloadPriorityClass") == "WorkloadPriorityClass":
            return WorkloadPriorityClass.ref(ref["name"])
        return None

    @field(description="Why this Workload is where it is (see the root field `diagnose`).")
    async def diagnosis(
        self, info: Info
    ) -> Annotated[Diagnosis, strawberry.lazy("kueue_graphql.graph.diagnosis")] | None:
        from kueue_graphql.graph.diagnosis import diagnose_workload

        return diagnose_workload(
            await diagnosis_input_for_workload(reads(info), await self.obj(info)),
            (self.ref_namespace or "", "Workload", self.ref_name),
        )

    @field(description="The object Kueue manages for this Workload, whatever its kind.")
    async def owner(self, info: Info) -> WorkloadOwner | None:
        obj = await self.obj(info)
        found = _controller_owner(obj)
        if not found:
            return None
        return WorkloadOwner(
            kind=str(found.get("kind", "")),
            api_version=str(found.get("apiVersion", "")),
            name=str(found.get("name", "")),
            namespace=self.ref_namespace,
            workload=obj,
        )

    @field(description="The owning JobSet (jobset.x-k8s.io), when the owner is one.")
    async def job_set(
        self, info: Info
    ) -> Annotated[JobSet, strawberry.lazy("kueue_graphql.graph.jobset")] | None:
        from kueue_graphql.graph.jobset import JobSet

        owned = _owner_named(await self.obj(info), JOB_SET)
        return JobSet.ref(owned, self.ref_namespace) if owned else None

    @field(description="The owning RayJob (ray.io), when the owner is one.")
    async def ray_job(
        self, info: Info
    ) -> Annotated[RayJob, strawberry.lazy("kueue_graphql.graph.rayjob")] | None:
        from kueue_graphql.graph.rayjob import RayJob

        owned = _owner_named(await self.obj(info), RAY_JOB)
        return RayJob.ref(owned, self.ref_namespace) if owned else None

    @field(description="The owning batch/v1 Job, when the owner is one.")
    async def job(
        self, info: Info
    ) -> Annotated[Job, strawberry.lazy("kueue_graphql.graph.job")] | None:
        from kueue_graphql.graph.job import Job

        owned = _owner_named(await self.obj(info), JOB)
        return Job.ref(owned, self.ref_namespace) if owned else None


async def workload_of_owner(info: Info, namespace: str, kind: str, name: str) -> Workload | None:
    """The Workload Kueue made for an owner (`Job.workload`, `JobSet.workload`); None when none."""
    try:
        found = await reads(info).workload_for_owner(namespace, kind, name)
    except NotFoundError:
        return None
    return Workload.from_json(found)


def _next_reads(info: Info) -> OwnerReads:
    """What the query reads below `workloadFor`, that a read mode may start early. From the
    document's own nodes: strawberry's `selected_fields` would build the whole subtree."""
    raw = info._raw_info
    below = [n.selection_set for n in raw.field_nodes if n.selection_set is not None]
    jobs = [j.selection_set for j in selected_nodes(below, "job", raw.fragments) if j.selection_set]
    return OwnerReads(
        events=bool(selected_nodes(below, "events", raw.fragments)),
        job_pods=bool(selected_nodes(jobs, "pods", raw.fragments)),
    )


@strawberry.type
class WorkloadQuery:
    @strawberry.field
    async def workload(self, info: Info, namespace: str, name: str) -> Workload | None:
        return Workload.from_json(await reads(info).get(WORKLOAD, namespace, name))

    @field(
        description='The Workload created for an owner object, e.g. kind "Job"; the usual '
        "start of the admission path."
    )
    async def workload_for(
        self, info: Info, namespace: str, kind: str, name: str
    ) -> Workload | None:
        return Workload.from_json(
            await reads(info).workload_for_owner(namespace, kind, name, _next_reads(info))
        )

    @field(description="Workloads, optionally of one namespace / LocalQueue / status.")
    async def workloads(
        self,
        info: Info,
        first: int,
        after: str | None = None,
        namespace: str | None = None,
        local_queue: str | None = None,
        cluster_queue: str | None = None,
        status: WorkloadStatus | None = None,
    ) -> Connection[Workload] | None:
        found = await reads(info).workloads(
            namespace,
            local_queue=local_queue,
            cluster_queue=cluster_queue,
            status=status.value if status is not None else None,
            page=page_request(info, first, after),
        )
        return connection(found, Workload.from_json, after=after)
