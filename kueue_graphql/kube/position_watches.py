"""Which subscriptions a change of a ClusterQueue's pending order can move: an index of the
watched Workloads' own entries in that order (issue 26).

A Workload's queue position is the number of pending entries of its ClusterQueue before its
own entry (lookups/queue_positions.py). An entry that comes at `e` or leaves from `e` moves the
position of exactly the Workloads behind `e`; an entry that moves from `a` to `b` (its priority
or queue time changed) moves those between the two, and may change which Workload is at the
head of the ClusterQueue for everyone behind it. A status write that leaves the entry where it
was moves nothing.

Per ClusterQueue, the entries of the watched Workloads are kept sorted, so "who is behind `e`"
is one bisect and a slice: O(log w + woken) for w watched Workloads, no scan over
subscriptions. A watched Workload's own entry is re-keyed when it moves (`rekey`), so the index
always holds the entries of the order as the store has it now. Pure data, no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

from kueue_graphql.kube.paging import OrderKey
from kueue_graphql.kube.store import OrderedEntry

W = TypeVar("W", bound=Hashable)

__all__ = ["PositionWatches"]


class PositionWatches(Generic[W]):
    """Watchers `W` of Workloads' positions, by ClusterQueue and Workload (storage key)."""

    def __init__(self) -> None:
        self._watchers: dict[tuple[str, OrderKey], set[W]] = {}
        self._entry: dict[tuple[str, OrderKey], OrderedEntry] = {}
        self._sorted: dict[str, list[OrderedEntry]] = {}
        self._queues_of: dict[OrderKey, set[str]] = {}

    def __len__(self) -> int:
        return len(self._watchers)

    def watch(
        self, cluster_queue: str, workload: OrderKey, entry: OrderedEntry | None, watcher: W
    ) -> None:
        """`watcher` depends on `workload`'s position in `cluster_queue`, whose entry is
        `entry` now (None: not in its queue; the Workload's own change wakes the watcher)."""
        at = (cluster_queue, workload)
        watchers = self._watchers.get(at)
        if watchers is None:
            watchers = self._watchers[at] = set()
            self._queues_of.setdefault(workload, set()).add(cluster_queue)
            self._place(at, entry)
        watchers.add(watcher)

    def unwatch(self, cluster_queue: str, workload: OrderKey, watcher: W) -> None:
        at = (cluster_queue, workload)
        watchers = self._watchers.get(at)
        if watchers is None:
            return
        watchers.discard(watcher)
        if watchers:
            return
        del self._watchers[at]
        self._place(at, None)
        queues = self._queues_of[workload]
        queues.discard(cluster_queue)
        if not queues:
            del self._queues_of[workload]

    def watched(self) -> list[tuple[str, OrderKey]]:
        """Every (ClusterQueue, Workload) watched."""
        return list(self._watchers)

    def queues_watching(self, workload: OrderKey) -> set[str]:
        """The ClusterQueues in which `workload`'s position is watched."""
        return self._queues_of.get(workload, set())

    def rekey(self, cluster_queue: str, workload: OrderKey, entry: OrderedEntry | None) -> None:
        """`workload`'s entry in `cluster_queue`'s order is now `entry`."""
        at = (cluster_queue, workload)
        if at in self._watchers:
            self._place(at, entry)

    def moved(
        self, cluster_queue: str, before: OrderedEntry | None, after: OrderedEntry | None
    ) -> set[W]:
        """The watchers whose position an entry of `cluster_queue` coming (`before` None),
        leaving (`after` None) or moving can change."""
        entries = self._sorted.get(cluster_queue)
        if not entries:
            return set()
        if before is not None and after is not None:
            # Those in between move; and the head may change for everyone behind either.
            first = min(before, after)
        elif before is not None:
            first = before
        elif after is not None:
            first = after
        else:
            return set()
        start = bisect.bisect_right(entries, first)
        return self._of(cluster_queue, entries[start:])

    def everyone(self, cluster_queue: str | None = None) -> set[W]:
        """Every watcher of `cluster_queue` (None: of any), e.g. after a re-list."""
        return {
            watcher
            for (queue, _), watchers in self._watchers.items()
            if cluster_queue is None or queue == cluster_queue
            for watcher in watchers
        }

    def _of(self, cluster_queue: str, entries: Iterable[OrderedEntry]) -> set[W]:
        woken: set[W] = set()
        for _, workload in entries:
            woken |= self._watchers.get((cluster_queue, workload), set())
        return woken

    def _place(self, at: tuple[str, OrderKey], entry: OrderedEntry | None) -> None:
        cluster_queue = at[0]
        old = self._entry.pop(at, None)
        entries = self._sorted.setdefault(cluster_queue, [])
        if old is not None:
            i = bisect.bisect_left(entries, old)
            if i < len(entries) and entries[i] == old:
                del entries[i]
        if entry is not None:
            self._entry[at] = entry
            bisect.insort(entries, entry)
        if not entries:
            del self._sorted[cluster_queue]
