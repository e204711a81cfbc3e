"""`Workload.diagnosis` and the root `diagnose`: "why is my job waiting?" as data.

The objects are loaded through the request's reads, as the calling user: a read the API server
(or the access check) refuses becomes a Forbidden marker, a missing object an Absent marker, and
the pure `kueue_graphql.diagnosis` turns what the caller could read into the verdict. Nothing
here decides anything; it only loads and translates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Annotated, Any, TypeVar

import strawberry

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import ForbiddenError, NotFoundError
from kueue_graphql.core.quantity import decimal_text
from kueue_graphql.diagnosis.quantity import format_quantity
from kueue_graphql.graph.admissioncheck import AdmissionCheck
from kueue_graphql.graph.clusterqueue import ClusterQueue
from kueue_graphql.graph.cohort import Cohort
from kueue_graphql.graph.common import Info, field, metadata, reads, spec, status
from kueue_graphql.graph.job import Job
from kueue_graphql.graph.localqueue import LocalQueue
from kueue_graphql.graph.node import Node
from kueue_graphql.graph.pod import Pod
from kueue_graphql.graph.resourceflavor import ResourceFlavor
from kueue_graphql.graph.workload import Workload, find_workload_for
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.reads import RequestReads
from kueue_graphql.kube.resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    NODE,
    OWNER_KINDS,
    POD,
    RESOURCE_FLAVOR,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
)

__all__ = [
    "WHY_QUERY",
    "Diagnosis",
    "DiagnosisQuery",
    "diagnose_object",
    "diagnose_workload",
    "load_input",
    "render_text",
]

T = TypeVar("T")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"

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


def _decimal(value: Fraction) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 80
        return Decimal(decimal_text(Decimal(value.numerator) / Decimal(value.denominator)))


@strawberry.type(description="An exact amount: Kubernetes notation and exact decimal number.")
class DiagnosisAmount:
    quantity: str
    amount: Decimal

    @classmethod
    def of(cls, value: Fraction, resource: str | None) -> DiagnosisAmount:
        return cls(quantity=format_quantity(value, resource), amount=_decimal(value))

    @classmethod
    def maybe(cls, value: Fraction | None, resource: str | None) -> DiagnosisAmount | None:
        return None if value is None else cls.of(value, resource)


@strawberry.type(description="A named number from a message or an object, e.g. maximumCapacity.")
class DiagnosisNumber:
    name: str
    quantity: str = strawberry.field(description='As written, e.g. "2", "1536Mi".')
    amount: Decimal


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
                DiagnosisNumber(name=n.name, quantity=n.text, amount=_decimal(n.value))
                for n in r.numbers
            ],
        )


@strawberry.type(description="One (flavor, resource) the Workload needs, against its queues.")
class QuotaLine:
    flavor: str
    resource: str
    requested: DiagnosisAmount = strawberry.field(
        description="Aggregate: per-pod request x count, summed over pod sets."
    )
    nominal_quota: DiagnosisAmount
    borrowing_limit: DiagnosisAmount | None = strawberry.field(description="Null: no limit.")
    lending_limit: DiagnosisAmount | None = strawberry.field(description="Null: no limit.")
    reserved: DiagnosisAmount = strawberry.field(description="`flavorsReservation` now.")
    used: DiagnosisAmount = strawberry.field(description="`flavorsUsage` now.")
    borrowed: DiagnosisAmount
    cohort: str | None
    cohort_can_lend: DiagnosisAmount | None = strawberry.field(
        description="What the cohort could lend beyond the queue's own unused quota, now. "
        "Null when not in a cohort or when cohort members may not be read."
    )
    maximum_capacity: DiagnosisAmount | None = strawberry.field(
        description="The most this queue could ever give (nominal + what borrowing can bring), "
        "as Kueue computes it."
    )
    available_now: DiagnosisAmount | None
    verdict: dx.Verdict
    limited_by: str | None = strawberry.field(
        description="NOMINAL_QUOTA, BORROWING_LIMIT, COHORT or NOT_IN_CLUSTER_QUEUE."
    )
    counts_this_workload: bool = strawberry.field(
        description="The Workload holds a reservation: `reserved` includes its own request."
    )

    @classmethod
    def of(cls, line: dx.QuotaLine) -> QuotaLine:
        res = line.resource
        return cls(
            flavor=line.flavor,
            resource=res,
            requested=DiagnosisAmount.of(line.requested, res),
            nominal_quota=DiagnosisAmount.of(line.nominal_quota, res),
            borrowing_limit=DiagnosisAmount.maybe(line.borrowing_limit, res),
            lending_limit=DiagnosisAmount.maybe(line.lending_limit, res),
            reserved=DiagnosisAmount.of(line.reserved, res),
            used=DiagnosisAmount.of(line.used, res),
            borrowed=DiagnosisAmount.of(line.borrowed, res),
            cohort=line.cohort,
            cohort_can_lend=DiagnosisAmount.maybe(line.cohort_can_lend, res),
            maximum_capacity=DiagnosisAmount.maybe(line.maximum_capacity, res),
            available_now=DiagnosisAmount.maybe(line.available_now, res),
            verdict=line.verdict,
            limited_by=line.limited_by,
            counts_this_workload=line.counts_this_workload,
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


@strawberry.type(description="Position among pending Workloads, from Kueue's visibility API.")
class QueuePositionDiagnosis:
    visibility: dx.Visibility
    position_in_cluster_queue: int | None
    position_in_local_queue: int | None
    priority: int | None
    detail: str


BlockingObject = Annotated[
    LocalQueue
    | ClusterQueue
    | Cohort
    | ResourceFlavor
    | AdmissionCheck
    | Pod
    | Node
    | Workload
    | Job,
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
    "Node": Node,
    "Workload": Workload,
    "Job": Job,
}


@strawberry.type(
    description="Why the workload is where it is: stage, the layer to look at, the object "
    "that holds it, the reasons with their numbers, quota, Pods, queue position, remedies."
)
class Diagnosis:
    result: strawberry.Private[dx.Diagnosis]

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

    @strawberry.field
    def queue_position(self) -> QueuePositionDiagnosis:
        p = self.result.queue_position
        return QueuePositionDiagnosis(
            visibility=p.visibility,
            position_in_cluster_queue=p.position_in_cluster_queue,
            position_in_local_queue=p.position_in_local_queue,
            priority=p.priority,
            detail=p.detail,
        )

    @field(description="Plain-language remedies.")
    def next_steps(self) -> list[str]:
        return list(self.result.next_steps)

    @field(description="kubectl / `kubectl kueue` commands that show the same evidence.")
    def commands(self) -> list[str]:
        return list(self.result.commands)


# -- loading, as the caller --------------------------------------------------------------------


ObservedObject = JsonObject | dx.Forbidden | dx.Absent
ObservedList = list[JsonObject] | dx.Forbidden | dx.Absent


def _ready(value: T) -> asyncio.Future[T]:
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


async def _observe(read: Awaitable[T]) -> T | dx.Forbidden | dx.Absent:
    try:
        return await read
    except ForbiddenError as error:
        return dx.Forbidden(str(error))
    except NotFoundError as error:
        return dx.Absent(str(error))


def _known(value: object) -> JsonObject | None:
    return None if isinstance(value, dx.Forbidden | dx.Absent) else value  # type: ignore[return-value]


async def _events(
    reads_: RequestReads, objects: Sequence[JsonObject]
) -> list[JsonObject] | dx.Forbidden | dx.Absent:
    try:
        lists = await asyncio.gather(*(reads_.events_for(o) for o in objects))
    except ForbiddenError as error:
        return dx.Forbidden(str(error))
    return [e for events in lists for e in events]


async def _pods(
    reads_: RequestReads, namespace: str, owner: JsonObject | None, workload: JsonObject | None
) -> list[JsonObject]:
    owner_uid = metadata(owner).get("uid") if owner else None
    if owner is not None and owner.get("kind") == "Job" and owner_uid:
        selector = f"{CONTROLLER_UID_LABEL}={owner_uid}"
        return await reads_.list_objects(POD, namespace, label_selector=selector)
    if owner is None and workload is None:
        return []
    # Any other owner kind: its Pods are found by ownerReference in the diagnosis.
    return await reads_.list_objects(POD, namespace)


async def _queue_position(
    reads_: RequestReads, namespace: str, workload: JsonObject
) -> JsonObject | dx.Forbidden | dx.Absent:
    queue = spec(workload).get("queueName")
    reserved = any(
        c.get("type") == "QuotaReserved" and c.get("status") == "True"
        for c in status(workload).get("conditions") or []
    )
    if not queue or reserved:
        return dx.Absent("not pending")
    access = Access("get", VISIBILITY_LOCAL_QUEUE, namespace, queue, "pendingworkloads")
    if not await reads_.may(access):
        return dx.Forbidden(f"may not get localqueues/pendingworkloads {namespace}/{queue}")
    pending = await reads_.pending_in_local_queue(namespace, queue)
    if pending is None:
        return dx.Absent("Kueue's visibility API gave no pending list for this LocalQueue")
    name = metadata(workload).get("name")
    for item in pending:
        if metadata(item).get("name") == name:
            return item
    return dx.Absent("not in the LocalQueue's pending list")


def _quota_message(workload: JsonObject | None) -> str:
    for c in status(workload or {}).get("conditions") or []:
        if c.get("type") == "QuotaReserved" and c.get("status") != "True":
            return str(c.get("message") or "")
    return ""


async def load_input(
    reads_: RequestReads,
    namespace: str,
    owner: ObservedObject,
    workload: ObservedObject,
) -> dx.DiagnosisInput:
    """Everything the diagnosis looks at, read as the caller.

    Three rounds, each started at once so the request's DataLoaders batch them: the queue,
    Pods, queue position and Events; then the ClusterQueue and, for Pods kube-scheduler has not
    placed, their Events and the Nodes; then, only for a ClusterQueue in a cohort, the other
    ClusterQueues and Cohorts. ResourceFlavors and AdmissionChecks only when a reason names one.
    What the diagnosis cannot use is not read.
    """
    owner_obj, workload_obj = _known(owner), _known(workload)
    queue = spec(workload_obj or {}).get("queueName") or (
        (metadata(owner_obj or {}).get("labels") or {}).get("kueue.x-k8s.io/queue-name")
    )

    local_queue: asyncio.Future[ObservedObject] = _ready(dx.Absent("no queue name"))
    if queue:
        local_queue = asyncio.ensure_future(_observe(reads_.get(LOCAL_QUEUE, namespace, queue)))
    pods_read: asyncio.Future[ObservedList] = asyncio.ensure_future(
        _observe(_pods(reads_, namespace, owner_obj, workload_obj))
    )
    position_read: asyncio.Future[ObservedObject] = _ready(dx.Absent("no Workload"))
    if workload_obj is not None:
        position_read = asyncio.ensure_future(_queue_position(reads_, namespace, workload_obj))
    # The Workload's Events carry Kueue's reasons; the owner's matter only while there is no
    # Workload (e.g. Kueue failing to create one).
    about = [workload_obj] if workload_obj is not None else [o for o in (owner_obj,) if o]
    events_read = asyncio.ensure_future(_events(reads_, about))
    await asyncio.gather(local_queue, pods_read, position_read, events_read)
    pods = pods_read.result()

    admitted_in = (status(workload_obj or {}).get("admission") or {}).get("clusterQueue")
    lq = _known(local_queue.result())
    cq_name = admitted_in or (spec(lq).get("clusterQueue") if lq else None)
    unplaced = [p for p in (pods if isinstance(pods, list) else []) if not spec(p).get("nodeName")]

    cluster_queue: asyncio.Future[ObservedObject] = _ready(dx.Absent("no ClusterQueue name"))
    if cq_name:
        cluster_queue = asyncio.ensure_future(
            _observe(reads_.get(CLUSTER_QUEUE, None, str(cq_name)))
        )
    nodes: asyncio.Future[ObservedList] = _ready(dx.Absent("no unplaced Pod"))
    pod_events: asyncio.Future[ObservedList] = _ready([])
    if unplaced:
        nodes = asyncio.ensure_future(_observe(reads_.list_objects(NODE)))
        pod_events = asyncio.ensure_future(_events(reads_, unplaced))
    # Flavors make a taint remedy exact; AdmissionChecks say who decides a pending check.
    flavors: asyncio.Future[ObservedList] = _ready(dx.Absent("no flavor in question"))
    if "in flavor " in _quota_message(workload_obj):
        flavors = asyncio.ensure_future(_observe(reads_.list_objects(RESOURCE_FLAVOR)))
    checks: asyncio.Future[ObservedList] = _ready(dx.Absent("no admission checks"))
    if status(workload_obj or {}).get("admissionChecks"):
        checks = asyncio.ensure_future(_observe(reads_.list_objects(ADMISSION_CHECK)))
    await asyncio.gather(cluster_queue, nodes, pod_events, flavors, checks)

    cluster_queues: ObservedList = dx.Absent("not in a cohort")
    cohorts: ObservedList = dx.Absent("not in a cohort")
    cq = _known(cluster_queue.result())
    if cq is not None and spec(cq).get("cohortName"):
        cluster_queues, cohorts = await asyncio.gather(
            _observe(reads_.list_objects(CLUSTER_QUEUE)), _observe(reads_.list_objects(COHORT))
        )

    events, more_events = events_read.result(), pod_events.result()
    if isinstance(events, list) and isinstance(more_events, list):
        events = events + more_events
    return dx.DiagnosisInput(
        owner=owner,
        workload=workload,
        events=events,
        pods=pods,
        local_queue=local_queue.result(),
        cluster_queue=cluster_queue.result(),
        cluster_queues=cluster_queues,
        cohorts=cohorts,
        resource_flavors=flavors.result(),
        admission_checks=checks.result(),
        nodes=nodes.result(),
        queue_position=position_read.result(),
    )


def _owner_kind_of(workload: JsonObject) -> tuple[str, str] | None:
    for ref in metadata(workload).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


async def diagnose_workload(info: Info, workload: JsonObject) -> Diagnosis:
    return await _diagnose_workload(reads(info), workload)


async def _diagnose_workload(reads_: RequestReads, workload: JsonObject) -> Diagnosis:
    namespace = str(metadata(workload).get("namespace", ""))
    owner: JsonObject | dx.Forbidden | dx.Absent = dx.Absent("no owner")
    owned_by = _owner_kind_of(workload)
    if owned_by is not None and owned_by[0] in OWNER_KINDS:
        owner = await _observe(reads_.get(OWNER_KINDS[owned_by[0]], namespace, owned_by[1]))
    inp = await load_input(reads_, namespace, owner, workload)
    return Diagnosis(result=dx.diagnose(inp))


@strawberry.type
class DiagnosisQuery:
    @field(
        description='Why is it waiting? Starts from an owner (kind "Job", or any kind Kueue '
        'manages) or from the Workload itself (kind "Workload").'
    )
    async def diagnose(self, info: Info, namespace: str, kind: str, name: str) -> Diagnosis | None:
        return await diagnose_object(reads(info), namespace, kind, name)


async def diagnose_object(reads_: RequestReads, namespace: str, kind: str, name: str) -> Diagnosis:
    """The diagnosis of an owner (e.g. a Job) or a Workload, read as the caller."""
    if kind == "Workload":
        return await _diagnose_workload(reads_, await reads_.get(WORKLOAD, namespace, name))
    owner: JsonObject | dx.Forbidden | dx.Absent = dx.Absent(f"no {kind} resource known")
    resource = OWNER_KINDS.get(kind)
    if resource is not None:
        owner = await _observe(reads_.get(resource, namespace, name))
    workload = await _observe(find_workload_for(reads_, namespace, kind, name))
    if not isinstance(owner, dict) and not isinstance(workload, dict):
        # Neither readable: say so (or that nothing exists), never diagnose blind.
        if isinstance(owner, dx.Forbidden) and resource is not None:
            raise ForbiddenError("get", resource.group, resource.plural, namespace, name)
        if isinstance(workload, dx.Forbidden):
            raise ForbiddenError("list", WORKLOAD.group, WORKLOAD.plural, namespace)
        raise NotFoundError(kind, name, namespace)
    inp = await load_input(reads_, namespace, owner, workload)
    return Diagnosis(result=dx.diagnose(inp))


# -- the query behind `kueue-graphql why`, and its human-readable rendering ------------------

WHY_QUERY = """
query Why($namespace: String!, $kind: String!, $name: String!) {
  diagnose(namespace: $namespace, kind: $kind, name: $name) {
    stage
    layer
    summary
    owner { kind name }
    workload { name }
    localQueue { name }
    clusterQueue { name }
    blockingRef { kind name namespace }
    reasons {
      code kueueReason message source resource flavor podSet
      object { kind name namespace }
      numbers { name quantity amount }
    }
    quota {
      visibility clusterQueue verdict detail
      lines {
        flavor resource verdict limitedBy cohort countsThisWorkload
        requested { quantity amount } nominalQuota { quantity amount }
        borrowingLimit { quantity amount } lendingLimit { quantity amount }
        reserved { quantity amount } used { quantity amount } borrowed { quantity amount }
        maximumCapacity { quantity amount } availableNow { quantity amount }
        cohortCanLend { quantity amount }
      }
    }
    pods {
      pod { name }
      phase scheduledStatus scheduledReason scheduledMessage nodeName nodeSelector
      tolerations failedScheduling
      reasons { code message resource object { kind name } }
    }
    queuePosition { visibility positionInClusterQueue positionInLocalQueue priority detail }
    nextSteps
    commands
  }
}
"""


def _q(amount: Any) -> str:
    return str(amount["quantity"]) if isinstance(amount, dict) else "-"


def render_text(d: dict[str, Any]) -> str:
    """The `diagnose` result (WHY_QUERY's shape) as text for a terminal."""
    out: list[str] = []
    owner = d.get("owner") or {}
    target = f"{owner.get('kind', 'Workload')}/{owner.get('name', '?')}"
    out.append(f"{target}: {d['stage']} (look at: {d['layer']})")
    out.append(f"  {d['summary']}")
    workload = (d.get("workload") or {}).get("name")
    queues = [
        f"Workload {workload}" if workload else "no Workload",
        f"LocalQueue {(d.get('localQueue') or {}).get('name', '-')}",
        f"ClusterQueue {(d.get('clusterQueue') or {}).get('name', '-')}",
    ]
    out.append("  " + ", ".join(queues))
    blocking = d.get("blockingRef")
    if blocking:
        where = f" -n {blocking['namespace']}" if blocking.get("namespace") else ""
        out.append(f"  held by: {blocking['kind']} {blocking['name']}{where}")
    if d.get("reasons"):
        out.append("")
        out.append("Reasons:")
        for r in d["reasons"]:
            written = f" [{r['kueueReason']}]" if r.get("kueueReason") else ""
            out.append(f"  - {r['code']}{written} ({r['source'].lower()}): {r['message']}")
            nums = ", ".join(f"{n['name']}={n['quantity']}" for n in r.get("numbers") or [])
            if nums:
                out.append(f"      {nums}")
    quota = d["quota"]
    if quota["visibility"] != "NOT_APPLICABLE":
        out.append("")
        header = f"Quota in ClusterQueue {quota.get('clusterQueue') or '-'}"
        if quota["visibility"] != "AVAILABLE":
            out.append(f"{header}: {quota['visibility']} ({quota['detail']})")
        else:
            out.append(f"{header}: {quota.get('verdict')}")
            out.append(
                "  flavor/resource            requested  nominal  borrowLimit  reserved  "
                "max-ever  free-now  verdict"
            )
            for line in quota["lines"]:
                fr = f"{line['flavor']}/{line['resource']}"
                limited = f" ({line['limitedBy']})" if line.get("limitedBy") else ""
                out.append(
                    f"  {fr:<26} {_q(line['requested']):>9}  {_q(line['nominalQuota']):>7}  "
                    f"{_q(line['borrowingLimit']):>11}  {_q(line['reserved']):>8}  "
                    f"{_q(line['maximumCapacity']):>8}  {_q(line['availableNow']):>8}  "
                    f"{line['verdict']}{limited}"
                )
            if quota.get("detail"):
                out.append(f"  ({quota['detail']})")
    for pod in d.get("pods") or []:
        out.append("")
        out.append(
            f"Pod {pod['pod']['name']}: {pod['phase']}, PodScheduled={pod['scheduledStatus']} "
            f"{pod.get('scheduledReason') or ''}".rstrip()
        )
        if pod.get("nodeSelector"):
            out.append(f"  nodeSelector: {', '.join(pod['nodeSelector'])}")
        if pod.get("scheduledMessage"):
            out.append(f"  scheduler: {pod['scheduledMessage']}")
        for r in pod.get("reasons") or []:
            out.append(f"  - {r['code']}: {r['message']}")
    position = d["queuePosition"]
    if position["visibility"] == "AVAILABLE":
        out.append("")
        out.append(
            f"Queue position: {position['positionInLocalQueue']} in LocalQueue, "
            f"{position['positionInClusterQueue']} in ClusterQueue (0 = next)"
        )
    elif position["visibility"] != "NOT_APPLICABLE":
        out.append("")
        out.append(f"Queue position: {position['visibility']} ({position['detail']})")
    if d.get("nextSteps"):
        out.append("")
        out.append("Next steps:")
        out.extend(f"  - {step}" for step in d["nextSteps"])
    if d.get("commands"):
        out.append("")
        out.append("Same evidence with kubectl:")
        out.extend(f"  $ {cmd}" for cmd in d["commands"])
    return "\n".join(out) + "\n"
