"""Pods the Workload's owner created, and why kube-scheduler or the runtime holds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from kueue_graphql.diagnosis.model import PodSchedulingProblem
from kueue_graphql.kueue.exact import QuantityError, format_quantity, parse_quantity
from kueue_graphql.kueue.messages import parse_failed_scheduling
from kueue_graphql.kueue.model import KubeObject, Number, ObjectRef, Reason, ReasonSource
from kueue_graphql.kueue.objects import (
    condition,
    dig,
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
from kueue_graphql.kueue.owners import (
    owner_kind_of,
    owner_uid_of,
    pod_belongs,
    pod_group_of,
)
from kueue_graphql.kueue.podsets import per_pod_requests
from kueue_graphql.kueue.scheduling import expression_matches, tolerates
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["is_unscheduled", "node_constraints", "pod_problem", "pods_of"]


def pods_of(
    owner: KubeObject | None, workload: KubeObject | None, pods: Sequence[KubeObject]
) -> list[KubeObject]:
    """Pods the owner handed off to, whatever its kind (kueue/owners.py): by ownerReference,
    the Job's or the JobSet's uid label, or Kueue's pod-group label."""
    kind = owner_kind_of(owner, workload)
    group = pod_group_of(owner, kind, workload)
    return [p for p in pods if pod_belongs(p, kind, owner_uid_of(owner, workload), group)]


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


def _selector_misses(pod: KubeObject, node: KubeObject) -> list[str]:
    node_labels = mapping(node, "metadata", "labels")
    misses = [
        f"{k}={v}"
        for k, v in mapping(pod, "spec", "nodeSelector").items()
        if node_labels.get(k) != v
    ]
    terms = items(
        pod,
        "spec",
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    if terms and not any(
        all(expression_matches(e, node_labels) for e in items(t, "matchExpressions")) for t in terms
    ):
        misses.append("required node affinity")
    return misses


def node_constraints(pod: KubeObject, nodes: Sequence[KubeObject]) -> list[Reason]:
    """Which constraint each Node fails for this Pod, read from the objects themselves.

    Capacity is compared with the Node's allocatable only (not with what other Pods use), so
    an InsufficientAllocatable reason means the Pod can never fit that Node.
    """
    requests = per_pod_requests(mapping(pod, "spec"))
    tolerations = items(pod, "spec", "tolerations")
    out: list[Reason] = []
    eligible: list[KubeObject] = []
    for node in nodes:
        before = len(out)
        node_ref = ObjectRef("Node", name(node), None, "v1")
        if dig(node, "spec", "unschedulable") is True:
            out.append(
                Reason(
                    Code.NODE_UNSCHEDULABLE,
                    f"node {name(node)} is cordoned",
                    ReasonSource.OBJECT,
                    object=node_ref,
                )
            )
        misses = _selector_misses(pod, node)
        if misses:
            out.append(
                Reason(
                    Code.NODE_AFFINITY_MISMATCH,
                    f"node {name(node)} does not match the Pod's "
                    + ", ".join(f"nodeSelector {m}" if "=" in m else m for m in misses),
                    ReasonSource.OBJECT,
                    object=node_ref,
                )
            )
        for taint in items(node, "spec", "taints"):
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if any(tolerates(t, taint) for t in tolerations):
                continue
            value = f"={taint.get('value')}" if taint.get("value") else ""
            out.append(
                Reason(
                    Code.UNTOLERATED_NODE_TAINT,
                    f"node {name(node)} has taint {taint.get('key')}{value}:{taint.get('effect')} "
                    "that the Pod does not tolerate",
                    ReasonSource.OBJECT,
                    object=node_ref,
                )
            )
        allocatable = mapping(node, "status", "allocatable")
        for res, wanted in sorted(requests.items()):
            have = _quantity_or_zero(allocatable.get(res))
            if wanted > have:
                out.append(
                    Reason(
                        Code.INSUFFICIENT_ALLOCATABLE,
                        f"node {name(node)} has {format_quantity(have, res)} {res} allocatable, "
                        f"the Pod requests {format_quantity(wanted, res)}",
                        ReasonSource.OBJECT,
                        resource=res,
                        object=node_ref,
                        numbers=(
                            Number("requested", wanted, format_quantity(wanted, res)),
                            Number("allocatable", have, format_quantity(have, res)),
                        ),
                    )
                )
        if not any(r.code != Code.INSUFFICIENT_ALLOCATABLE for r in out[before:]):
            eligible.append(node)
    summary = _no_node_fits(requests, nodes, eligible, out)
    return [summary, *out] if summary is not None else out


def _no_node_fits(
    requests: Mapping[str, Decimal],
    nodes: Sequence[KubeObject],
    eligible: Sequence[KubeObject],
    reasons: Sequence[Reason],
) -> Reason | None:
    """One sentence naming the constraint at fault, when the objects show it."""
    if not nodes:
        return None
    if not eligible:
        return Reason(
            Code.NO_NODE_FITS,
            f"none of the {len(nodes)} nodes matches the Pod's nodeSelector/affinity and "
            "tolerations",
            ReasonSource.OBJECT,
        )
    short = [
        r
        for r in reasons
        if r.code == Code.INSUFFICIENT_ALLOCATABLE
        and r.object is not None
        and r.object.name in {name(n) for n in eligible}
    ]
    short_nodes = {r.object.name for r in short if r.object is not None}
    if len(short_nodes) < len(eligible):
        return None
    names = ", ".join(sorted(name(n) for n in eligible))
    lacks = "; ".join(r.message for r in short)
    return Reason(
        Code.NO_NODE_FITS,
        f"{len(eligible)} of {len(nodes)} nodes ({names}) match the Pod's nodeSelector/affinity "
        f"and tolerations, and none has the allocatable capacity: {lacks}",
        ReasonSource.OBJECT,
        resource=short[0].resource if short else None,
        numbers=short[0].numbers if short else (),
    )


def _quantity_or_zero(raw: object) -> Decimal:
    if isinstance(raw, str | int):
        try:
            return parse_quantity(raw)
        except QuantityError:
            return Decimal(0)
    return Decimal(0)


def pod_problem(
    pod: KubeObject, events: Sequence[KubeObject], nodes: Sequence[KubeObject] = ()
) -> PodSchedulingProblem:
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
    elif not text(pod, "spec", "nodeName"):
        reasons.extend(node_constraints(pod, nodes))
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
        code = str(w.get("reason") or Code.CONTAINER_WAITING)
    else:
        message = f"bound to node {node} but not started by its kubelet"
        code = Code.NOT_STARTED_ON_NODE
    return Reason(
        code=code,
        message=message,
        source=ReasonSource.OBJECT,
        object=ObjectRef(kind="Node", name=node, api_version="v1"),
    )
