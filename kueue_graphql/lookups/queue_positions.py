"""Queue positions in the `cache` read mode, from the store's own Kueue order.

The Workload store keeps, per LocalQueue, its Workloads in Kueue's queue in Kueue's order
(lookups/cache_indexes.py `workload_queue_order`, kueue/queue_order.py), sorted on every watch
event. A ClusterQueue's queue is the merge of its LocalQueues' (Kueue's queue manager holds one
heap per ClusterQueue of the same Workloads), so a Workload's position in the ClusterQueue is
the number of entries before it in each LocalQueue of the ClusterQueue: one bisect per
LocalQueue, O(k log n) for k LocalQueues, whatever the position. The entries are shaped as
Kueue's visibility API lists them (`positionInLocalQueue` counts the Workload's own namespace
only: what kueue_graphql/kueue/pending_entry.py makes of Kueue's list, kueue#10575).

Pure reads of the stores; the caller authorizes (the same `get localqueues/pendingworkloads`
the visibility API needs).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterator, Sequence

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.paging import order_key
from kueue_graphql.kube.reads import PendingRead, QueueAhead
from kueue_graphql.kube.store import ANY, Indexer, OrderedEntry
from kueue_graphql.kueue.objects import metadata, spec
from kueue_graphql.kueue.pending_entry import OwnEntry
from kueue_graphql.kueue.queue_order import WhyAhead, in_queue, queue_order
from kueue_graphql.lookups.cache_indexes import queue_order_key
from kueue_graphql.lookups.queue_totals import queue_counts, queue_requests

__all__ = ["cached_pending_read", "cluster_queue_order", "first_in_cluster_queue"]


def _queues_of(queues: Indexer, cluster_queue: str) -> list[tuple[str, str]]:
    return [
        (str(metadata(q).get("namespace") or ""), str(metadata(q).get("name") or ""))
        for q in queues.items(("lq", ANY, cluster_queue))
    ]


def _entry(workload: JsonObject, position_in_local_queue: int) -> JsonObject:
    meta = metadata(workload)
    priority = spec(workload).get("priority")
    return {
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "priority": priority if isinstance(priority, int) else 0,
        "localQueueName": spec(workload).get("queueName"),
        "positionInLocalQueue": position_in_local_queue,
    }


def cached_pending_read(
    workloads: Indexer,
    queues: Indexer,
    namespace: str,
    local_queue: str,
    name: str,
    *,
    ahead: bool,
) -> PendingRead:
    """Workload `name`'s entry, as the visibility API would list it; with `ahead`, what is ahead
    of it counted and summed (lookups/queue_totals.py: O(k log n) once the LocalQueues' running
    totals are built, which each change of a LocalQueue's queue costs once, O(n))."""
    workload = workloads.get(namespace, name)
    local = queues.get(namespace, local_queue)
    if (
        workload is None
        or local is None
        or not in_queue(workload)
        or spec(workload).get("queueName") != local_queue
    ):
        return PendingRead(())
    cluster_queue = str(spec(local).get("clusterQueue") or "")
    me: OrderedEntry = (queue_order(workload), order_key(namespace, name))
    own = workloads.ordered(queue_order_key(namespace, local_queue))
    in_local_queue = bisect.bisect_left(own, me)
    if in_local_queue >= len(own) or own[in_local_queue] != me:
        return PendingRead(())
    in_cluster_queue = 0
    head: OrderedEntry | None = None
    created_raw = metadata(workload).get("creationTimestamp")
    created = str(created_raw) if created_raw else None
    cluster = WhyAhead(0, 0, 0)
    for queue in _queues_of(queues, cluster_queue):
        entries = workloads.ordered(queue_order_key(*queue))
        in_cluster_queue += bisect.bisect_left(entries, me)
        if entries and (head is None or entries[0] < head):
            head = entries[0]
        if ahead:
            counts = queue_counts(workloads, queue_order_key(*queue))
            cluster += counts.before(entries, me, created)
    entry = {**_entry(workload, in_local_queue), "positionInClusterQueue": in_cluster_queue}
    head_name: str | None = None
    if head is not None and head != me and own and own[0] == head:
        head_name = head[1][1]
    found = OwnEntry(entry, in_local_queue, 0, head_name)
    if not ahead:
        return PendingRead((entry,), own=found)
    posting = queue_order_key(namespace, local_queue)
    return PendingRead(
        (entry,),
        own=found,
        ahead=QueueAhead(
            queue_requests(workloads, posting).before(in_local_queue),
            queue_counts(workloads, posting).before(own, me, created),
            cluster,
        ),
    )


def cluster_queue_order(
    workloads: Indexer, queues: Indexer, cluster_queue: str
) -> Iterator[JsonObject]:
    """The ClusterQueue's Workloads in Kueue's queue, in Kueue's order: a k-way merge of its
    LocalQueues' ordered postings, O(log k) per Workload taken."""
    postings: list[Sequence[OrderedEntry]] = [
        workloads.ordered(queue_order_key(*queue)) for queue in _queues_of(queues, cluster_queue)
    ]
    for _, (namespace_slash, name) in heapq.merge(*postings):
        obj = workloads.get(namespace_slash[:-1], name)
        if obj is not None:
            yield obj


def first_in_cluster_queue(
    workloads: Indexer, queues: Indexer, cluster_queue: str, limit: int
) -> list[JsonObject]:
    return list(itertools.islice(cluster_queue_order(workloads, queues, cluster_queue), limit))
