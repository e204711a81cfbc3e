"""whatIf's input, loaded as the caller (and, where the disclosure policy allows, as the service).

The caller must be allowed to `get` the LocalQueue (and, for `fromJob`, the Job): those reads
are the caller's own and fail with FORBIDDEN / NOT_FOUND like any read. Nothing is created.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import BadRequestError, ForbiddenError, NotFoundError
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import (
    JOB,
    JOB_SET,
    LOCAL_QUEUE,
    NAMESPACE,
    NODE,
    POD,
    PRIORITY_CLASS,
    RAY_CLUSTER,
    RAY_JOB,
    TOPOLOGY,
    WHAT_IF_KINDS,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
    Resource,
)
from kueue_graphql.kueue.conditions import holds_quota_in
from kueue_graphql.kueue.exact import ZERO, QuantityError, exact_arithmetic, parse_quantity
from kueue_graphql.kueue.model import known
from kueue_graphql.kueue.objects import items, mapping, metadata, spec, status
from kueue_graphql.kueue.quota import cohort_tree
from kueue_graphql.lookups.disclosure import (
    DisclosurePolicy,
    NumbersSource,
    QuotaView,
    quota_view,
)
from kueue_graphql.lookups.observed import observe
from kueue_graphql.lookups.reader import KueueReader
from kueue_graphql.whatif import (
    PreemptionCandidate,
    ProposedPodSet,
    TopologyInput,
    WhatIfInput,
    pod_sets_of,
    pod_specs_from_job,
    pod_specs_from_job_set,
    pod_specs_from_ray_job,
    pod_specs_of_ray_cluster,
)

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
# What `fromJob` reads, by kind, and how Kueue makes its pod sets.
FROM_KINDS = {
    "Job": (JOB, pod_specs_from_job),
    "JobSet": (JOB_SET, pod_specs_from_job_set),
    "RayJob": (RAY_JOB, pod_specs_from_ray_job),
    "RayCluster": (RAY_CLUSTER, pod_specs_of_ray_cluster),
}
assert tuple(FROM_KINDS) == WHAT_IF_KINDS
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"

__all__ = [
    "PriorityClassRef",
    "WhatIfLoad",
    "job_pod_sets",
    "load_what_if",
    "preemption_candidate",
]


@dataclass(frozen=True)
class PriorityClassRef:
    """A priority class by name. `workload_only`: from Kueue's priority-class label (a
    WorkloadPriorityClass only); else a WorkloadPriorityClass, or failing that a PriorityClass
    (a Pod's priorityClassName)."""

    name: str
    workload_only: bool = False
    pod_only: bool = False


async def job_pod_sets(
    reader: KueueReader, namespace: str, name: str, kind: str = "Job"
) -> tuple[list[ProposedPodSet], str | None, PriorityClassRef | None]:
    """The pod sets Kueue would make for an existing Job, JobSet, RayJob or RayCluster, the
    LocalQueue it names, and its priority class (Kueue's jobframework `ExtractPriority`: the
    priority-class label, else the priorityClassName of the first pod set that has one)."""
    if kind not in FROM_KINDS:
        raise BadRequestError(
            f"fromJob takes a {', '.join(FROM_KINDS)} (kind), not {kind[:64]!r}: Kueue's pod "
            "sets are computed for those"
        )
    resource, specs_of = FROM_KINDS[kind]
    owner = await reader.get(resource, namespace, name)
    labels = metadata(owner).get("labels") or {}
    queue = labels.get(QUEUE_NAME_LABEL)
    specs = specs_of(owner)
    ref: PriorityClassRef | None = None
    if labels.get(PRIORITY_CLASS_LABEL):
        ref = PriorityClassRef(str(labels[PRIORITY_CLASS_LABEL]), workload_only=True)
    else:
        named = [
            str(pod_spec["priorityClassName"])
            for pod_spec in (mapping(template, "spec") for _, _, template in specs)
            if pod_spec.get("priorityClassName")
        ]
        if named:
            ref = PriorityClassRef(named[0], pod_only=True)
    return pod_sets_of(specs), str(queue) if queue else None, ref


async def _class_value(
    reader: KueueReader, policy: DisclosurePolicy, resource: Resource, name: str
) -> int | None:
    """The class' value: read as the caller; where RBAC refuses and the disclosure policy is
    on, as the service (priority classes are cluster configuration, no tenant's data).
    None when it does not exist."""
    try:
        obj = await reader.get(resource, None, name)
    except NotFoundError:
        return None
    except ForbiddenError:
        if not policy.enabled or policy.source is None:
            raise
        listed = await policy.source.list_objects(resource)
        found = [o for o in listed if metadata(o).get("name") == name]
        if not found:
            return None
        obj = found[0]
    value = obj.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


async def resolve_priority(
    reader: KueueReader, policy: DisclosurePolicy, ref: PriorityClassRef
) -> int:
    """Kueue's priority for a Workload of this class; NOT_FOUND when there is no such class."""
    if not ref.pod_only:
        value = await _class_value(reader, policy, WORKLOAD_PRIORITY_CLASS, ref.name)
        if value is not None:
            return value
    if not ref.workload_only:
        value = await _class_value(reader, policy, PRIORITY_CLASS, ref.name)
        if value is not None:
            return value
    kinds = (
        "WorkloadPriorityClass"
        if ref.workload_only
        else "PriorityClass"
        if ref.pod_only
        else "WorkloadPriorityClass or PriorityClass"
    )
    raise NotFoundError(kinds, ref.name)


@exact_arithmetic
def preemption_candidate(
    workload: JsonObject, cluster_queues: Collection[str]
) -> PreemptionCandidate | None:
    """A Workload holding quota (reserved, not finished) in one of the ClusterQueues, evicted
    or not: Kueue's cache keeps an evicted Workload until its reservation is gone."""
    admission = mapping(workload, "status", "admission")
    queue = str(admission.get("clusterQueue") or "")
    if queue not in cluster_queues or not holds_quota_in(workload, queue):
        return None
    conditions = {c.get("type"): c for c in items(workload, "status", "conditions")}
    reserved_cond = conditions.get("QuotaReserved") or {}
    reclaimable = {
        str(r.get("name")): r.get("count")
        for r in items(workload, "status", "reclaimablePods")
        if isinstance(r.get("count"), int)
    }
    reserved: dict[tuple[str, str], Decimal] = {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        count = assignment.get("count")
        kept = Decimal(1)
        gone = reclaimable.get(str(assignment.get("name")))
        if isinstance(count, int) and count > 0 and isinstance(gone, int):
            # Kueue's usage leaves out the reclaimable Pods (workload.Info TotalRequests).
            kept = Decimal(max(0, count - gone)) / Decimal(count)
        for res, qty in (assignment.get("resourceUsage") or {}).items():
            if res not in flavors:
                continue
            try:
                value = parse_quantity(str(qty)) * kept
            except QuantityError:
                continue
            key = (str(flavors[res]), str(res))
            reserved[key] = reserved.get(key, ZERO) + value
    priority = spec(workload).get("priority")
    return PreemptionCandidate(
        priority=priority if isinstance(priority, int) else 0,
        admitted_at=str(reserved_cond.get("lastTransitionTime") or ""),
        reserved=reserved,
        cluster_queue=queue,
        name=str(metadata(workload).get("name") or ""),
        namespace=str(metadata(workload).get("namespace") or ""),
        uid=str(metadata(workload).get("uid") or ""),
        evicted=(conditions.get("Evicted") or {}).get("status") == "True",
    )


def _candidate_queues(view: QuotaView) -> dict[str, JsonObject]:
    """The ClusterQueues whose Workloads Kueue may preempt for this one: its own under
    withinClusterQueue, every ClusterQueue of its cohort tree under reclaimWithinCohort."""
    cq = view.cluster_queue
    if not isinstance(cq, dict):
        return {}
    policy = spec(cq).get("preemption") or {}
    queues: dict[str, JsonObject] = {}
    if policy.get("withinClusterQueue") in ("LowerPriority", "LowerOrNewerEqualPriority"):
        queues[view.cluster_queue_name] = cq
    members = known(view.cluster_queues)
    cohorts = known(view.cohorts)
    reclaims = policy.get("reclaimWithinCohort") not in (None, "Never")
    if reclaims and members is not None and cohorts is not None:
        tree = cohort_tree(cq, members, cohorts)
        root = tree.root_cohort(view.cluster_queue_name) if tree is not None else None
        if tree is not None and root is not None:
            inside = tree.members(root) - {view.cluster_queue_name}
            queues.update(
                {
                    str(metadata(m).get("name")): m
                    for m in members
                    if metadata(m).get("name") in inside
                }
            )
    return queues


async def _candidates(
    reader: KueueReader, view: QuotaView, namespace: str
) -> tuple[list[PreemptionCandidate], bool]:
    """The admitted Workloads the caller may list in her namespace (as her) of the
    ClusterQueues Kueue may preempt in, and whether they are all of theirs (each queue's
    status.reservingWorkloads)."""
    queues = _candidate_queues(view)
    if not queues:
        return [], False
    try:
        page = await reader.workloads(namespace)
    except ForbiddenError:
        return [], False
    found = [c for w in page.items if (c := preemption_candidate(w, queues)) is not None]
    complete = True
    for queue_name, queue in queues.items():
        reserving = status(queue).get("reservingWorkloads")
        held = sum(1 for c in found if c.cluster_queue == queue_name)
        complete = complete and isinstance(reserving, int) and reserving <= held
    return found, complete


TAS_READS = {"Topologies": TOPOLOGY, "Nodes": NODE, "Pods of every namespace": POD,
             "Workloads of every namespace": WORKLOAD}  # fmt: skip


def _asks_tas(view: QuotaView, pod_sets: Sequence[ProposedPodSet]) -> bool:
    """A pod set asks TAS, or a flavor of the ClusterQueue is a TAS flavor (TAS implied, or
    Kueue refuses it to a pod set that asks none)."""
    if any(ps.topology is not None for ps in pod_sets):
        return True
    cq = view.cluster_queue
    names = {
        str(f.get("name") or "")
        for group in items(cq if isinstance(cq, dict) else None, "spec", "resourceGroups")
        for f in items(group, "flavors")
    }
    flavors = known(view.resource_flavors) or []
    return any(metadata(f).get("name") in names and spec(f).get("topologyName") for f in flavors)


def _tas_of(
    reads: Sequence[dx.Observed[list[JsonObject]]],
    names_shown: bool = True,
    hidden_because: str = "",
) -> TopologyInput:
    topologies, nodes, pods, workloads = reads
    return TopologyInput(
        topologies=topologies,
        nodes=nodes,
        pods=pods,
        workloads=workloads,
        names_shown=names_shown,
        hidden_because=hidden_because,
    )


async def _tas_input(
    reader: KueueReader,
    policy: DisclosurePolicy,
    view: QuotaView,
    pod_sets: Sequence[ProposedPodSet],
) -> TopologyInput:
    """What Kueue's TAS snapshot is made of, read as the caller; where she may not, and the
    disclosure policy is on, as the service (then no domain or Node name is shown)."""
    if not _asks_tas(view, pod_sets):
        return TopologyInput(hidden_because="no pod set asks topology-aware scheduling")
    reads = await asyncio.gather(*(observe(reader.list_objects(r)) for r in TAS_READS.values()))
    refused = [what for what, read in zip(TAS_READS, reads, strict=True) if known(read) is None]
    if not refused:
        return _tas_of(reads)
    if not policy.enabled or policy.source is None:
        return _tas_of(
            reads,
            names_shown=False,
            hidden_because=f"you may not list {', '.join(refused)} (the TAS step is not "
            "computed; the quota disclosure policy is off)",
        )
    source = policy.source
    served = await asyncio.gather(*(observe(source.list_objects(r)) for r in TAS_READS.values()))
    missing = [what for what, read in zip(TAS_READS, served, strict=True) if known(read) is None]
    return _tas_of(
        served,
        names_shown=False,
        hidden_because=f"you may not list {', '.join(refused)}"
        + (f"; the service may not either ({', '.join(missing)})" if missing else ""),
    )


class WhatIfLoad:
    """The loaded input plus where its ClusterQueue figures came from."""

    def __init__(self, what_if_input: WhatIfInput, view: QuotaView) -> None:
        self.input = what_if_input
        self.view = view


async def _namespace_labels(
    reader: KueueReader, view: QuotaView, namespace: str
) -> dx.Observed[dict[str, str]]:
    cq = view.cluster_queue
    selector = cq.get("spec", {}).get("namespaceSelector") if isinstance(cq, dict) else None
    if not selector:
        # `{}` selects every namespace: no read needed.
        return dx.Absent("no namespaceSelector to check")
    try:
        ns = await reader.get(NAMESPACE, None, namespace)
    except (ForbiddenError, NotFoundError) as error:  # then the selector is not checked
        return dx.Forbidden(str(error))
    return dict(metadata(ns).get("labels") or {})


async def load_what_if(
    reader: KueueReader,
    policy: DisclosurePolicy,
    namespace: str,
    local_queue: str | None,
    pod_sets: Sequence[ProposedPodSet],
    priority_class: PriorityClassRef | None = None,
    *,
    priority: int | None = None,
) -> WhatIfLoad:
    """`priority`: the Workload's spec.priority as given, instead of `priority_class`'s value."""
    if not local_queue:
        raise BadRequestError("whatIf needs a localQueue (or a fromJob whose Job names one)")
    lq: JsonObject = await reader.get(LOCAL_QUEUE, namespace, local_queue)
    cq_name = str(spec(lq).get("clusterQueue") or "")
    if not cq_name:
        raise BadRequestError(f"LocalQueue {local_queue} names no ClusterQueue")
    if priority is None:
        priority = await resolve_priority(reader, policy, priority_class) if priority_class else 0
    view = await quota_view(reader, policy, cq_name)
    labels = await _namespace_labels(reader, view, namespace)
    candidates, complete = await _candidates(reader, view, namespace)
    tas = await _tas_input(reader, policy, view, pod_sets)
    return WhatIfLoad(
        WhatIfInput(
            namespace=namespace,
            local_queue=lq,
            pod_sets=list(pod_sets),
            cluster_queue=view.cluster_queue,
            resource_flavors=view.resource_flavors,
            cluster_queues=view.cluster_queues,
            cohorts=view.cohorts,
            namespace_labels=labels,
            show_numbers=view.show_numbers,
            names_shown=view.numbers_from is NumbersSource.CALLER_RBAC,
            hidden_because=view.detail,
            priority=priority,
            priority_class=priority_class.name if priority_class else None,
            candidates=candidates,
            candidates_complete=complete,
            tas=tas,
        ),
        view,
    )
