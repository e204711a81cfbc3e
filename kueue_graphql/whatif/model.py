"""whatIf's model: the Workload-to-be (its pod sets), what the answer may look at, and the answer.

The input mirrors what Kueue's scheduler sees of a Workload (pkg/workload: pod sets, priority) and
of the cluster (pkg/cache/scheduler's snapshot: ClusterQueue, ResourceFlavors, cohort members, the
admitted Workloads that are preemption candidates), with Observed markers where a read was refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kueue_graphql.kueue.exact import ZERO
from kueue_graphql.kueue.model import (
    Absent,
    KubeObject,
    Observed,
    QuotaLine,
    Reason,
    Verdict,
)
from kueue_graphql.kueue.topology import TopologyAssignment, TopologyRequest

__all__ = [
    "RANK",
    "ZERO",
    "FlavorAttempt",
    "GroupAssignment",
    "PodSetOutcome",
    "PreemptionCandidate",
    "PreemptionTarget",
    "ProposedPodSet",
    "TopologyInput",
    "TopologyOutcome",
    "WhatIfInput",
    "WhatIfResult",
]

RANK = {
    Verdict.NEVER_FITS: 0,
    Verdict.QUEUE_INACTIVE: 1,
    Verdict.UNKNOWN: 2,
    Verdict.MUST_WAIT: 3,
    Verdict.FITS_NOW: 4,
}


@dataclass(frozen=True)
class ProposedPodSet:
    """One pod set of the Workload-to-be: `count` Pods of `per_pod` each."""

    name: str
    count: int
    per_pod: Mapping[str, Decimal]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[Mapping[str, Any], ...] = ()
    """requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms, as JSON."""
    tolerations: tuple[Mapping[str, Any], ...] = ()
    topology: TopologyRequest | None = None
    """Its topology-aware scheduling request (the `kueue.x-k8s.io/podset-*-topology`
    annotations of its template); None when it asks none."""


@dataclass(frozen=True)
class TopologyInput:
    """What Kueue's TAS snapshot is made of, as read: the Topologies, the Nodes, the Pods and
    the Workloads of every namespace. `names_shown`: read by the caller (else by the service
    under the disclosure policy: the verdict without domain or Node names)."""

    topologies: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    nodes: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    pods: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    workloads: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    names_shown: bool = True
    hidden_because: str = ""


@dataclass(frozen=True)
class TopologyOutcome:
    """Where Kueue's TAS step would place one pod set now (kueue.tas_placement), or why not."""

    pod_set: str
    verdict: Verdict
    flavor: str | None
    topology: str | None
    mode: str | None
    """required, preferred, unconstrained; None for a slice-only request or implied TAS."""
    level: str | None
    """The level asked (Kueue's fallback for an implied or slice-only request)."""
    placed_at: str | None = None
    """The level at which Kueue found the domain(s) (a preferred level may fall back)."""
    domains: tuple[tuple[str, ...], ...] | None = None
    """The domains at `placed_at`, their values from the top level down; None when hidden."""
    assignment: TopologyAssignment | None = None
    """The topologyAssignment Kueue would write; None when it does not fit or is hidden."""
    message: str = ""
    """Kueue's reason when it does not fit now ("topology ... allows to fit only 4 out of 5
    pod(s)")."""
    fitting: int | None = None
    wanted: int | None = None
    most_ever: int | None = None
    """NEVER_FITS: the slices (Pods) the best domain would take with nothing running."""
    slice_level: str | None = None
    slice_size: int | None = None
    why: str = ""
    """MUST_WAIT / NEVER_FITS / UNKNOWN: what would have to change, or what was not read."""


@dataclass(frozen=True)
class PreemptionCandidate:
    """An admitted Workload of the ClusterQueue or of its cohort: its priority, when its quota
    was reserved (ISO text, for Kueue's "most recently admitted first"), and the quota it
    holds."""

    priority: int
    admitted_at: str
    reserved: Mapping[tuple[str, str], Decimal]
    cluster_queue: str = ""
    """The ClusterQueue it holds quota in ("": the preemptor's own)."""
    name: str = ""
    namespace: str = ""
    uid: str = ""
    evicted: bool = False
    """Evicted but still holding its quota (Kueue counts it first, as preemption under way)."""


@dataclass(frozen=True)
class PreemptionTarget:
    """A Workload Kueue would preempt: the candidate, its ClusterQueue and Kueue's reason
    (InClusterQueue, InCohortReclamation, InCohortReclaimWhileBorrowing)."""

    workload: PreemptionCandidate
    cluster_queue: str
    reason: str


@dataclass(frozen=True)
class WhatIfInput:
    """What the answer may look at. `local_queue` the caller could `get`; the rest as read
    (by the caller, or by the service under the disclosure policy), markers where not."""

    namespace: str
    local_queue: KubeObject
    pod_sets: Sequence[ProposedPodSet]
    cluster_queue: Observed[KubeObject] = field(default_factory=Absent)
    resource_flavors: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    cluster_queues: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    cohorts: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    namespace_labels: Observed[Mapping[str, str]] = field(default_factory=Absent)
    show_numbers: bool = True
    """False: verdict, flavors and reasons without any quota figure (disclosure policy)."""
    names_shown: bool = True
    """False: the cohort was read by the service (disclosure policy), so other ClusterQueues'
    and Cohorts' names stay hidden; the limits they set are given by kind and figure only."""
    hidden_because: str = ""
    """Why numbers are not shown, or why the ClusterQueue could not be read."""
    priority: int = 0
    """The Workload's priority (its WorkloadPriorityClass or PriorityClass value; 0 without)."""
    priority_class: str | None = None
    candidates: Sequence[PreemptionCandidate] = ()
    """The admitted Workloads of the ClusterQueue and of its cohort's ClusterQueues the caller
    may read (preemption candidates)."""
    candidates_complete: bool = False
    """`candidates` are every admitted Workload of those ClusterQueues."""
    tas: TopologyInput = field(default_factory=TopologyInput)


@dataclass(frozen=True)
class FlavorAttempt:
    flavor: str
    verdict: Verdict
    borrows: bool
    reasons: tuple[str, ...]
    """Kueue's words for why it does not fit now (empty when it fits)."""
    borrowing_level: int | None = None
    """Kueue's FlavorAssignmentAttempt.Borrow: 0 within the ClusterQueue's own quota, else the
    height of the lowest cohort subtree that holds the quota (whatif.borrowing); None when not
    computed (the flavor cannot take the Pods, or the cohort could not be read)."""


@dataclass(frozen=True)
class GroupAssignment:
    """One resource group of one pod set: the flavor Kueue would assign, or why none."""

    pod_set: str
    resources: tuple[str, ...]
    flavor: str | None
    """FITS_NOW: the flavor Kueue assigns now. MUST_WAIT: the flavor it would preempt or wait in
    (its preferred attempt, else the first where waiting can give)."""
    verdict: Verdict
    limited_by: str | None
    borrows: bool
    may_preempt: bool
    """Kueue would simulate preemption for this flavor (`preempts`: what it found)."""
    attempts: tuple[FlavorAttempt, ...]
    preempts_first_in: str | None = None
    """FITS_NOW in `flavor`, but an earlier flavor where Kueue stops to preempt instead when it
    finds admitted Workloads of lower priority there (whenCanPreempt: MayStopSearch)."""
    borrowing_level: int | None = None
    """The borrowing level in `flavor` (FlavorAttempt.borrowing_level); None without a flavor."""
    needs_preemption: tuple[str, ...] = ()
    """The resources that do not fit now in `flavor` but where Kueue simulates preemption
    (its FlavorAssignment mode Preempt): what `GetTargets` frees."""
    preempts: int = 0
    """MUST_WAIT in `flavor`: Kueue would preempt this many lower-priority Workloads of the
    ClusterQueue to admit it (0: none found among those the caller may read)."""


@dataclass(frozen=True)
class PodSetOutcome:
    name: str
    count: int
    per_pod: Mapping[str, Decimal]
    total: Mapping[str, Decimal]
    groups: tuple[GroupAssignment, ...]
    topology: TopologyOutcome | None = None


@dataclass(frozen=True)
class WhatIfResult:
    verdict: Verdict
    limited_by: str | None
    summary: str
    local_queue: str
    cluster_queue: str | None
    numbers_shown: bool
    detail: str
    pod_sets: tuple[PodSetOutcome, ...]
    lines: tuple[QuotaLine, ...]
    reasons: tuple[Reason, ...]
    kueue_message: str | None
    """The QuotaReserved=False message Kueue would write, or None when it would admit."""
    admission_checks: tuple[str, ...]
    next_steps: tuple[str, ...]
    priority: int = 0
    priority_class: str | None = None
    preempts: int = 0
    """Kueue would preempt this many Workloads to admit it (then it is admitted once they are
    evicted); 0 when it would not, or none the caller may read would free enough."""
    preemption_targets: tuple[PreemptionTarget, ...] = ()
    """The Workloads counted in `preempts`, in Kueue's order."""
