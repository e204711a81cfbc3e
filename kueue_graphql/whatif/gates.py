"""Queue gates: the checks that hold every Workload of a queue, whatever its size.

Kueue v0.17.0 applies them before any flavor assignment: a stopped LocalQueue or a missing
ClusterQueue in pkg/controller/core/workload_controller.go (`reconcile`), a stopped or inactive
ClusterQueue and a namespaceSelector that excludes the namespace in pkg/scheduler/scheduler.go
(`nominate`). The messages are Kueue's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_graphql.kueue.model import Absent, Forbidden, Verdict, known
from kueue_graphql.kueue.objects import condition, dig, items, mapping, name, text
from kueue_graphql.kueue.scheduling import expression_matches
from kueue_graphql.whatif.model import WhatIfInput

__all__ = ["queue_gate"]


def queue_gate(inp: WhatIfInput) -> tuple[Verdict, str, str] | None:
    """(verdict, limitedBy, Kueue's message) when a queue holds every Workload, whatever its
    size. Kueue's own messages (workload controller / queue manager, v0.17)."""
    lq = inp.local_queue
    lq_name = name(lq)
    if text(lq, "spec", "stopPolicy") in ("Hold", "HoldAndDrain"):
        return Verdict.QUEUE_INACTIVE, "LOCAL_QUEUE_STOPPED", f"LocalQueue {lq_name} is inactive"
    cq = inp.cluster_queue
    cq_name = text(lq, "spec", "clusterQueue") or ""
    if isinstance(cq, Absent):
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_NOT_FOUND",
            f"ClusterQueue {cq_name} doesn't exist",
        )
    if isinstance(cq, Forbidden):
        return None
    if text(cq, "spec", "stopPolicy") in ("Hold", "HoldAndDrain"):
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_STOPPED",
            f"ClusterQueue {cq_name} is inactive",
        )
    active = condition(cq, "Active")
    if active is not None and active.get("status") == "False":
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_INACTIVE",
            f"ClusterQueue {cq_name} is inactive",
        )
    labels = known(inp.namespace_labels)
    selector = dig(cq, "spec", "namespaceSelector")
    if isinstance(selector, Mapping) and labels is not None and not _selects(selector, labels):
        return (
            Verdict.NEVER_FITS,
            "NAMESPACE_NOT_SELECTED",
            "Workload namespace doesn't match ClusterQueue selector",
        )
    return None


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against a namespace's labels (empty selector: everything)."""
    for key, value in mapping(selector, "matchLabels").items():
        if labels.get(str(key)) != value:
            return False
    return all(expression_matches(e, labels) for e in items(selector, "matchExpressions"))
