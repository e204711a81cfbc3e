"""Pods the Workload's owner created, and why kube-scheduler or the runtime holds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kueue_graphql.diagnosis.messages import parse_failed_scheduling
from kueue_graphql.diagnosis.model import (
    KubeObject,
    ObjectRef,
    PodSchedulingProblem,
    Reason,
    ReasonSource,
)
from kueue_graphql.diagnosis.objects import (
    condition,
    event_message,
    events_for,
    items,
    mapping,
    name,
    namespace,
    ref,
    text,
    uid,
)

__all__ = ["is_unscheduled", "pod_problem", "pods_of"]

JOB_CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def pods_of(
    owner: KubeObject | None, workload: KubeObject | None, pods: Sequence[KubeObject]
) -> list[KubeObject]:
    """Pods that belong to the owner: by ownerReference uid, or Job controller-uid label."""
    owner_uid = uid(owner) if owner is not None else None
    if owner_uid is None and workload is not None:
        for owner_ref in items(workload, "metadata", "ownerReferences"):
            if owner_ref.get("controller"):
                owner_uid = str(owner_ref.get("uid") or "") or None
    if owner_uid is None:
        return []
    out = []
    for pod in pods:
        pod_labels = mapping(pod, "metadata", "labels")
        owned = any(o.get("uid") == owner_uid for o in items(pod, "metadata", "ownerReferences"))
        labelled = any(pod_labels.get(label) == owner_uid for label in JOB_CONTROLLER_UID_LABELS)
        if owned or labelled:
            out.append(pod)
    return out


def is_unscheduled(pod: KubeObject) -> bool:
    if text(pod, "status", "phase") not in (None, "Pending"):
        return False
    scheduled = condition(pod, "PodScheduled")
    if scheduled is not None:
        return scheduled.get("status") != "True"
    return not text(pod, "spec", "nodeName")


def _toleration_text(tol: Mapping[str, Any]) -> str:
    key = str(tol.get("key") or "*")
    op = str(tol.get("operator") or "Equal")
    value = tol.get("value")
    effect = tol.get("effect")
    out = key if op == "Exists" or value is None else f"{key}={value}"
    if op == "Exists":
        out += " (Exists)"
    return f"{out}:{effect}" if effect else out


def pod_problem(pod: KubeObject, events: Sequence[KubeObject]) -> PodSchedulingProblem:
    """The scheduling state of one Pending Pod, with kube-scheduler's reasons parsed."""
    scheduled = condition(pod, "PodScheduled")
    failed = [
        event_message(e)
        for e in events_for(events, "Pod", name(pod), uid(pod))
        if text(e, "reason") == "FailedScheduling"
    ]
    reasons: list[Reason] = []
    if scheduled is not None and scheduled.get("status") != "True":
        reasons.extend(
            parse_failed_scheduling(str(scheduled.get("message") or ""), ReasonSource.CONDITION)
        )
    if failed and (not reasons or failed[-1] != (scheduled or {}).get("message")):
        reasons.extend(parse_failed_scheduling(failed[-1], ReasonSource.EVENT))
    pod_ref = ref(pod, "Pod")
    reasons = [r if r.object is not None else _with_object(r, pod_ref) for r in reasons]
    if not reasons and text(pod, "spec", "nodeName"):
        reasons.append(_runtime_reason(pod))
    node_selector = {str(k): str(v) for k, v in mapping(pod, "spec", "nodeSelector").items()}
    return PodSchedulingProblem(
        pod=ObjectRef(kind="Pod", name=name(pod), namespace=namespace(pod), api_version="v1"),
        phase=text(pod, "status", "phase") or "Pending",
        scheduled_status=str(scheduled.get("status")) if scheduled else None,
        scheduled_reason=str(scheduled.get("reason") or "") or None if scheduled else None,
        scheduled_message=str(scheduled.get("message") or "") or None if scheduled else None,
        node_name=text(pod, "spec", "nodeName"),
        node_selector=node_selector,
        tolerations=tuple(_toleration_text(t) for t in items(pod, "spec", "tolerations")),
        failed_scheduling=tuple(failed),
        reasons=tuple(reasons),
    )


def _with_object(reason: Reason, obj: ObjectRef) -> Reason:
    from dataclasses import replace

    return replace(reason, object=obj)


def _runtime_reason(pod: KubeObject) -> Reason:
    """Placed on a node but not running: the kubelet/container runtime holds it."""
    node = text(pod, "spec", "nodeName") or ""
    waiting = [
        mapping(cs, "state", "waiting")
        for cs in items(pod, "status", "containerStatuses")
        if mapping(cs, "state", "waiting")
    ]
    if waiting:
        w = waiting[0]
        message = f"container waiting: {w.get('reason') or ''} {w.get('message') or ''}".strip()
        code = str(w.get("reason") or "ContainerWaiting")
    else:
        message = f"bound to node {node} but not started by its kubelet"
        code = "NotStartedOnNode"
    return Reason(
        code=code,
        message=message,
        source=ReasonSource.OBJECT,
        object=ObjectRef(kind="Node", name=node, api_version="v1"),
    )
