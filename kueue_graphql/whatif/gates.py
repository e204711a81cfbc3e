"""Queue gates: the checks that hold every Workload of a queue, whatever its size.

Kueue v0.17.0 applies them before any flavor assignment: a stopped LocalQueue or a missing
ClusterQueue in pkg/controller/core/workload_controller.go (`reconcile`), a stopped or inactive
ClusterQueue and a namespaceSelector that excludes the namespace in pkg/scheduler/scheduler.go
(`nominate`). A ClusterQueue being deleted (deletionTimestamp set, kept by its finalizer while
Workloads hold quota in it) is "terminating" in Kueue's cache, so inactive, although its Active
condition is not rewritten (pkg/controller/core/clusterqueue_controller.go returns before it).
A ClusterQueue naming a ResourceFlavor that does not exist is inactive in Kueue's cache
(pkg/cache/scheduler: missing flavors make its status pending) as soon as Kueue sees it, before
its Active condition says so: whatIf asked in that moment says what Kueue will say.
The messages are Kueue's own. Where the Namespace's labels could not be read, no verdict is
claimed (UNKNOWN, NAMESPACE_NOT_READABLE): the selector may exclude it.
"""

from __future__ import annotations

from collections.abc import Mapping

from kueue_graphql.kueue.label_selector import label_selector_matches
from kueue_graphql.kueue.model import Absent, Forbidden, Verdict, known
from kueue_graphql.kueue.objects import condition, dig, items, metadata, name, text
from kueue_graphql.whatif.model import WhatIfInput

__all__ = ["queue_gate"]


def queue_gate(inp: WhatIfInput) -> tuple[Verdict, str, str | None] | None:
    """(verdict, limitedBy, Kueue's message) when a queue holds every Workload, whatever its
    size. Kueue's own messages (workload controller / queue manager, v0.17); None where the
    message is not known (the verdict is not claimed)."""
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
    if metadata(cq).get("deletionTimestamp"):
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_DELETING",
            f"ClusterQueue {cq_name} is inactive",
        )
    active = condition(cq, "Active")
    if (active is not None and active.get("status") == "False") or _names_missing_flavor(
        cq, known(inp.resource_flavors)
    ):
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_INACTIVE",
            f"ClusterQueue {cq_name} is inactive",
        )
    selector = dig(cq, "spec", "namespaceSelector")
    if isinstance(selector, Mapping) and not selector:
        return None  # `{}`: every namespace
    labels = known(inp.namespace_labels)
    if labels is None and isinstance(selector, Mapping):
        return Verdict.UNKNOWN, "NAMESPACE_NOT_READABLE", None
    if not label_selector_matches(
        selector if isinstance(selector, Mapping) else None, labels or {}
    ):
        return (
            Verdict.NEVER_FITS,
            "NAMESPACE_NOT_SELECTED",
            "Workload namespace doesn't match ClusterQueue selector",
        )
    return None


def _names_missing_flavor(cq: Mapping[str, object], flavors: object) -> bool:
    """The ClusterQueue names a ResourceFlavor that does not exist (False when the caller may
    not list ResourceFlavors: nothing is claimed)."""
    if not isinstance(flavors, list | tuple):
        return False
    existing = {name(f) for f in flavors}
    return any(
        text(flavor, "name") not in existing
        for group in items(cq, "spec", "resourceGroups")
        for flavor in items(group, "flavors")
    )
