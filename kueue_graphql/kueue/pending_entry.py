"""A Workload's own entry in Kueue's pendingworkloads list of its LocalQueue (visibility API).

Kueue v0.17's LocalQueue list also holds Workloads of *other* namespaces whose LocalQueue has
the same name (kueue#10575). An entry is the caller's only when namespace and name both match;
foreign entries are dropped before counting, so the position in the LocalQueue is recomputed
from the entries of the Workload's own namespace (the list is in queue order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_graphql.kueue.objects import metadata

__all__ = [
    "FOREIGN_ENTRIES_KEY",
    "HEAD_OF_CLUSTER_QUEUE_KEY",
    "POSITION_BEYOND_KEY",
    "OwnEntry",
    "own_entry",
]

FOREIGN_ENTRIES_KEY = "foreignEntriesBefore"
"""Added to the entry handed to the diagnosis when Kueue listed other namespaces' entries
ahead of it (positionInLocalQueue is then recomputed)."""

HEAD_OF_CLUSTER_QUEUE_KEY = "headOfClusterQueue"
"""Added to the entry: the name of the Workload at the head of the ClusterQueue's queue
(positionInClusterQueue 0) when it is one of the Workload's own namespace in the same list,
i.e. one the caller may read; absent otherwise (the head is then counted, never named)."""

POSITION_BEYOND_KEY = "positionBeyond"
"""The only key of the entry handed to the diagnosis when the Workload (pending) was not among
the first N entries read (kube/pending_pages.py): its position is beyond N."""


@dataclass(frozen=True)
class OwnEntry:
    item: Mapping[str, Any]
    position_in_local_queue: int
    """Among the entries of the Workload's own namespace (0 = next)."""
    foreign_entries_before: int
    """Entries of other namespaces Kueue listed ahead of it (and that were dropped)."""
    head_of_cluster_queue: str | None = None
    """Its own namespace's entry at positionInClusterQueue 0, when that is not itself."""


def own_entry(items: Sequence[Mapping[str, Any]], namespace: str, name: str) -> OwnEntry | None:
    own_before = foreign_before = 0
    head: str | None = None
    for item in items:
        meta = metadata(item)
        # An entry without a namespace is taken as the LocalQueue's own (older servers).
        same_namespace = meta.get("namespace") in (None, namespace)
        if same_namespace and meta.get("name") == name:
            return OwnEntry(item, own_before, foreign_before, head)
        if same_namespace:
            if item.get("positionInClusterQueue") == 0:
                head = str(meta.get("name") or "") or None
            own_before += 1
        else:
            foreign_before += 1
    return None
