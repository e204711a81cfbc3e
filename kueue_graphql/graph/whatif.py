"""The root `whatIf`: would these Pods fit this LocalQueue now, and in which flavor?

Nothing is created. The input is loaded by `kueue_graphql.lookups.whatif` (the LocalQueue as the
caller; the ClusterQueue as the caller, or under the quota disclosure policy as the service),
the pure `kueue_graphql.whatif` reaches Kueue's verdict, and the types here only
translate it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

import strawberry

from kueue_graphql import whatif as wi
from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.core.names import check_name
from kueue_graphql.diagnosis import Verdict
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.diagnosis import DiagnosisReason, QuotaLine
from kueue_graphql.graph.localqueue import LocalQueue
from kueue_graphql.graph.quantity import ResourceQuantity, computed_quantities
from kueue_graphql.graph.topology_assignment import TopologyAssignment, TopologyDomain
from kueue_graphql.kube.resources import canonical_kind
from kueue_graphql.kueue.exact import QuantityError, parse_quantity
from kueue_graphql.kueue.quantity import QUANTITY_SYNTAX
from kueue_graphql.kueue.topology import TopologyRequest
from kueue_graphql.lookups.disclosure import NumbersSource
from kueue_graphql.lookups.whatif import PriorityClassRef, job_pod_sets, load_what_if

__all__ = ["WhatIf", "WhatIfQuery"]

strawberry.enum(
    NumbersSource,
    name="QuotaNumbersSource",
    description="Where an answer's ClusterQueue figures come from: the caller's own RBAC, the "
    "service's quota disclosure policy, or nowhere (not shown).",
)

# Kueue v0.17 validates at most 8 pod sets per Workload (apis/kueue/v1beta2 PodSets MaxItems).
MAX_POD_SETS = 8
MAX_COUNT = 100_000


@strawberry.input(description='One resource per Pod, e.g. {resource: "cpu", quantity: "500m"}.')
class ResourceRequestInput:
    resource: str
    quantity: str


@strawberry.input(description="A node label the Pods select: `nodeSelector` entry key=value.")
class NodeSelectorInput:
    key: str
    value: str


@strawberry.input(description="A Pod toleration, as in `spec.tolerations`.")
class TolerationInput:
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None


@strawberry.input(
    description="Topology-aware scheduling as the pod template's annotations ask it "
    "(`kueue.x-k8s.io/podset-required-topology`, `-preferred-topology`, "
    "`-unconstrained-topology`, `-slice-required-topology` + `-slice-size`): a node label "
    "of the flavor's Topology per level."
)
class WhatIfTopologyInput:
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_required: str | None = None
    slice_size: int | None = None


@strawberry.input(
    description="A pod set of the Workload-to-be: `count` Pods, each asking `requests`."
)
class WhatIfPodSetInput:
    requests: list[ResourceRequestInput]
    count: int = 1
    name: str = "main"
    node_selector: list[NodeSelectorInput] | None = None
    tolerations: list[TolerationInput] | None = None
    topology: WhatIfTopologyInput | None = None
    priority_class: str | None = strawberry.field(
        default=None,
        description="A WorkloadPriorityClass (Kueue's `kueue.x-k8s.io/priority-class` label), or "
        "failing that a PriorityClass (the Pods' `priorityClassName`). Kueue's priority is the "
        "Workload's: pod sets that give one must give the same.",
    )


@strawberry.input(description="An existing object by namespace and name.")
class ObjectNameInput:
    namespace: str
    name: str
    kind: str = strawberry.field(
        default="Job",
        description="Job, JobSet, RayJob or RayCluster, as kubectl types it (`jobset`, "
        "`rayjobs.ray.io`).",
    )


@strawberry.type(
    description="One flavor Kueue would try, in order, and why it does or does not fit."
)
class WhatIfFlavorAttempt:
    flavor: str
    verdict: Verdict
    borrows: bool
    reasons: list[str] = strawberry.field(description="Kueue's words; empty when it fits now.")
    borrowing_level: int | None = strawberry.field(
        default=None,
        description="Kueue's borrowing level (FlavorAssignmentAttempt.Borrow): 0 when the "
        "ClusterQueue's own quota takes the request, else the height of the lowest cohort "
        "subtree whose quota does, counted from the leaves (a cohort of ClusterQueues only is "
        "1, its parent 2). Kueue "
        "prefers the lower level among flavors (flavorFungibility). Null when not computed "
        "(the flavor cannot take the Pods, the cohort is unreadable) or quota figures are not "
        "disclosed to you.",
    )


@strawberry.type(description="One resource group of one pod set: the flavor Kueue would assign.")
class WhatIfResourceGroup:
    pod_set: str
    resources: list[str]
    flavor: str | None = strawberry.field(
        description="FITS_NOW: the flavor assigned now. MUST_WAIT: the flavor Kueue would "
        "preempt or wait in (its preferred attempt, else the first where waiting can give). "
        "Null when none can."
    )
    verdict: Verdict
    limited_by: str | None
    borrows: bool = strawberry.field(description="Fits only by borrowing from the cohort.")
    may_preempt: bool = strawberry.field(
        description="Kueue would simulate preemption for this flavor (its policy allows it); "
        "`preempts` says what the simulation found among the admitted Workloads you may read."
    )
    attempts: list[WhatIfFlavorAttempt]
    borrowing_level: int | None = strawberry.field(
        default=None,
        description="The borrowing level in `flavor`, as in its attempt; null without a flavor.",
    )
    preempts: int = strawberry.field(
        default=0,
        description="MUST_WAIT in `flavor`: Kueue would preempt this many admitted Workloads of "
        "lower priority in the ClusterQueue (withinClusterQueue policy), among those you may "
        "read, to admit it.",
    )
    preempts_first_in: str | None = strawberry.field(
        default=None,
        description="FITS_NOW in `flavor`; but with whenCanPreempt: MayStopSearch, Kueue stops "
        "at this earlier flavor and preempts there instead if it finds admitted Workloads of "
        "lower priority (which whatIf cannot see).",
    )


@strawberry.type(
    description="Where Kueue's topology-aware scheduling (TAS, an admission step after quota) "
    "would place the pod set now, following Kueue v0.17.0's TAS flavor assigner and snapshot "
    "(Node allocatable minus the requests of the Pods Kueue did not place, minus what "
    "admitted TAS Workloads hold). Domain and Node names only for a caller who may list "
    "Nodes, and Pods and Workloads of every namespace."
)
class WhatIfTopology:
    verdict: Verdict
    flavor: str | None
    topology: str | None
    mode: str | None = strawberry.field(
        description="required, preferred or unconstrained; null for a slice-only request or "
        "TAS implied by a ClusterQueue whose flavors are all TAS flavors."
    )
    level: str | None = strawberry.field(description="The level Kueue looks for a domain at.")
    placed_at: str | None = strawberry.field(
        description="The level of the domain(s) found (a preferred level may fall back to a "
        "wider one); null when it does not fit now."
    )
    domains: list[list[str]] | None = strawberry.field(
        description="The domain(s) at `placedAt`, each as its node-label values from the "
        "Topology's top level down; null when not shown to you."
    )
    topology_assignment: TopologyAssignment | None = strawberry.field(
        description="The topologyAssignment Kueue would write (as "
        "`Workload.admission.podSetAssignments.topologyAssignment`); null when it does not "
        "fit now or names are not shown to you."
    )
    kueue_message: str | None = strawberry.field(
        description="Kueue's reason when it does not fit (\"topology ... allows to fit only 4 "
        'out of 5 pod(s)").'
    )
    fitting: int | None = strawberry.field(
        description="Slices (Pods, without slices) the best domain takes, when it does not fit."
    )
    wanted: int | None
    slice_level: str | None
    slice_size: int | None
    why: str | None = strawberry.field(
        description="What would have to change (MUST_WAIT, NEVER_FITS), or what could not be "
        "read (UNKNOWN)."
    )


@strawberry.type(description="A pod set as Kueue would count it.")
class WhatIfPodSet:
    name: str
    count: int
    requests: list[ResourceQuantity] = strawberry.field(description="Per Pod.")
    total_requests: list[ResourceQuantity] = strawberry.field(description="Per Pod x count.")
    resource_groups: list[WhatIfResourceGroup]
    topology: WhatIfTopology | None = strawberry.field(
        default=None,
        description="Null when the pod set asks no topology-aware scheduling, or when quota "
        "alone keeps the Workload out (Kueue runs its TAS step only once every pod set has "
        "flavors that fit now or may after preemption).",
    )


def _topology_of(t: wi.TopologyOutcome | None) -> WhatIfTopology | None:
    if t is None:
        return None
    return WhatIfTopology(
        verdict=t.verdict,
        flavor=t.flavor,
        topology=t.topology,
        mode=t.mode,
        level=t.level,
        placed_at=t.placed_at,
        domains=None if t.domains is None else [list(d) for d in t.domains],
        topology_assignment=None
        if t.assignment is None
        else TopologyAssignment(
            levels=list(t.assignment.levels),
            domains=[
                TopologyDomain(values=list(d.values), count=d.count) for d in t.assignment.domains
            ],
        ),
        kueue_message=t.message or None,
        fitting=t.fitting,
        wanted=t.wanted,
        slice_level=t.slice_level,
        slice_size=t.slice_size,
        why=t.why or None,
    )


@strawberry.type(
    description="An admitted Workload Kueue would preempt to admit the Workload-to-be."
)
class WhatIfPreemptionTarget:
    name: str
    namespace: str
    cluster_queue_name: str = strawberry.field(
        description="The ClusterQueue it holds quota in (the Workload's own, or another of "
        "the cohort whose quota is reclaimed)."
    )
    reason: str = strawberry.field(
        description="Kueue's Preempted reason: InClusterQueue, InCohortReclamation or "
        "InCohortReclaimWhileBorrowing."
    )
    priority: int


@strawberry.type(
    description="Kueue's decision for a Workload that does not exist yet: NEVER_FITS, FITS_NOW, "
    "MUST_WAIT (or UNKNOWN when the ClusterQueue may not be read and the disclosure policy is "
    "off), the limiting factor, and what to change."
)
class WhatIf:
    result: strawberry.Private[wi.WhatIfResult]
    source: strawberry.Private[NumbersSource]
    namespace: strawberry.Private[str]

    @strawberry.field
    def verdict(self) -> Verdict:
        return self.result.verdict

    @field(
        description="NOMINAL_QUOTA, BORROWING_LIMIT, COHORT, NOT_IN_CLUSTER_QUEUE, FLAVOR_TAINT, "
        "FLAVOR_NODE_AFFINITY, FLAVOR_NOT_FOUND, LOCAL_QUEUE_STOPPED, CLUSTER_QUEUE_STOPPED, "
        "CLUSTER_QUEUE_NOT_FOUND, CLUSTER_QUEUE_INACTIVE, CLUSTER_QUEUE_DELETING, "
        "NAMESPACE_NOT_SELECTED, NAMESPACE_NOT_READABLE (verdict UNKNOWN: the ClusterQueue has "
        "a namespaceSelector and the caller may not get the Namespace), NOT_DISCLOSED."
    )
    def limited_by(self) -> str | None:
        return self.result.limited_by

    @strawberry.field
    def summary(self) -> str:
        return self.result.summary

    @field(description="The Workload's priority: its priorityClass' value, 0 without one.")
    def priority(self) -> int:
        return self.result.priority

    @strawberry.field
    def priority_class(self) -> str | None:
        return self.result.priority_class

    @field(
        description="Kueue would preempt this many admitted Workloads of lower priority to "
        "admit it (verdict MUST_WAIT: admitted once they are evicted). Simulated over the "
        "admitted Workloads you may read (see `detail`); 0 when none would be preempted."
    )
    def preempts(self) -> int:
        return self.result.preempts

    @field(
        description="The Workloads counted in `preempts`, in the order Kueue's preemption "
        "picks them. Only admitted Workloads you may read are simulated, so each is one you "
        "may read."
    )
    def preemption_targets(self) -> list[WhatIfPreemptionTarget]:
        return [
            WhatIfPreemptionTarget(
                name=t.workload.name,
                namespace=t.workload.namespace,
                cluster_queue_name=t.cluster_queue,
                reason=t.reason,
                priority=t.workload.priority,
            )
            for t in self.result.preemption_targets
        ]

    @strawberry.field
    def local_queue(self) -> LocalQueue:
        return LocalQueue.ref(self.result.local_queue, self.namespace)

    @field(description="The ClusterQueue's name (from the LocalQueue), not the object.")
    def cluster_queue_name(self) -> str | None:
        return self.result.cluster_queue

    @field(description="Where the ClusterQueue figures (and the verdict's basis) come from.")
    def numbers_from(self) -> NumbersSource:
        if self.source is NumbersSource.DISCLOSURE_POLICY or self.result.numbers_shown:
            return self.source
        return NumbersSource.NONE

    @field(description="Why figures are missing or partial; empty when all are shown.")
    def detail(self) -> str:
        return self.result.detail

    @strawberry.field
    def pod_sets(self) -> list[WhatIfPodSet]:
        return [
            WhatIfPodSet(
                name=o.name,
                count=o.count,
                requests=computed_quantities(sorted(o.per_pod.items())),
                total_requests=computed_quantities(sorted(o.total.items())),
                resource_groups=[
                    WhatIfResourceGroup(
                        pod_set=g.pod_set,
                        resources=list(g.resources),
                        flavor=g.flavor,
                        verdict=g.verdict,
                        limited_by=g.limited_by,
                        borrows=g.borrows,
                        may_preempt=g.may_preempt,
                        preempts_first_in=g.preempts_first_in,
                        preempts=g.preempts,
                        borrowing_level=g.borrowing_level,
                        attempts=[
                            WhatIfFlavorAttempt(
                                flavor=a.flavor,
                                verdict=a.verdict,
                                borrows=a.borrows,
                                reasons=list(a.reasons),
                                borrowing_level=a.borrowing_level,
                            )
                            for a in g.attempts
                        ],
                    )
                    for g in o.groups
                ],
                topology=_topology_of(o.topology),
            )
            for o in self.result.pod_sets
        ]

    @field(
        description="Per (flavor, resource): requested against nominal quota, limits, usage, "
        "headroom and maximum capacity. Empty when figures are not shown (`numbersFrom: NONE`, "
        "or the disclosure policy at `verdict`)."
    )
    def quota(self) -> list[QuotaLine]:
        return [QuotaLine.of(line) for line in self.result.lines]

    @field(description="The reasons as a diagnosis would show them once submitted.")
    def reasons(self) -> list[DiagnosisReason]:
        return [DiagnosisReason.of(r) for r in self.result.reasons]

    @field(description="The QuotaReserved=False message Kueue would write; null when it admits.")
    def kueue_message(self) -> str | None:
        return self.result.kueue_message

    @field(description="Admission checks that decide after the quota reservation.")
    def admission_checks(self) -> list[str]:
        return list(self.result.admission_checks)

    @strawberry.field
    def next_steps(self) -> list[str]:
        return list(self.result.next_steps)


def _priority_class(inputs: list[WhatIfPodSetInput]) -> PriorityClassRef | None:
    named = {p.priority_class for p in inputs if p.priority_class is not None}
    if len(named) > 1:
        raise BadRequestError(
            "podSets: one priorityClass per Workload (Kueue's priority is the Workload's), "
            f"got {', '.join(sorted(named))}"
        )
    if not named:
        return None
    (class_name,) = named
    if not class_name:
        raise BadRequestError("podSets: priorityClass must not be empty")
    check_name(class_name)
    return PriorityClassRef(class_name)


def _request(quantity: str, path: str) -> Decimal:
    """One request's quantity, by Kubernetes' grammar and kueue.quantity's limits (bounded
    cost, whatever the text); BAD_REQUEST naming the field otherwise."""
    try:
        value = parse_quantity(quantity)
    except QuantityError as error:
        raise BadRequestError(f"{path}.quantity: {error}; {QUANTITY_SYNTAX}") from error
    if value < 0:
        raise BadRequestError(f"{path}.quantity: a request cannot be negative")
    return value


def _pod_sets(inputs: list[WhatIfPodSetInput]) -> list[wi.ProposedPodSet]:
    """Checked before any API call: a bad request costs nothing."""
    if not inputs:
        raise BadRequestError("podSets: give at least one pod set (or fromJob)")
    if len(inputs) > MAX_POD_SETS:
        raise BadRequestError(f"podSets: at most {MAX_POD_SETS} pod sets (Kueue's limit)")
    names = [p.name for p in inputs]
    if len(set(names)) != len(names):
        raise BadRequestError("podSets: names must be unique")
    out = []
    for index, ps in enumerate(inputs):
        if not 0 <= ps.count <= MAX_COUNT:
            # 0 as Kueue's PodSet.count allows (+kubebuilder:validation:Minimum=0).
            raise BadRequestError(f"podSets[{ps.name}].count must be 0..{MAX_COUNT}")
        per_pod: dict[str, Decimal] = {}
        for number, request in enumerate(ps.requests):
            if not request.resource or request.resource in per_pod:
                raise BadRequestError(f"podSets[{ps.name}]: empty or repeated resource name")
            per_pod_value = _request(request.quantity, f"podSets[{index}].requests[{number}]")
            if per_pod_value:
                per_pod[request.resource] = per_pod_value
        out.append(
            wi.ProposedPodSet(
                name=ps.name,
                count=ps.count,
                per_pod=per_pod,
                node_selector={e.key: e.value for e in ps.node_selector or []},
                tolerations=tuple(
                    {
                        k: v
                        for k, v in (
                            ("key", t.key),
                            ("operator", t.operator),
                            ("value", t.value),
                            ("effect", t.effect),
                        )
                        if v is not None
                    }
                    for t in ps.tolerations or []
                ),
                topology=_topology_request(ps.topology, f"podSets[{index}].topology"),
            )
        )
    return out


MAX_LABEL = 317
"""A node label key: a 253-character prefix, "/", a 63-character name."""


def _topology_request(given: WhatIfTopologyInput | None, path: str) -> TopologyRequest | None:
    """Kueue's PodSetTopologyRequest from the input, checked as Kueue's webhook does (one of
    required / preferred / unconstrained at most; a slice level needs a slice size >= 1)."""
    if given is None:
        return None
    levels = [given.required, given.preferred, given.slice_required]
    if any(lv is not None and not 0 < len(lv) <= MAX_LABEL for lv in levels):
        raise BadRequestError(f"{path}: a level is a node label key (1..{MAX_LABEL} characters)")
    modes = [
        m
        for m, on in (
            ("required", given.required is not None),
            ("preferred", given.preferred is not None),
            ("unconstrained", given.unconstrained),
        )
        if on
    ]
    if len(modes) > 1:
        raise BadRequestError(f"{path}: give at most one of required, preferred, unconstrained")
    if (given.slice_size is not None) != (given.slice_required is not None):
        raise BadRequestError(f"{path}: sliceRequired and sliceSize go together")
    if given.slice_size is not None and not 1 <= given.slice_size <= MAX_COUNT:
        raise BadRequestError(f"{path}.sliceSize must be 1..{MAX_COUNT}")
    if not modes and given.slice_required is None:
        raise BadRequestError(
            f"{path}: ask required, preferred, unconstrained or sliceRequired (or leave "
            "topology out)"
        )
    mode = modes[0] if modes else None
    return TopologyRequest(
        mode, given.required or given.preferred, given.slice_required, given.slice_size
    )


@strawberry.type
class WhatIfQuery:
    @field(
        description="Would it fit? Kueue's flavor assignment and verdict for Pods that are not "
        "submitted yet: `podSets`, or the pod templates of an existing Job, JobSet, RayJob or "
        "RayCluster (`fromJob`, "
        "its pod sets as Kueue computes them; its "
        "queue-name label is the default `localQueue`). Needs `get` on the LocalQueue; "
        "ClusterQueue figures only where the caller may read it or the quota disclosure "
        "policy allows. Creates nothing."
    )
    async def what_if(
        self,
        info: Info,
        namespace: str,
        local_queue: str | None = None,
        pod_sets: list[WhatIfPodSetInput] | None = None,
        from_job: ObjectNameInput | None = None,
        priority: Annotated[
            int | None,
            strawberry.argument(
                description="The Workload's priority as a number (a Workload's own "
                "`spec.priority`, int32 as GraphQL's Int), instead of a priority class: e.g. "
                "to ask how a Workload of priority 1000 would fare. Not with a pod set's "
                "`priorityClass`; with `fromJob` it replaces the Job's class."
            ),
        ] = None,
    ) -> WhatIf | None:
        if (pod_sets is None) == (from_job is None):
            raise BadRequestError("whatIf takes either podSets or fromJob")
        reader = reads(info)
        if pod_sets is not None:
            proposed = _pod_sets(pod_sets)
            priority_class = _priority_class(pod_sets)
            if priority is not None and priority_class is not None:
                raise BadRequestError(
                    "whatIf takes priority or a pod set's priorityClass, not both"
                )
            queue = local_queue
        else:
            assert from_job is not None
            proposed, job_queue, priority_class = await job_pod_sets(
                reader, from_job.namespace, from_job.name, canonical_kind(from_job.kind)
            )
            queue = local_queue or job_queue
            if priority is not None:
                priority_class = None
        loaded = await load_what_if(
            reader,
            info.context.disclosure,
            namespace,
            queue,
            proposed,
            priority_class,
            priority=priority,
        )
        return WhatIf(
            result=wi.what_if(loaded.input), source=loaded.view.numbers_from, namespace=namespace
        )
