"""A Node that fails under an admitted topology-aware (TAS) Workload, as Kueue v0.17.0 handles it.

Kueue's TAS node controller (pkg/controller/tas/node_controller.go; feature gates
TASFailedNodeReplacement, TASReplaceNodeOnPodTermination, TASReplaceNodeOnNodeTaints and
TASFailedNodeReplacementFailFast, all beta and on) treats a Node of a Workload's topology
assignment as failed when it is not Ready (or carries a NoSchedule/NoExecute taint the pod set
does not tolerate) AND none of the Workload's Pods on it is still progressing (every one
terminated or being deleted); a NotReady Node also counts once it has been NotReady for 30 s
(NodeFailureDelay), but only when something makes Kueue look at the Node again. It then writes
the Node in `status.unhealthyNodes` and its scheduler looks for a replacement Node once: found,
the topology assignment names the new Node and `unhealthyNodes` is cleared; not found, the
Workload is evicted with reason `NodeFailures` ("Workload was evicted as there was no
replacement for unhealthy node(s): ..."), then requeued. Observed on the test control plane
(tests/service/test_topology_node_failure.py): a NotReady or tainted Node whose Pods keep
running changes nothing on the Workload; once they terminate, the replacement or the eviction
follows within seconds and `unhealthyNodes` is empty again by the time a reader looks. A Ready
condition without lastTransitionTime counts as NotReady for ever: the Node was marked and the
Workload evicted within 2 s, its Pods still there. With room left in the domain, the topology
assignment names the new Node and nothing else records the replacement (no condition, no event).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_graphql.kueue.objects import condition, dig, items, name, text
from kueue_graphql.kueue.topology import decode_assignment, tolerated
from kueue_graphql.kueue.vocabulary import Code

__all__ = [
    "NODE_FAILURES",
    "NodeFailureEviction",
    "NodeTrouble",
    "assigned_nodes",
    "node_failure_eviction",
    "node_trouble",
    "troubled_nodes",
    "unhealthy_nodes",
]

NODE_FAILURES: str = Code.NODE_FAILURES.value
"""kueue.WorkloadEvictedDueToNodeFailures: the eviction (and Requeued) reason."""

_PREVIOUSLY = "Previously: "


@dataclass(frozen=True)
class NodeFailureEviction:
    """Kueue evicted the Workload because of failed Nodes (reason NodeFailures)."""

    message: str
    nodes: tuple[str, ...]
    """The Nodes Kueue's message names (the Workload's own status names them)."""
    current: bool
    """The Evicted condition still stands; False once Kueue reserved quota again."""
    at: str | None


@dataclass(frozen=True)
class NodeTrouble:
    """A Node under the Workload that is not Ready or carries a taint its Pods do not tolerate."""

    node: str
    ready: str
    """The Ready condition's status: "False", "Unknown" or "missing"; "True" when only tainted."""
    since: str | None
    """When the Ready condition last changed (lastTransitionTime)."""
    ready_reason: str | None
    taints: tuple[str, ...]
    """Untolerated NoSchedule / NoExecute taints, as key=value:effect."""
    pods: tuple[str, ...]
    """The Workload's Pods bound to it."""
    assigned: bool
    """Kueue's topology assignment of the Workload names this Node."""


def unhealthy_nodes(workload: Mapping[str, Any]) -> tuple[str, ...]:
    """status.unhealthyNodes: the Nodes Kueue is looking to replace."""
    return tuple(str(n.get("name", "")) for n in items(workload, "status", "unhealthyNodes"))


def _nodes_named(message: str) -> tuple[str, ...]:
    """The Node list after the last ': ' of Kueue's two NodeFailures messages
    (node_controller.go nodeMultipleFailuresEvictionMessageFormat, scheduler.go
    evictWorkloadAfterFailedTASReplacement)."""
    _, sep, tail = message.rpartition(": ")
    if not sep:
        return ()
    return tuple(n.strip() for n in tail.split(",") if n.strip())


def node_failure_eviction(workload: Mapping[str, Any]) -> NodeFailureEviction | None:
    """The latest NodeFailures eviction of the Workload, standing or past (Requeued keeps it)."""
    evicted = condition(workload, "Evicted")
    if evicted is not None and evicted.get("status") == "True":
        if evicted.get("reason") != NODE_FAILURES:
            return None
        message = str(evicted.get("message") or "")
        return NodeFailureEviction(
            message, _nodes_named(message), True, text(evicted, "lastTransitionTime")
        )
    requeued = condition(workload, "Requeued")
    if requeued is None or requeued.get("reason") != NODE_FAILURES:
        return None
    message = str(requeued.get("message") or "").removeprefix(_PREVIOUSLY)
    return NodeFailureEviction(
        message, _nodes_named(message), False, text(requeued, "lastTransitionTime")
    )


def assigned_nodes(workload: Mapping[str, Any]) -> frozenset[str]:
    """Hostnames in the Workload's topology assignments (when its lowest level is the hostname
    Kueue writes that level alone, one value per domain)."""
    out: set[str] = set()
    for psa in items(workload, "status", "admission", "podSetAssignments"):
        decoded = decode_assignment(psa.get("topologyAssignment"))
        if decoded is None or not decoded.levels:
            continue
        for domain in decoded.domains:
            if domain.values:
                out.add(domain.values[-1])
    return frozenset(out)


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    key = str(taint.get("key", ""))
    return f"{key}={value}:{taint.get('effect')}" if value else f"{key}:{taint.get('effect')}"


def node_trouble(
    node: Mapping[str, Any],
    tolerations: Sequence[Mapping[str, Any]],
    pods: Sequence[str] = (),
    assigned: bool = False,
) -> NodeTrouble | None:
    """What is wrong with `node` for Pods with `tolerations`, or None when it is Ready and has no
    untolerated NoSchedule / NoExecute taint (node_controller.go classifyTaints)."""
    ready = condition(node, "Ready")
    status = str(ready.get("status")) if ready is not None else "missing"
    taints = tuple(
        _taint_text(t)
        for t in items(node, "spec", "taints")
        if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(t, tolerations)
    )
    if status == "True" and not taints:
        return None
    return NodeTrouble(
        node=name(node),
        ready=status,
        since=text(ready, "lastTransitionTime") if ready is not None else None,
        ready_reason=text(ready, "reason") if ready is not None else None,
        taints=taints,
        pods=tuple(pods),
        assigned=assigned,
    )


def troubled_nodes(
    workload: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
) -> tuple[NodeTrouble, ...]:
    """The Nodes of the Workload's topology assignment, or holding its Pods, that are NotReady or
    tainted against those Pods (the tolerations of its Pods there: Kueue adds the flavor's)."""
    assigned = assigned_nodes(workload)
    pods_on: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        node = dig(pod, "spec", "nodeName")
        if isinstance(node, str) and node:
            pods_on.setdefault(node, []).append(pod)
    # A Node assigned but holding none of its Pods yet: the tolerations of any of its Pods (Kueue
    # added the flavor's), else of the first pod set's template.
    template = dig(workload, "spec", "podSets")
    fallback = next(
        (items(p, "spec", "tolerations") for ps in pods_on.values() for p in ps),
        items(template[0], "template", "spec", "tolerations")
        if isinstance(template, list) and template
        else [],
    )
    out: list[NodeTrouble] = []
    for node in nodes:
        node_name = name(node)
        on = pods_on.get(node_name, [])
        if node_name not in assigned and not on:
            continue
        tolerations = items(on[0], "spec", "tolerations") if on else fallback
        found = node_trouble(node, tolerations, sorted(name(p) for p in on), node_name in assigned)
        if found is not None:
            out.append(found)
    return tuple(sorted(out, key=lambda t: t.node))
