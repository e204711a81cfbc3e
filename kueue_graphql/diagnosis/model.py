"""What the diagnosis reads (DiagnosisInput) and what it answers (Diagnosis).

The GraphQL layer and the CLI both fill a DiagnosisInput with what the *calling user* could read,
in the Observed values of kueue.model; the diagnosis never guesses what lies behind a Forbidden
marker.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from kueue_graphql.kueue.model import (
    Absent,
    Failed,
    KubeObject,
    ObjectRef,
    Observed,
    QuotaReport,
    Reason,
    Visibility,
)
from kueue_graphql.kueue.topology import DomainRoom

__all__ = [
    "Diagnosis",
    "DiagnosisInput",
    "Eviction",
    "Layer",
    "PodSchedulingProblem",
    "Preemptor",
    "QueuePosition",
    "Stage",
    "TopologyFit",
    "verdict_key",
]


@dataclass(frozen=True)
class DiagnosisInput:
    """Everything the diagnosis may look at, as read by the calling user.

    `owner` is the object the user asked about (a Job, any other Kueue-integrated kind), or
    Absent when the question started from the Workload itself. Lists of events may mix
    core/v1 and events.k8s.io/v1 shapes; the diagnosis matches them to objects itself.
    `cluster_queues` and `cohorts` are every ClusterQueue / Cohort the caller can list; they
    are only needed for the cohort arithmetic (what others could lend).
    `queue_position` is one item of the visibility API's pendingworkloads list, Absent when
    the API is not served or the Workload is not in the list.
    """

    owner: Observed[KubeObject] = field(default_factory=Absent)
    workload: Observed[KubeObject] = field(default_factory=Absent)
    events: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    pods: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    local_queue: Observed[KubeObject] = field(default_factory=Absent)
    cluster_queue: Observed[KubeObject] = field(default_factory=Absent)
    cluster_queues: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    cohorts: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    resource_flavors: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    admission_checks: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    nodes: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    queue_position: Observed[KubeObject] | Failed = field(default_factory=Absent)
    preemptor: Observed[KubeObject] = field(default_factory=Absent)
    """The Workload whose UID Kueue's Preempted condition names, as the caller could find it
    (Forbidden: she may not list Workloads where it might be)."""
    topologies: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    """Read when Kueue's TAS step could not place a pod set (with `resource_flavors`, `nodes`,
    `cluster_pods` and `cluster_workloads`): what its snapshot counts room from."""
    cluster_pods: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    """Pods of every namespace (their usage of the Nodes), for the TAS count."""
    cluster_workloads: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    """Workloads of every namespace (admitted TAS usage), for the TAS count."""


class Stage(enum.Enum):
    """Where on the admission path the workload stands."""

    NOT_MANAGED = "NOT_MANAGED"
    NO_WORKLOAD_YET = "NO_WORKLOAD_YET"
    WAITING_FOR_QUOTA_RESERVATION = "WAITING_FOR_QUOTA_RESERVATION"
    WAITING_FOR_ADMISSION_CHECKS = "WAITING_FOR_ADMISSION_CHECKS"
    ADMITTED_PODS_PENDING = "ADMITTED_PODS_PENDING"
    RUNNING = "RUNNING"
    FINISHED_SUCCEEDED = "FINISHED_SUCCEEDED"
    FINISHED_FAILED = "FINISHED_FAILED"
    EVICTED = "EVICTED"
    PREEMPTED = "PREEMPTED"
    DEACTIVATED = "DEACTIVATED"


class Layer(enum.Enum):
    """Which control plane to investigate next."""

    KUEUE = "KUEUE"
    SCHEDULER = "SCHEDULER"
    RUNTIME = "RUNTIME"


@dataclass(frozen=True)
class PodSchedulingProblem:
    """A Pod kube-scheduler has not placed (or the runtime has not started)."""

    pod: ObjectRef
    phase: str
    scheduled_status: str | None
    scheduled_reason: str | None
    scheduled_message: str | None
    node_name: str | None
    node_selector: Mapping[str, str]
    tolerations: tuple[str, ...]
    failed_scheduling: tuple[str, ...]
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class QueuePosition:
    visibility: Visibility
    position_in_cluster_queue: int | None = None
    position_in_local_queue: int | None = None
    priority: int | None = None
    detail: str = ""
    position_beyond: int | None = None
    """Set (with both positions None) when the Workload is pending behind more than this many
    entries of the LocalQueue's pending list, the most read for one position."""


@dataclass(frozen=True)
class Eviction:
    """One row of status.schedulingStats.evictions: how often, and why."""

    reason: str
    underlying_cause: str
    count: int


@dataclass(frozen=True)
class Preemptor:
    uid: str
    workload: ObjectRef | None
    """None when the caller could not read it: its name stays hidden."""
    owner: ObjectRef | None


@dataclass(frozen=True)
class TopologyFit:
    """Why Kueue's topology-aware scheduling (an admission step) could not place a pod set."""

    pod_set: str
    topology: str
    mode: str | None
    """required, preferred or unconstrained (the pod set's topology request)."""
    level: str | None
    """The node label of the level asked."""
    pods_wanted: int
    per_pod: Mapping[str, Decimal]
    kueue_fitting: int | None
    """The Pods Kueue's message says its best domain could take (whole slices' Pods)."""
    flavor: str | None
    domains: tuple[DomainRoom, ...] | None
    """Every domain at `level`, most room first, counted as Kueue's TAS snapshot counts; None
    when the caller may not read what that needs (`hidden_because`)."""
    hidden_because: str | None = None
    slice_level: str | None = None
    slice_size: int | None = None
    """Set when the pod set asks for slices: room is then counted in whole slices, each in
    one domain of `slice_level`."""


@dataclass(frozen=True)
class Diagnosis:
    stage: Stage
    layer: Layer
    summary: str
    workload: ObjectRef | None
    owner: ObjectRef | None
    local_queue: str | None
    cluster_queue: str | None
    blocking_object: ObjectRef | None
    reasons: tuple[Reason, ...]
    quota: QuotaReport
    pods: tuple[PodSchedulingProblem, ...]
    queue_position: QueuePosition
    next_steps: tuple[str, ...]
    commands: tuple[str, ...]
    preemptor: Preemptor | None = None
    evictions: tuple[Eviction, ...] = ()
    topology: tuple[TopologyFit, ...] = ()


def verdict_key(d: Diagnosis) -> tuple[object, ...]:
    """What a waiting user watches for: a live diagnosis is pushed only when this changes
    (stage, layer, blocking object, reason codes, quota verdict, queue position), not on every
    resourceVersion of the objects behind it."""
    return (
        d.stage,
        d.layer,
        d.blocking_object,
        tuple(sorted({r.code for r in d.reasons}, key=str)),
        d.quota.verdict,
        d.queue_position.position_in_cluster_queue,
        d.queue_position.position_in_local_queue,
    )
