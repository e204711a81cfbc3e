"""`Workload.diagnosis` and the root `diagnose`: "why is my job waiting?" as data.

The input is loaded as the calling user by `kueue_graphql.lookups.diagnosis`; the pure
`kueue_graphql.diagnosis` turns it into the verdict, and the types here only translate it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from kueue_graphql import diagnosis as dx
from kueue_graphql.graph.admissioncheck import AdmissionCheck
from kueue_graphql.graph.clusterqueue import ClusterQueue
from kueue_graphql.graph.cohort import Cohort
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.job import Job
from kueue_graphql.graph.jobset import JobSet
from kueue_graphql.graph.kubernetes_node import KubernetesNode
from kueue_graphql.graph.localqueue import LocalQueue
from kueue_graphql.graph.node import Node, global_id
from kueue_graphql.graph.pod import Pod
from kueue_graphql.graph.quantity import Quantity, exact, replaced_by
from kueue_graphql.graph.rayjob import RayJob
from kueue_graphql.graph.resourceflavor import ResourceFlavor
from kueue_graphql.graph.topology_assignment import TopologyPlacement, topology_placement_of
from kueue_graphql.graph.workload import Workload
from kueue_graphql.kube.kubectl_commands import command_accesses
from kueue_graphql.kube.resources import (
    DEPLOYMENT,
    canonical_kind,
)
from kueue_graphql.kueue.vocabulary import KUEUE_DEPLOYMENT, kueue_version_of
from kueue_graphql.lookups import KueueReader, diagnosis_input_for_owner, observe

if TYPE_CHECKING:
    from kueue_graphql.graph.ahead import AheadOfMe

__all__ = [
    "Diagnosis",
    "DiagnosisQuery",
    "diagnose_object",
    "diagnose_workload",
]

# The pure diagnosis' enums, registered as GraphQL enums (strawberry.enum returns the class).
strawberry.enum(
    dx.Stage, name="DiagnosisStage", description="Where on the admission path the workload stands."
)
strawberry.enum(
    dx.Layer, name="DiagnosisLayer", description="Which control plane to investigate next."
)
strawberry.enum(dx.ReasonSource, name="DiagnosisReasonSource")
strawberry.enum(
    dx.Visibility,
    name="DiagnosisVisibility",
    description="Whether a section could be computed from what the caller may read.",
)
strawberry.enum(dx.Verdict, name="QuotaVerdict")


@strawberry.type(description="A named number from a message or an object, e.g. maximumCapacity.")
class DiagnosisNumber:
    name: str
    value: Quantity = strawberry.field(description='As written, e.g. "2", "1536Mi".')
    number: strawberry.Private[Decimal]

    @replaced_by("value")
    def quantity(self) -> str:
        return self.value.quantity

    @replaced_by("value")
    def amount(self) -> Decimal:
        return self.number


@strawberry.type(description="A typed reference (kind, name, namespace) to a Kubernetes object.")
class ObjectReference:
    kind: str
    name: str
    namespace: str | None
    api_version: str | None

    @classmethod
    def of(cls, ref: dx.ObjectRef | None) -> ObjectReference | None:
        if ref is None:
            return None
        return cls(
            kind=ref.kind, name=ref.name, namespace=ref.namespace, api_version=ref.api_version
        )


@strawberry.type(description="One structured cause.")
class DiagnosisReason:
    code: str = strawberry.field(
        description="Normalized: Kueue's granular reason names where one applies "
        "(ExceedsMaxQuota, WaitingForQuota, ...), queue/flavor codes (LocalQueueStopped, "
        "UntoleratedFlavorTaint, ...), kube-scheduler causes (InsufficientResource, ...)."
    )
    kueue_reason: str | None = strawberry.field(
        description="The reason as written, e.g. the legacy `Pending` / `Inadmissible`."
    )
    message: str
    source: dx.ReasonSource
    resource: str | None
    flavor: str | None
    pod_set: str | None
    object: ObjectReference | None
    numbers: list[DiagnosisNumber]

    @classmethod
    def of(cls, r: dx.Reason) -> DiagnosisReason:
        return cls(
            code=r.code,
            kueue_reason=r.kueue_reason,
            message=r.message,
            source=r.source,
            resource=r.resource,
            flavor=r.flavor,
            pod_set=r.pod_set,
            object=ObjectReference.of(r.object),
            numbers=[
                DiagnosisNumber(
                    name=n.name,
                    value=Quantity(quantity=n.text, amount=exact(n.value)),
                    number=exact(n.value),
                )
                for n in r.numbers
            ],
        )


@strawberry.type(
    description="A limit that caps what the ClusterQueue can get, and where in the cohort tree "
    "it is set: raise it there."
)
class QuotaBindingLimit:
    kind: str = strawberry.field(description="ClusterQueue or Cohort.")
    name: str | None = strawberry.field(
        description="Null when you may not read that object (the quota disclosure policy "
        "gives its figures, never another tenant's name)."
    )
    limit: str = strawberry.field(
        description="lendingLimit (a member keeps part of its quota from the cohort), "
        "borrowingLimit (the queue's own, or a Cohort's towards its parent) or nominalQuota "
        "(a Cohort's own quota: the tree holds no more)."
    )
    value: Quantity
    withheld: Quantity | None = strawberry.field(
        description="lendingLimit: what that member keeps from this request (never lent, or, "
        "when the Workload must wait, unused and not lent). Null for the other limits."
    )

    @classmethod
    def of(cls, b: dx.BindingLimit, res: str) -> QuotaBindingLimit:
        return cls(
            kind=b.kind,
            name=b.name,
            limit=b.limit,
            value=Quantity.computed(b.value, res),
            withheld=Quantity.maybe_computed(b.withheld, res),
        )


@strawberry.type(description="One (flavor, resource) the Workload needs, against its queues.")
class QuotaLine:
    flavor: str
    resource: str
    requested: Quantity = strawberry.field(
        description="Aggregate: per-pod request x count, summed over pod sets."
    )
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = strawberry.field(description="Null: no limit.")
    lending_limit: Quantity | None = strawberry.field(description="Null: no limit.")
    reserved: Quantity = strawberry.field(description="`flavorsReservation` now.")
    used: Quantity = strawberry.field(description="`flavorsUsage` now.")
    borrowed: Quantity
    cohort: str | None
    cohort_can_lend: Quantity | None = strawberry.field(
        description="What the cohort could lend beyond the queue's own unused quota, now. "
        "Null when not in a cohort or when cohort members may not be read."
    )
    maximum_capacity: Quantity | None = strawberry.field(
        description="The most this queue could ever give (nominal + what borrowing can bring), "
        "as Kueue computes it."
    )
    available_now: Quantity | None
    verdict: dx.Verdict
    limited_by: str | None = strawberry.field(
        description="NOMINAL_QUOTA, BORROWING_LIMIT, COHORT or NOT_IN_CLUSTER_QUEUE."
    )
    counts_this_workload: bool = strawberry.field(
        description="The Workload holds a reservation: `reserved` includes its own request."
    )
    binding_limits: list[QuotaBindingLimit] = strawberry.field(
        description="Where it does not fit (NEVER_FITS, MUST_WAIT): the limits that make it so, "
        "wherever they sit in the cohort tree (limitedBy COHORT: another member's "
        "lendingLimit, a parent Cohort's borrowingLimit, the root Cohort's nominalQuota; "
        "BORROWING_LIMIT: the queue's own). Empty when it fits, when the cohort could not be "
        "read, or when only others' usage is in the way."
    )

    @classmethod
    def of(cls, line: dx.QuotaLine) -> QuotaLine:
        res = line.resource
        return cls(
            flavor=line.flavor,
            resource=res,
            requested=Quantity.computed(line.requested, res),
            nominal_quota=Quantity.computed(line.nominal_quota, res),
            borrowing_limit=Quantity.maybe_computed(line.borrowing_limit, res),
            lending_limit=Quantity.maybe_computed(line.lending_limit, res),
            reserved=Quantity.computed(line.reserved, res),
            used=Quantity.computed(line.used, res),
            borrowed=Quantity.computed(line.borrowed, res),
            cohort=line.cohort,
            cohort_can_lend=Quantity.maybe_computed(line.cohort_can_lend, res),
            maximum_capacity=Quantity.maybe_computed(line.maximum_capacity, res),
            available_now=Quantity.maybe_computed(line.available_now, res),
            verdict=line.verdict,
            limited_by=line.limited_by,
            counts_this_workload=line.counts_this_workload,
            binding_limits=[QuotaBindingLimit.of(b, res) for b in line.binding_limits],
        )


@strawberry.type(
    description="The Workload's needs against its ClusterQueue and cohort. FORBIDDEN when the "
    "caller may not read the ClusterQueue: no numbers are guessed."
)
class QuotaDiagnosis:
    visibility: dx.Visibility
    cluster_queue: str | None
    verdict: dx.Verdict | None = strawberry.field(
        description="Best flavor per resource group, worst across groups."
    )
    detail: str
    lines: list[QuotaLine]


@strawberry.type(description="A Pod that kube-scheduler has not placed, or the runtime started.")
class PodDiagnosis:
    pod: Pod
    phase: str
    scheduled_status: str | None
    scheduled_reason: str | None
    scheduled_message: str | None
    node_name: str | None
    node_selector: list[str] = strawberry.field(description='"key=value" pairs.')
    tolerations: list[str]
    failed_scheduling: list[str] = strawberry.field(
        description="Messages of the Pod's FailedScheduling events, oldest first."
    )
    reasons: list[DiagnosisReason]


@strawberry.type(
    description="Position among pending Workloads (0 = next): from Kueue's visibility API in "
    "the `impersonate` read mode, from the cache's copy of Kueue's queue order in `cache` mode."
)
class QueuePositionDiagnosis:
    visibility: dx.Visibility
    position_in_cluster_queue: int | None
    position_in_local_queue: int | None
    priority: int | None
    detail: str
    position_beyond: int | None = strawberry.field(
        default=None,
        description="Set when the Workload is pending but further back than the entries read "
        "for one position (20,000 of the LocalQueue's pending list, `impersonate` mode): its "
        "position is beyond this number, and both positions are null. Never set in `cache` "
        "mode.",
    )


@strawberry.type(description="One row of the Workload's status.schedulingStats.evictions.")
class EvictionCount:
    reason: str
    underlying_cause: str
    count: int


@strawberry.type(
    description="The Workload that preempted this one (from the UID in Kueue's Preempted "
    "condition). `workload` and `job` are null when the caller may not read it: its name stays "
    "hidden."
)
class PreemptorDiagnosis:
    uid: str
    preemptor: strawberry.Private[dx.Preemptor]

    @field(description="The preempting Workload, navigable.")
    def workload(self) -> Workload | None:
        ref = self.preemptor.workload
        return Workload.ref(ref.name, ref.namespace) if ref else None

    @field(description="The Job that owns the preempting Workload, when it is a Job.")
    def job(self) -> Job | None:
        ref = self.preemptor.owner
        return Job.ref(ref.name, ref.namespace) if ref and ref.kind == "Job" else None


BlockingObject = Annotated[
    LocalQueue
    | ClusterQueue
    | Cohort
    | ResourceFlavor
    | AdmissionCheck
    | Pod
    | KubernetesNode
    | Workload
    | Job
    | JobSet
    | RayJob,
    strawberry.union(
        "BlockingObject", description="The object that holds the workload, navigable."
    ),
]

_BLOCKING_TYPES: dict[str, Any] = {
    "LocalQueue": LocalQueue,
    "ClusterQueue": ClusterQueue,
    "ResourceFlavor": ResourceFlavor,
    "AdmissionCheck": AdmissionCheck,
    "Pod": Pod,
    "Node": KubernetesNode,
    "Workload": Workload,
    "Job": Job,
    "JobSet": JobSet,
    "RayJob": RayJob,
}


@strawberry.type(
    description="Why the workload is where it is: stage, the layer to look at, the object "
    "that holds it, the reasons with their numbers, quota, Pods, queue position, remedies."
)
class Diagnosis(Node):
    result: strawberry.Private[dx.Diagnosis]
    # Where it started: (namespace, Kind, name), the arguments of `diagnose`.
    start: strawberry.Private[tuple[str, str, str]]

    @field(
        description="Global and stable: from where the diagnosis starts (namespace, kind, name), "
        "so every answer about the same start, the `diagnosis` subscription's included, updates "
        "one cached object. `node(id:)` diagnoses again."
    )
    def id(self) -> strawberry.ID:
        return global_id("Diagnosis", *self.start)

    @strawberry.field
    def stage(self) -> dx.Stage:
        return self.result.stage

    @strawberry.field
    def layer(self) -> dx.Layer:
        return self.result.layer

    @strawberry.field
    def summary(self) -> str:
        return self.result.summary

    @field(description="The Workload diagnosed; null when there is none (yet).")
    def workload(self) -> Workload | None:
        ref = self.result.workload
        return Workload.ref(ref.name, ref.namespace) if ref else None

    @field(description="The object that owns the Workload (e.g. the Job).")
    def owner(self) -> ObjectReference | None:
        return ObjectReference.of(self.result.owner)

    @strawberry.field
    def local_queue(self) -> LocalQueue | None:
        owner = self.result.workload or self.result.owner
        name = self.result.local_queue
        return LocalQueue.ref(name, owner.namespace if owner else None) if name else None

    @field(description="Its ClusterQueue by name; reading its fields needs access to it.")
    def cluster_queue(self) -> ClusterQueue | None:
        name = self.result.cluster_queue
        return ClusterQueue.ref(name) if name else None

    @field(description="Kind, name and namespace of the object that holds the workload.")
    def blocking_ref(self) -> ObjectReference | None:
        return ObjectReference.of(self.result.blocking_object)

    @field(description="The same object, navigable (its fields follow the caller's RBAC).")
    def blocking_object(self) -> BlockingObject | None:
        ref = self.result.blocking_object
        if ref is None:
            return None
        if ref.kind == "Cohort":
            return Cohort(name=ref.name)
        cls = _BLOCKING_TYPES.get(ref.kind)
        if cls is None:
            return None
        found: BlockingObject = cls.ref(ref.name, ref.namespace)
        return found

    @strawberry.field
    def reasons(self) -> list[DiagnosisReason]:
        return [DiagnosisReason.of(r) for r in self.result.reasons]

    @strawberry.field
    def quota(self) -> QuotaDiagnosis:
        q = self.result.quota
        return QuotaDiagnosis(
            visibility=q.visibility,
            cluster_queue=q.cluster_queue,
            verdict=q.verdict,
            detail=q.detail,
            lines=[QuotaLine.of(line) for line in q.lines],
        )

    @field(description="Pending Pods with their PodScheduled condition and scheduler reasons.")
    def pods(self) -> list[PodDiagnosis]:
        return [
            PodDiagnosis(
                pod=Pod.ref(p.pod.name, p.pod.namespace),
                phase=p.phase,
                scheduled_status=p.scheduled_status,
                scheduled_reason=p.scheduled_reason,
                scheduled_message=p.scheduled_message,
                node_name=p.node_name,
                node_selector=[f"{k}={v}" for k, v in sorted(p.node_selector.items())],
                tolerations=list(p.tolerations),
                failed_scheduling=list(p.failed_scheduling),
                reasons=[DiagnosisReason.of(r) for r in p.reasons],
            )
            for p in self.result.pods
        ]

    @field(
        description="For a pending Workload: how many are ahead in its LocalQueue and "
        "ClusterQueue, what they request, the quota admitted Workloads hold, and why they are "
        "ahead. Counts and sums only; null when the Workload is not pending."
    )
    async def ahead_of_me(
        self, info: Info
    ) -> Annotated[AheadOfMe, strawberry.lazy("kueue_graphql.graph.ahead")] | None:
        from kueue_graphql.graph.ahead import AheadOfMe

        wl, lq = self.result.workload, self.result.local_queue
        if wl is None or wl.namespace is None or lq is None:
            return None
        if self.result.queue_position.position_in_cluster_queue is None:
            return None
        return await AheadOfMe.load(info, wl.namespace, wl.name, lq, self.result.cluster_queue)

    @strawberry.field
    def queue_position(self) -> QueuePositionDiagnosis:
        p = self.result.queue_position
        return QueuePositionDiagnosis(
            visibility=p.visibility,
            position_in_cluster_queue=p.position_in_cluster_queue,
            position_in_local_queue=p.position_in_local_queue,
            priority=p.priority,
            detail=p.detail,
            position_beyond=p.position_beyond,
        )

    @field(
        description="Kueue's version, so clients know which rules applied: from its manager "
        "Deployment (kueue-system/kueue-controller-manager: the app.kubernetes.io/version label, "
        "else the manager image's tag) where the caller may read it; null otherwise."
    )
    async def kueue_version(self, info: Info) -> str | None:
        namespace, name = KUEUE_DEPLOYMENT
        found = await observe(reads(info).get(DEPLOYMENT, namespace, name))
        return kueue_version_of(found)

    @field(description="Who preempted the Workload, when Kueue says it was preempted.")
    def preemptor(self) -> PreemptorDiagnosis | None:
        p = self.result.preemptor
        return PreemptorDiagnosis(uid=p.uid, preemptor=p) if p else None

    @field(description="Eviction history from status.schedulingStats (empty where absent).")
    def evictions(self) -> list[EvictionCount]:
        return [
            EvictionCount(reason=e.reason, underlying_cause=e.underlying_cause, count=e.count)
            for e in self.result.evictions
        ]

    @field(
        description="Pod sets Kueue's topology-aware scheduling could not place (empty "
        "otherwise): the level asked and the room of each domain there."
    )
    def topology(self) -> list[TopologyPlacement]:
        return [topology_placement_of(fit) for fit in self.result.topology]

    @field(description="Plain-language remedies.")
    def next_steps(self) -> list[str]:
        return list(self.result.next_steps)

    @field(
        description="kubectl / `kubectl kueue` commands that show the same evidence; only "
        "those the caller may run."
    )
    async def commands(self, info: Info) -> list[str]:
        reads_ = reads(info)
        kept = []
        for command in self.result.commands:
            accesses = command_accesses(command)
            if accesses is None:
                continue
            allowed = [await reads_.may(access) for access in accesses]
            if all(allowed):
                kept.append(command)
        return kept


def diagnose_workload(workload_input: dx.DiagnosisInput, start: tuple[str, str, str]) -> Diagnosis:
    """The diagnosis of `workload_input`, started from `start` (namespace, Kind, name)."""
    return Diagnosis(result=dx.diagnose(workload_input), start=start)


@strawberry.type
class DiagnosisQuery:
    @field(
        description='Why is it waiting? Starts from an owner (kind "Job", or any kind Kueue '
        'manages) or from the Workload itself (kind "Workload").'
    )
    async def diagnose(self, info: Info, namespace: str, kind: str, name: str) -> Diagnosis | None:
        return await diagnose_object(reads(info), namespace, kind, name)


async def diagnose_object(reader: KueueReader, namespace: str, kind: str, name: str) -> Diagnosis:
    """The diagnosis of an owner (e.g. a Job) or a Workload, read as the caller."""
    start = (namespace, canonical_kind(kind), name)
    return diagnose_workload(await diagnosis_input_for_owner(reader, *start), start)
