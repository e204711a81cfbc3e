"""Kueue v0.17's order of a ClusterQueue's pending Workloads, as its queue manager sorts them.

`pkg/cache/queue/cluster_queue.go` (`baseCompareFunc`, used by `ClusterQueue.Snapshot()`,
which the visibility API lists) orders BestEffortFIFO and StrictFIFO queues alike:

1. effective priority, higher first: `spec.priority` (nil counts as 0, `DefaultPriority`); the
   `kueue.x-k8s.io/priority-boost` annotation is added only under the PriorityBoost feature
   gate, alpha and off by default in v0.17, so it is not added here;
2. the queue order timestamp, earlier first (`pkg/workload` `Ordering.GetQueueOrderTimestamp`):
   the `Evicted` condition's lastTransitionTime when it is True with reason
   `PodsReadyTimeout` (with `requeuingTimestamp: Eviction`, the default) or `AdmissionCheck`;
   otherwise the creation time (the in-cohort-reclaim epsilon applies only with the
   PrioritySortingWithinCohort gate off, which is on by default);
3. the UID, which breaks ties between Workloads created in the same second.

Not visible from the API objects: the "sticky" Workload Kueue keeps at the head of a
BestEffortFIFO queue while its preemptions are pending (one entry), admission fair sharing (off
by default), which orders by the LocalQueues' usage first, and a Kueue configured with
`requeuingTimestamp: Creation` (PodsReady-timeout evictions then keep their creation time).

Kueue's queue holds the Workloads of the ClusterQueue's LocalQueues that are active and hold no
quota (pending), `in_queue` below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kueue_graphql.kueue.conditions import workload_status
from kueue_graphql.kueue.objects import items, metadata, spec

__all__ = ["QueueOrder", "WhyAhead", "in_queue", "queue_order", "queue_timestamp"]

QueueOrder = tuple[int, float, str, str]
"""(-priority, queue timestamp in seconds since the epoch, timestamp as written, UID): sorts
ascending in Kueue's order."""

# Evicted reasons whose time replaces the creation time (kueue v0.17 apis: WorkloadEvicted...).
_REQUEUED_BY_EVICTION = ("PodsReadyTimeout", "AdmissionCheck")


def queue_timestamp(workload: Mapping[str, Any]) -> str:
    """The time Kueue orders the Workload by, as written in the object (RFC 3339)."""
    for condition in items(workload, "status", "conditions"):
        if (
            condition.get("type") == "Evicted"
            and condition.get("status") == "True"
            and condition.get("reason") in _REQUEUED_BY_EVICTION
            and condition.get("lastTransitionTime")
        ):
            return str(condition["lastTransitionTime"])
    return str(metadata(workload).get("creationTimestamp") or "")


def _seconds(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def queue_order(workload: Mapping[str, Any]) -> QueueOrder:
    priority = spec(workload).get("priority")
    stamp = queue_timestamp(workload)
    return (
        -(priority if isinstance(priority, int) and not isinstance(priority, bool) else 0),
        _seconds(stamp),
        stamp,
        str(metadata(workload).get("uid") or ""),
    )


@dataclass(frozen=True)
class WhyAhead:
    """Entries ahead of a Workload in Kueue's queue, by why they are ahead of it."""

    higher_priority: int
    same_priority_earlier: int
    same_priority_requeued: int
    """Same priority, created later: ordered by its eviction (requeue) time, or yours is."""

    def __add__(self, other: WhyAhead) -> WhyAhead:
        return WhyAhead(
            self.higher_priority + other.higher_priority,
            self.same_priority_earlier + other.same_priority_earlier,
            self.same_priority_requeued + other.same_priority_requeued,
        )


def in_queue(workload: Mapping[str, Any]) -> bool:
    """Pending in Kueue's queue: named a LocalQueue, active, no quota reserved, not finished."""
    return (
        bool(spec(workload).get("queueName"))
        and spec(workload).get("active") is not False
        and workload_status(workload) == "pending"
    )
