"""What the diagnosis reads (DiagnosisInput) and what it answers (Diagnosis).

Inputs are Kubernetes objects exactly as the API server returns them (JSON as plain dicts), each
wrapped in an Observed value: the object, or a marker saying the caller may not read it
(Forbidden) or it does not exist / is not served (Absent). The GraphQL layer and the CLI both
fill a DiagnosisInput with what the *calling user* could read; the diagnosis never guesses what
lies behind a Forbidden marker.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeAlias, TypeVar

__all__ = [
    "Absent",
    "Diagnosis",
    "DiagnosisInput",
    "Eviction",
    "Failed",
    "Forbidden",
    "KubeObject",
    "Layer",
    "Number",
    "ObjectRef",
    "Observed",
    "PodSchedulingProblem",
    "Preemptor",
    "QueuePosition",
    "QuotaLine",
    "QuotaReport",
    "Reason",
    "ReasonSource",
    "Stage",
    "Verdict",
    "Visibility",
    "is_known",
]

KubeObject: TypeAlias = Mapping[str, Any]
"""A Kubernetes object as decoded from the API server's JSON."""


@dataclass(frozen=True)
class Forbidden:
    """The caller may not read this object (the API server answered 403)."""

    detail: str = ""


@dataclass(frozen=True)
class Absent:
    """The object does not exist (404), or the API serving it is not installed."""

    detail: str = ""


@dataclass(frozen=True)
class Failed:
    """The API that serves it answered with an error (e.g. Kueue's visibility server failed)."""

    detail: str = ""


T = TypeVar("T")
Observed: TypeAlias = T | Forbidden | Absent


def is_known(value: object) -> bool:
    """True when an Observed value holds the object itself rather than a marker."""
    return not isinstance(value, Forbidden | Absent)


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


class ReasonSource(enum.Enum):
    CONDITION = "CONDITION"
    EVENT = "EVENT"
    OBJECT = "OBJECT"


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str | None = None
    api_version: str | None = None


@dataclass(frozen=True)
class Number:
    """A named quantity read from a message or an object, e.g. maximumCapacity = 2."""

    name: str
    value: Fraction
    text: str


@dataclass(frozen=True)
class Reason:
    """One structured cause.

    `code` is a normalized code (the granular reason names of later Kueue releases where one
    applies, e.g. ExceedsMaxQuota, or a kube-scheduler cause such as InsufficientResource);
    `kueue_reason` is what was actually written (e.g. the legacy `Pending`).
    """

    code: str
    message: str
    source: ReasonSource
    kueue_reason: str | None = None
    resource: str | None = None
    flavor: str | None = None
    pod_set: str | None = None
    object: ObjectRef | None = None
    numbers: tuple[Number, ...] = ()

    def number(self, name: str) -> Fraction | None:
        for n in self.numbers:
            if n.name == name:
                return n.value
        return None


class Visibility(enum.Enum):
    """Whether a derived section could be computed from what the caller may read."""

    AVAILABLE = "AVAILABLE"
    FORBIDDEN = "FORBIDDEN"
    ABSENT = "ABSENT"
    NOT_APPLICABLE = "NOT_APPLICABLE"
    UNAVAILABLE = "UNAVAILABLE"
    """The API that computes it failed: not reported, rather than guessed absent."""


class Verdict(enum.Enum):
    NEVER_FITS = "NEVER_FITS"
    QUEUE_INACTIVE = "QUEUE_INACTIVE"
    """The quota would do, but the LocalQueue or ClusterQueue admits nothing now (inactive,
    stopped): no FITS_NOW / MUST_WAIT while that lasts."""
    FITS_NOW = "FITS_NOW"
    MUST_WAIT = "MUST_WAIT"
    UNKNOWN = "UNKNOWN"
    """Cohort members the caller may not read decide it."""


@dataclass(frozen=True)
class QuotaLine:
    """One (flavor, resource) the workload needs, against its ClusterQueue and cohort.

    Amounts are exact. `None` means "not limited" for limits, and "could not be computed
    from what the caller may read" for cohort figures.
    """

    flavor: str
    resource: str
    requested: Fraction
    nominal_quota: Fraction
    borrowing_limit: Fraction | None
    lending_limit: Fraction | None
    reserved: Fraction
    used: Fraction
    borrowed: Fraction
    cohort: str | None
    cohort_can_lend: Fraction | None
    maximum_capacity: Fraction | None
    available_now: Fraction | None
    verdict: Verdict
    limited_by: str | None = None
    """NOMINAL_QUOTA, BORROWING_LIMIT, COHORT or NOT_IN_CLUSTER_QUEUE when it does not fit."""
    counts_this_workload: bool = False
    """The Workload holds a reservation, so `reserved` already includes its own request."""


@dataclass(frozen=True)
class QuotaReport:
    visibility: Visibility
    cluster_queue: str | None = None
    lines: tuple[QuotaLine, ...] = ()
    verdict: Verdict | None = None
    """Best flavor per resource group, worst across groups."""
    detail: str = ""


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
