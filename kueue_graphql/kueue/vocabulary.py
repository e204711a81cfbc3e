"""Kueue's vocabulary, in one place: the API version, the reasons Kueue writes, and the codes the
diagnosis gives its causes (with the group each belongs to).

Sources (github.com/kubernetes-sigs/kueue): apis/kueue/v1beta2/workload_types.go (QuotaReserved /
Admitted / Evicted / Preempted reasons), apis/kueue/v1beta2/clusterqueue_types.go (ClusterQueue
`Active` reasons), pkg/controller/core/localqueue_controller.go (LocalQueue `Active` reasons),
keps/10852-inadmissible-workloads-observability (the granular QuotaReserved reasons that v0.20
turns on by default). v0.17.0 is what the real-cluster tests run; newer reasons are understood
from those files.
"""

from __future__ import annotations

import enum

from kueue_graphql.kueue.objects import mapping, metadata

__all__ = [
    "CLUSTER_QUEUE_ACTIVE_REASONS",
    "GRANULAR_PENDING_REASONS",
    "KUEUE_API",
    "KUEUE_API_VERSION",
    "KUEUE_DEPLOYMENT",
    "KUEUE_GROUP",
    "LEGACY_PENDING_REASONS",
    "VISIBILITY_API_VERSION",
    "VISIBILITY_GROUP",
    "ClusterQueueActiveReason",
    "Code",
    "CodeGroup",
    "EvictionReason",
    "WorkloadCondition",
    "kueue_version_of",
]

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_API_VERSION = "v1beta2"
"""The one Kueue API version the service reads (storage version since Kueue v0.16)."""
KUEUE_API = f"{KUEUE_GROUP}/{KUEUE_API_VERSION}"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_API_VERSION = KUEUE_API_VERSION

KUEUE_DEPLOYMENT = ("kueue-system", "kueue-controller-manager")
"""Where Kueue's own manifests put the manager: config/default/kustomization.yaml (namespace
kueue-system, namePrefix kueue-) over config/components/manager/manager.yaml (controller-manager,
container "manager"); the Helm chart uses the same names by default."""


def kueue_version_of(deployment: object) -> str | None:
    """Kueue's version from its manager Deployment: the `app.kubernetes.io/version` label, else
    the tag of the `manager` container's image (registry.k8s.io/kueue/kueue:v0.17.0)."""
    if not isinstance(deployment, dict):
        return None
    labels = metadata(deployment).get("labels") or {}
    version = labels.get("app.kubernetes.io/version")
    if isinstance(version, str) and version:
        return version
    containers = mapping(deployment, "spec", "template", "spec").get("containers") or []
    for container in containers:
        if isinstance(container, dict) and container.get("name") == "manager":
            image = str(container.get("image") or "").split("@", 1)[0]
            tail = image.rsplit("/", 1)[-1]
            if ":" in tail:
                return tail.rsplit(":", 1)[1] or None
    return None


# Reasons Kueue writes on QuotaReserved=False. v0.17 writes only the legacy ones; with the
# UnadmittedWorkloadsObservability gate (on by default from v0.20) the granular ones
# (workload_types.go WorkloadQuotaReservedReason*, KEP-10852 tiers).
LEGACY_PENDING_REASONS = frozenset({"Pending", "Inadmissible"})
GRANULAR_PENDING_REASONS = frozenset(
    {
        "WaitingForQuota",
        "ExceedsMaxQuota",
        "NoMatchingFlavor",
        "TopologyPlacementFailed",
        "WaitingForPreemptedWorkloads",
        "Misconfigured",
        "Suspended",
        "PendingEvaluation",
        "AdmissionGated",
        "OnHold",
        "WaitingForPodsReady",
        "DRAResourcesUnresolved",
    }
)


class WorkloadCondition(enum.StrEnum):
    """Workload condition types Kueue writes that the diagnosis reads by name (Kueue v0.17.0
    apis/kueue/v1beta2/workload_types.go: WorkloadEvicted, WorkloadPreempted,
    WorkloadBlockedOnPreemptionGates, WorkloadDeactivationTarget). Kueue's words, not our
    `Code`s, even where spelled alike."""

    EVICTED = "Evicted"
    DEACTIVATION_TARGET = "DeactivationTarget"
    PREEMPTED = "Preempted"
    BLOCKED_ON_PREEMPTION_GATES = "BlockedOnPreemptionGates"
    QUOTA_RESERVED = "QuotaReserved"
    REQUEUED = "Requeued"


class EvictionReason(enum.StrEnum):
    """Reasons of the Workload's Evicted condition (Kueue v0.17.0
    apis/kueue/v1beta2/workload_types.go WorkloadEvictedBy*); Kueue may append "DueTo...",
    e.g. "ClusterQueueStoppedDueToDeletion"."""

    PREEMPTED = "Preempted"
    ADMISSION_CHECK = "AdmissionCheck"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"


class ClusterQueueActiveReason(enum.StrEnum):
    """ClusterQueue Active=False reasons (Kueue v0.17.0 apis/kueue/v1beta2/clusterqueue_types.go
    ClusterQueueActiveReason*; Ready, the Active=True reason, is not one), plus
    CohortCycleDetected, which newer releases write when the ClusterQueue's cohort tree loops."""

    TERMINATING = "Terminating"
    STOPPED = "Stopped"
    FLAVOR_NOT_FOUND = "FlavorNotFound"
    ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
    ADMISSION_CHECK_INACTIVE = "AdmissionCheckInactive"
    MULTIPLE_MULTIKUEUE_ADMISSION_CHECKS = "MultipleMultiKueueAdmissionChecks"
    MULTIKUEUE_ADMISSION_CHECK_APPLIED_PER_FLAVOR = "MultiKueueAdmissionCheckAppliedPerFlavor"
    MULTIKUEUE_WITH_PROVISIONING_REQUEST = "MultiKueueWithProvisioningRequest"
    TOPOLOGY_NOT_FOUND = "TopologyNotFound"
    COHORT_CYCLE_DETECTED = "CohortCycleDetected"
    UNKNOWN = "Unknown"


CLUSTER_QUEUE_ACTIVE_REASONS = frozenset(reason.value for reason in ClusterQueueActiveReason)


class CodeGroup(enum.Enum):
    """What kind of thing a cause is about: where to look and who can fix it."""

    QUEUE = "QUEUE"
    """A LocalQueue or ClusterQueue that cannot admit anything (missing, stopped, inactive)."""
    QUEUE_CONFIGURATION = "QUEUE_CONFIGURATION"
    """An object a ClusterQueue needs and lacks (flavor, admission check, topology, cohort)."""
    FLAVOR = "FLAVOR"
    """No flavor of the ClusterQueue suits the Pod template."""
    QUOTA = "QUOTA"
    """Quota arithmetic: never fits, or must wait."""
    ADMISSION_CHECK = "ADMISSION_CHECK"
    WORKLOAD = "WORKLOAD"
    """The Workload's own state (deactivated, evicted, finished, gated, not yet evaluated)."""
    ACCESS = "ACCESS"
    """What the caller may not read, or what does not exist yet."""
    SCHEDULER = "SCHEDULER"
    """kube-scheduler cannot place a Pod."""
    RUNTIME = "RUNTIME"
    """The kubelet / container runtime holds a placed Pod."""
    OTHER = "OTHER"


class Code(enum.StrEnum):
    """The diagnosis' normalized cause codes. Kueue's own reason names where one applies."""

    # queues
    LOCAL_QUEUE_NOT_FOUND = "LocalQueueNotFound"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    LOCAL_QUEUE_INACTIVE = "LocalQueueInactive"
    CLUSTER_QUEUE_NOT_FOUND = "ClusterQueueNotFound"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    CLUSTER_QUEUE_INACTIVE = "ClusterQueueInactive"
    CLUSTER_QUEUE_TERMINATING = "ClusterQueueTerminating"
    NAMESPACE_NOT_SELECTED = "NamespaceNotSelected"
    MISCONFIGURED = "Misconfigured"
    SUSPENDED = "Suspended"
    # what a ClusterQueue lacks (its Active condition)
    FLAVOR_NOT_FOUND = "FlavorNotFound"
    ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
    ADMISSION_CHECK_INACTIVE = "AdmissionCheckInactive"
    TOPOLOGY_NOT_FOUND = "TopologyNotFound"
    MULTIKUEUE_MISCONFIGURED = "MultiKueueMisconfigured"
    COHORT_CYCLE_DETECTED = "CohortCycleDetected"
    # flavors
    UNTOLERATED_FLAVOR_TAINT = "UntoleratedFlavorTaint"
    FLAVOR_NODE_AFFINITY_MISMATCH = "FlavorNodeAffinityMismatch"
    RESOURCE_NOT_COVERED = "ResourceNotCovered"
    FLAVOR_ASSIGNMENT_ERROR = "FlavorAssignmentError"
    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    # quota
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
    TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
    # admission checks
    ADMISSION_CHECK_PENDING = "AdmissionCheckPending"
    ADMISSION_CHECK_RETRY = "AdmissionCheckRetry"
    ADMISSION_CHECK_REJECTED = "AdmissionCheckRejected"
    ADMISSION_CHECK_FAILED = "AdmissionCheckFailed"
    UNSATISFIED_ADMISSION_CHECKS = "UnsatisfiedAdmissionChecks"
    PENDING_DELAYED_TOPOLOGY_REQUESTS = "PendingDelayedTopologyRequests"
    # the Workload itself
    NO_RESERVATION = "NoReservation"
    PENDING_EVALUATION = "PendingEvaluation"
    NOT_YET_EVALUATED = "NotYetEvaluated"
    BEHIND_QUEUE_HEAD = "BehindQueueHead"
    REQUEUE_BACKOFF = "RequeueBackoff"
    ADMISSION_GATED = "AdmissionGated"
    ON_HOLD = "OnHold"
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"
    DRA_RESOURCES_UNRESOLVED = "DRAResourcesUnresolved"
    BLOCKED_ON_PREEMPTION_GATES = "BlockedOnPreemptionGates"
    DEACTIVATED = "Deactivated"
    PREEMPTED = "Preempted"
    NO_WORKLOAD = "NoWorkload"
    POD_GROUP_INCOMPLETE = "PodGroupIncomplete"
    NO_QUEUE_NAME = "NoQueueName"
    OWNER_STILL_SUSPENDED = "OwnerStillSuspended"
    NO_PODS_YET = "NoPodsYet"
    TOPOLOGY_GATED = "TopologyGated"
    NODE_FAILURES = "NodeFailures"
    """Kueue evicted the TAS Workload: no replacement for a failed Node (its own reason)."""
    TOPOLOGY_NODE_REPLACEMENT = "TopologyNodeReplacement"
    """status.unhealthyNodes is set: Kueue looks for a replacement Node."""
    TOPOLOGY_NODE_UNHEALTHY = "TopologyNodeUnhealthy"
    """A Node of the Workload's topology assignment is NotReady or tainted against its Pods."""
    # access
    WORKLOAD_NOT_READABLE = "WorkloadNotReadable"
    PODS_NOT_READABLE = "PodsNotReadable"
    NOT_FOUND = "NotFoundError"
    # kube-scheduler
    INSUFFICIENT_RESOURCE = "InsufficientResource"
    INSUFFICIENT_ALLOCATABLE = "InsufficientAllocatable"
    NO_NODE_FITS = "NoNodeFits"
    NO_NODES = "NoNodes"
    NODE_AFFINITY_MISMATCH = "NodeAffinityMismatch"
    UNTOLERATED_NODE_TAINT = "UntoleratedNodeTaint"
    NODE_UNSCHEDULABLE = "NodeUnschedulable"
    POD_AFFINITY_MISMATCH = "PodAffinityMismatch"
    HOST_PORT_CONFLICT = "HostPortConflict"
    TOPOLOGY_SPREAD_MISMATCH = "TopologySpreadMismatch"
    VOLUME_CONSTRAINT = "VolumeConstraint"
    TOO_MANY_PODS = "TooManyPods"
    SCHEDULER_FILTER = "SchedulerFilter"
    # runtime
    CONTAINER_WAITING = "ContainerWaiting"
    NOT_STARTED_ON_NODE = "NotStartedOnNode"
    UNRECOGNIZED = "Unrecognized"

    @property
    def group(self) -> CodeGroup:
        return _GROUPS.get(self, CodeGroup.OTHER)

    @classmethod
    def of(cls, value: str) -> Code | None:
        """The code for a string, None when it is not one of ours (e.g. an event's reason)."""
        try:
            return cls(value)
        except ValueError:
            return None


def _group(group: CodeGroup, *codes: Code) -> dict[Code, CodeGroup]:
    return dict.fromkeys(codes, group)


_GROUPS: dict[Code, CodeGroup] = {
    **_group(
        CodeGroup.QUEUE,
        Code.LOCAL_QUEUE_NOT_FOUND,
        Code.LOCAL_QUEUE_STOPPED,
        Code.LOCAL_QUEUE_INACTIVE,
        Code.CLUSTER_QUEUE_NOT_FOUND,
        Code.CLUSTER_QUEUE_STOPPED,
        Code.CLUSTER_QUEUE_INACTIVE,
        Code.CLUSTER_QUEUE_TERMINATING,
        Code.NAMESPACE_NOT_SELECTED,
        Code.MISCONFIGURED,
        Code.SUSPENDED,
    ),
    **_group(
        CodeGroup.QUEUE_CONFIGURATION,
        Code.FLAVOR_NOT_FOUND,
        Code.ADMISSION_CHECK_NOT_FOUND,
        Code.ADMISSION_CHECK_INACTIVE,
        Code.TOPOLOGY_NOT_FOUND,
        Code.MULTIKUEUE_MISCONFIGURED,
        Code.COHORT_CYCLE_DETECTED,
    ),
    **_group(
        CodeGroup.FLAVOR,
        Code.UNTOLERATED_FLAVOR_TAINT,
        Code.FLAVOR_NODE_AFFINITY_MISMATCH,
        Code.RESOURCE_NOT_COVERED,
        Code.FLAVOR_ASSIGNMENT_ERROR,
        Code.NO_MATCHING_FLAVOR,
    ),
    **_group(
        CodeGroup.QUOTA,
        Code.EXCEEDS_MAX_QUOTA,
        Code.WAITING_FOR_QUOTA,
        Code.WAITING_FOR_PREEMPTED_WORKLOADS,
        Code.TOPOLOGY_PLACEMENT_FAILED,
    ),
    **_group(
        CodeGroup.ADMISSION_CHECK,
        Code.ADMISSION_CHECK_PENDING,
        Code.ADMISSION_CHECK_RETRY,
        Code.ADMISSION_CHECK_REJECTED,
        Code.ADMISSION_CHECK_FAILED,
        Code.UNSATISFIED_ADMISSION_CHECKS,
        Code.PENDING_DELAYED_TOPOLOGY_REQUESTS,
    ),
    **_group(
        CodeGroup.WORKLOAD,
        Code.NO_RESERVATION,
        Code.PENDING_EVALUATION,
        Code.NOT_YET_EVALUATED,
        Code.BEHIND_QUEUE_HEAD,
        Code.REQUEUE_BACKOFF,
        Code.ADMISSION_GATED,
        Code.ON_HOLD,
        Code.WAITING_FOR_PODS_READY,
        Code.DRA_RESOURCES_UNRESOLVED,
        Code.BLOCKED_ON_PREEMPTION_GATES,
        Code.DEACTIVATED,
        Code.PREEMPTED,
        Code.NO_WORKLOAD,
        Code.POD_GROUP_INCOMPLETE,
        Code.NO_QUEUE_NAME,
        Code.OWNER_STILL_SUSPENDED,
        Code.NO_PODS_YET,
        Code.TOPOLOGY_GATED,
        Code.NODE_FAILURES,
        Code.TOPOLOGY_NODE_REPLACEMENT,
        Code.TOPOLOGY_NODE_UNHEALTHY,
    ),
    **_group(CodeGroup.ACCESS, Code.WORKLOAD_NOT_READABLE, Code.PODS_NOT_READABLE, Code.NOT_FOUND),
    **_group(
        CodeGroup.SCHEDULER,
        Code.INSUFFICIENT_RESOURCE,
        Code.INSUFFICIENT_ALLOCATABLE,
        Code.NO_NODE_FITS,
        Code.NO_NODES,
        Code.NODE_AFFINITY_MISMATCH,
        Code.UNTOLERATED_NODE_TAINT,
        Code.NODE_UNSCHEDULABLE,
        Code.POD_AFFINITY_MISMATCH,
        Code.HOST_PORT_CONFLICT,
        Code.TOPOLOGY_SPREAD_MISMATCH,
        Code.VOLUME_CONSTRAINT,
        Code.TOO_MANY_PODS,
        Code.SCHEDULER_FILTER,
    ),
    **_group(CodeGroup.RUNTIME, Code.CONTAINER_WAITING, Code.NOT_STARTED_ON_NODE),
}
