"""The objects Kueue's job framework manages (a Workload's owner), and how each hands off to Pods.

Pure: which Pods belong to an owner, how to select them with one label selector, who created
them, and who suspends the owner. Taken from Kueue v0.17.0 and the controllers it drives:

- batch/v1 Job: the Job controller labels its Pods `batch.kubernetes.io/controller-uid=<uid>`.
- jobset.x-k8s.io JobSet (sigs.k8s.io/jobset v0.11.1, pkg/controllers/jobset_controller.go,
  `labelAndAnnotateObject`): its child Jobs and their Pods carry `jobset.sigs.k8s.io/jobset-uid`
  and `jobset.sigs.k8s.io/replicatedjob-name`; Kueue's Workload has one pod set per replicated
  job (kueue pkg/controller/jobs/jobset/jobset_controller.go, `PodSets`).
- ray.io RayJob and RayCluster (kueue pkg/controller/jobs/rayjob, raycluster; KubeRay
  ray-operator v1.6.0): the KubeRay operator creates a RayJob's RayCluster once Kueue unsuspends
  it, names it in the RayJob's `status.rayClusterName`, and labels the cluster's Pods
  `ray.io/cluster=<RayCluster name>` (Kueue's own `PodLabelSelector` for both kinds).
- apps/v1 StatefulSet (kueue pkg/controller/jobs/statefulset/statefulset_webhook.go,
  statefulset_reconciler.go): one pod group, its Pods labelled
  `kueue.x-k8s.io/pod-group-name=<Workload name>`, the Workload owned by the StatefulSet.
- Pods (kueue pkg/controller/jobs/pod/pod_controller.go): a plain Pod is its Workload's owner;
  a pod group (`kueue.x-k8s.io/pod-group-name`, `kueue.x-k8s.io/pod-group-total-count`) has one
  Workload named after the group and owned by every Pod of it. Kueue holds a Pod with the
  scheduling gate `kueue.x-k8s.io/admission`. A Deployment's Pods are each such a plain Pod
  (kueue pkg/controller/jobs/deployment/deployment_webhook.go).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_graphql.kueue.model import KubeObject
from kueue_graphql.kueue.objects import (
    dig,
    items,
    labels,
    mapping,
    name,
    text,
    uid,
)

JOB_CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
JOB_SET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"
JOB_SET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
POD_GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_KINDS = ("RayJob", "RayCluster")
KUBERAY_OPERATOR = "the KubeRay operator (ray-operator)"


@dataclass(frozen=True)
class OwnerKind:
    """What the diagnosis says about one kind of owner."""

    kind: str
    pods_created_by: str
    """Who creates (or releases) the Pods once Kueue admits the Workload."""
    suspend_field: str
    """Where the owner's suspension is, as a user would look for it."""
    status_field: str | None = None
    """The kind's own one-word state in its status, where it has one."""


OWNER_KIND_FACTS = {
    "Job": OwnerKind("Job", "kube-controller-manager's job controller", "spec.suspend"),
    "JobSet": OwnerKind(
        "JobSet",
        "the JobSet controller (jobset-controller-manager), then kube-controller-manager's job "
        "controller for each child Job",
        "spec.suspend",
    ),
    "RayJob": OwnerKind(
        "RayJob",
        f"{KUBERAY_OPERATOR}, which creates the RayCluster (named in status.rayClusterName) and "
        "its head and worker Pods, and in K8sJobMode the submitter Job",
        "spec.suspend",
        "jobDeploymentStatus",
    ),
    "RayCluster": OwnerKind("RayCluster", f"{KUBERAY_OPERATOR}", "spec.suspend", "state"),
    "StatefulSet": OwnerKind(
        "StatefulSet",
        "kube-controller-manager's statefulset controller (Kueue then removes the "
        f"{ADMISSION_GATE} scheduling gate from each Pod)",
        f"the Pods' scheduling gate {ADMISSION_GATE}",
    ),
    "Pod": OwnerKind(
        "Pod",
        f"Kueue itself, which removes the {ADMISSION_GATE} scheduling gate",
        f"the Pod's scheduling gate {ADMISSION_GATE}",
    ),
}


def owner_facts(kind: str) -> OwnerKind | None:
    return OWNER_KIND_FACTS.get(kind)


def owner_status(owner: KubeObject | None) -> str | None:
    """The owner's own one-word state (`OwnerKind.status_field`): a RayJob's
    `status.jobDeploymentStatus`, a RayCluster's `status.state`; None when unset or the kind has
    none."""
    facts = owner_facts(text(owner, "kind") or "") if owner is not None else None
    if facts is None or facts.status_field is None:
        return None
    return text(owner, "status", facts.status_field) or None


def ray_cluster_of(
    owner: KubeObject | None, kind: str | None, workload: KubeObject | None
) -> str | None:
    """The RayCluster whose Pods a Ray owner hands off to: a RayCluster itself (by the Workload's
    reference when it was not read); a RayJob's `status.rayClusterName`, None until the KubeRay
    operator has created one (or when the RayJob was not read)."""
    if kind == "RayCluster":
        if owner is not None:
            return name(owner) or None
        ref = controller_reference(workload)
        return str(ref["name"]) if ref is not None and ref.get("name") else None
    if kind == "RayJob" and owner is not None:
        return text(owner, "status", "rayClusterName") or None
    return None


def no_child_yet(owner: KubeObject | None) -> str | None:
    """What an admitted owner's controller has not made yet, when the kind makes an object
    between the owner and its Pods: a RayJob without a RayCluster."""
    if owner is None or text(owner, "kind") != "RayJob":
        return None
    if text(owner, "status", "rayClusterName"):
        return None
    state = text(owner, "status", "jobDeploymentStatus") or "empty"
    return (
        f"no RayCluster yet: {KUBERAY_OPERATOR} has not acted on it (status.rayClusterName is "
        f"unset, status.jobDeploymentStatus is {state})"
    )


def controller_reference(workload: KubeObject | None) -> Mapping[str, Any] | None:
    """The Workload's controlling ownerReference; for a pod group (every Pod owns it, none as
    controller) the first one."""
    refs = items(workload, "metadata", "ownerReferences")
    for ref in refs:
        if ref.get("controller"):
            return ref
    return refs[0] if refs else None


def pod_group_name(obj: KubeObject | None) -> str | None:
    value = labels(obj).get(POD_GROUP_NAME_LABEL) if obj is not None else None
    return value if isinstance(value, str) and value else None


def is_pod_group_workload(workload: KubeObject | None) -> bool:
    """A pod group's Workload: owned by Pods, more than one or named by the group label."""
    refs = items(workload, "metadata", "ownerReferences")
    pods = [r for r in refs if r.get("kind") == "Pod"]
    return len(pods) > 1 or (bool(pods) and not any(r.get("controller") for r in pods))


def pods_selector(kind: str | None, owner_uid: str | None, group: str | None) -> str | None:
    """One label selector that lists the Pods an owner hands off to (`pod_belongs` keeps exactly
    those), or None when the kind has none (then every Pod of the namespace is listed and
    kept by ownerReference)."""
    if group is not None:
        return f"{POD_GROUP_NAME_LABEL}={group}"
    if kind == "Job" and owner_uid:
        return f"{JOB_CONTROLLER_UID_LABELS[0]}={owner_uid}"
    if kind == "JobSet" and owner_uid:
        return f"{JOB_SET_UID_LABEL}={owner_uid}"
    return None


def ray_pods_selector(cluster: str) -> str:
    """The Pods of a RayCluster (Kueue's `PodLabelSelector` for RayJob and RayCluster)."""
    return f"{RAY_CLUSTER_LABEL}={cluster}"


def ray_pod_belongs(pod: KubeObject, cluster: str) -> bool:
    return labels(pod).get(RAY_CLUSTER_LABEL) == cluster


def pod_group_of(
    owner: KubeObject | None, kind: str | None, workload: KubeObject | None
) -> str | None:
    """The pod group whose Pods the owner hands off to: a grouped Pod's own group; a
    StatefulSet's or a pod group's Workload's name (Kueue names the group after it)."""
    if kind == "Pod" and pod_group_name(owner) is not None:
        return pod_group_name(owner)
    if workload is not None and (kind == "StatefulSet" or is_pod_group_workload(workload)):
        return name(workload)
    return None


def pod_belongs(
    pod: KubeObject, kind: str | None, owner_uid: str | None, group: str | None
) -> bool:
    """Whether a Pod is one the owner (of this kind and uid, handing off to pod group `group`)
    handed off to."""
    if group is not None:
        return pod_group_name(pod) == group
    if owner_uid is None:
        return False
    pod_labels = labels(pod)
    if uid(pod) == owner_uid:  # a plain Pod owns its Workload
        return True
    if any(r.get("uid") == owner_uid for r in items(pod, "metadata", "ownerReferences")):
        return True
    if any(pod_labels.get(label) == owner_uid for label in JOB_CONTROLLER_UID_LABELS):
        return True
    return kind in (None, "JobSet") and pod_labels.get(JOB_SET_UID_LABEL) == owner_uid


def scheduling_gates(pod: KubeObject) -> list[str]:
    return [str(g.get("name")) for g in items(pod, "spec", "schedulingGates") if g.get("name")]


def gated_by_kueue(pod: KubeObject) -> bool:
    return ADMISSION_GATE in scheduling_gates(pod)


def owner_suspended(owner: KubeObject | None) -> bool | None:
    """The owner's own suspend state: `spec.suspend` where the kind has it (Job, JobSet, RayJob,
    RayCluster), Kueue's
    scheduling gate for a Pod; None for kinds without one (a StatefulSet's Pods are gated one by
    one)."""
    if owner is None:
        return None
    suspend = dig(owner, "spec", "suspend")
    if isinstance(suspend, bool):
        return suspend
    if text(owner, "kind") == "Pod":
        return gated_by_kueue(owner)
    if text(owner, "kind") in ("Job", "JobSet", *RAY_KINDS):
        return False
    return None


def suspended_by(owner: KubeObject | None, workload: KubeObject | None) -> str | None:
    """Who holds a suspended owner: `kueue` (its Workload is not admitted, or admitted and not
    yet released: Kueue suspends what it has not admitted), `user` (its Workload was deactivated,
    `spec.active: false`, or the owner names no queue and Kueue does not manage it), None when
    it is not suspended."""
    if owner is None or not owner_suspended(owner):
        return None
    if workload is not None and dig(workload, "spec", "active") is False:
        return "user"
    queue = labels(owner).get("kueue.x-k8s.io/queue-name") or mapping(
        owner, "metadata", "annotations"
    ).get("kueue.x-k8s.io/queue-name")
    if workload is None and not queue:
        return "user"
    return "kueue"


def group_total_count(pods: Sequence[KubeObject]) -> int | None:
    """A pod group's expected size, from `kueue.x-k8s.io/pod-group-total-count` on its Pods."""
    for pod in pods:
        value = mapping(pod, "metadata", "annotations").get(POD_GROUP_TOTAL_COUNT_ANNOTATION)
        if isinstance(value, str) and value.isdigit() and len(value) <= 9:
            return int(value)
    return None


def owner_uid_of(owner: KubeObject | None, workload: KubeObject | None) -> str | None:
    """The owner's uid: from the owner when read, else the Workload's controlling reference."""
    if owner is not None and uid(owner):
        return uid(owner)
    ref = controller_reference(workload)
    found = ref.get("uid") if ref is not None else None
    return str(found) if found else None


def owner_kind_of(owner: KubeObject | None, workload: KubeObject | None) -> str | None:
    if owner is not None and text(owner, "kind"):
        return text(owner, "kind")
    ref = controller_reference(workload)
    return str(ref.get("kind")) if ref is not None and ref.get("kind") else None


__all__ = [
    "ADMISSION_GATE",
    "JOB_SET_NAME_LABEL",
    "JOB_SET_UID_LABEL",
    "KUBERAY_OPERATOR",
    "POD_GROUP_NAME_LABEL",
    "RAY_CLUSTER_LABEL",
    "RAY_KINDS",
    "REPLICATED_JOB_NAME_LABEL",
    "OwnerKind",
    "controller_reference",
    "gated_by_kueue",
    "group_total_count",
    "is_pod_group_workload",
    "no_child_yet",
    "owner_facts",
    "owner_kind_of",
    "owner_status",
    "owner_suspended",
    "owner_uid_of",
    "pod_belongs",
    "pod_group_name",
    "pod_group_of",
    "pods_selector",
    "ray_cluster_of",
    "ray_pod_belongs",
    "ray_pods_selector",
    "scheduling_gates",
    "suspended_by",
]
