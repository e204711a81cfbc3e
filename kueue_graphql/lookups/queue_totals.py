"""What is ahead of a pending Workload in the `cache` read mode: counts and sums in O(log n).

For each LocalQueue's ordered posting (lookups/queue_positions.py) the store keeps, until an
entry of it changes (`Indexer.derived`), running totals built once in O(n): each entry's
creation time and which entries were requeued (`queue_counts`), and, for the LocalQueues whose
sums are asked for, the requests of the first i Workloads per resource (`queue_requests`).
"The requests of everything ahead of me" is then one bisect and one lookup per resource;
"ahead by higher priority" one more bisect (Kueue's order puts priority first); "same priority,
created later" (requeued by an eviction time) looks only at the requeued entries, few of them,
unless the Workload asked about was requeued itself (then its same-priority stretch is looked
at one by one). Pure reads of the stores; the caller authorizes.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.store import Indexer, OrderedEntry, PostingKey
from kueue_graphql.kueue.exact import ZERO, exact_arithmetic
from kueue_graphql.kueue.objects import metadata
from kueue_graphql.kueue.podsets import total_needs, workload_requests
from kueue_graphql.kueue.queue_order import WhyAhead, queue_timestamp

__all__ = ["QueueCounts", "QueueRequests", "needs", "queue_counts", "queue_requests"]

# Each Workload version's total requests, by (uid, resourceVersion): a version never changes,
# and the sums of a long queue take the same thousands of Workloads again after each change of
# one of them (about 0.2 ms of parsing each). Cleared whole when full.
_NEEDS: dict[tuple[str, str], Mapping[str, Decimal]] = {}
_NEEDS_MOST = 50_000


def needs(workload: JsonObject) -> Mapping[str, Decimal]:
    """The Workload's total requests per resource (kueue/podsets.py), kept per version."""
    meta = metadata(workload)
    key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
    if not all(key):
        return total_needs(workload_requests(workload))
    found = _NEEDS.get(key)
    if found is None:
        if len(_NEEDS) >= _NEEDS_MOST:
            _NEEDS.clear()
        found = _NEEDS[key] = total_needs(workload_requests(workload))
    return found


def _objects(workloads: Indexer, entries: Sequence[OrderedEntry]) -> list[JsonObject | None]:
    return [workloads.get(namespace_slash[:-1], name) for _, (namespace_slash, name) in entries]


@dataclass(frozen=True)
class QueueCounts:
    """One ordered posting's creation times (entry i is the posting's i-th)."""

    created: Sequence[str | None]
    requeued: Sequence[int]
    """Entries ordered by a time other than their creation time (evicted and requeued)."""

    def before(
        self, entries: Sequence[OrderedEntry], me: OrderedEntry, created: str | None
    ) -> WhyAhead:
        """Entries of the posting (`entries`, the one these counts were built from) before `me`
        (which need not be in it), by why they are ahead,
        compared as diagnosis/ahead.py's `_why` compares a listed queue (an unknown creation
        time counts as earlier)."""
        position = bisect.bisect_left(entries, me)
        higher = bisect.bisect_left(entries, ((me[0][0],),))
        if me[0][2] != created:  # requeued itself: any of its stretch may be created later
            stretch: Sequence[int] = range(higher, position)
        else:  # only a requeued entry can be ahead of it and created later
            start, stop = (bisect.bisect_left(self.requeued, i) for i in (higher, position))
            stretch = self.requeued[start:stop]
        later = sum(
            1
            for i in stretch
            if created is not None and (c := self.created[i]) is not None and c > created
        )
        return WhyAhead(higher, position - higher - later, later)


def _counts(workloads: Indexer, entries: Sequence[OrderedEntry]) -> QueueCounts:
    created: list[str | None] = []
    requeued: list[int] = []
    for i, obj in enumerate(_objects(workloads, entries)):
        stamp = metadata(obj).get("creationTimestamp") if obj is not None else None
        created.append(str(stamp) if stamp else None)
        if obj is not None and queue_timestamp(obj) != created[-1]:
            requeued.append(i)
    return QueueCounts(created, requeued)


@dataclass(frozen=True)
class QueueRequests:
    """Per resource, the requests of the first i Workloads of one ordered posting (i = 0..n)."""

    sums: Mapping[str, Sequence[Decimal]]
    first: Mapping[str, int]
    """Per resource, the first entry that requests it (a sum names only resources requested)."""

    def before(self, position: int) -> tuple[tuple[str, Decimal], ...]:
        """The requests of the first `position` Workloads, per resource, sorted."""
        return tuple(
            (res, sums[position])
            for res, sums in sorted(self.sums.items())
            if self.first[res] < position
        )


@exact_arithmetic
def _requests(workloads: Indexer, entries: Sequence[OrderedEntry]) -> QueueRequests:
    sums: dict[str, list[Decimal]] = {}
    first: dict[str, int] = {}
    for i, obj in enumerate(_objects(workloads, entries)):
        for res, value in (needs(obj) if obj is not None else {}).items():
            if res not in sums:
                sums[res] = [ZERO] * (i + 1)
                first[res] = i
            running = sums[res]
            running.extend([running[-1]] * (i + 1 - len(running)))
            running.append(running[-1] + value)
    for running in sums.values():
        running.extend([running[-1]] * (len(entries) + 1 - len(running)))
    return QueueRequests(sums, first)


def queue_counts(workloads: Indexer, posting: PostingKey) -> QueueCounts:
    """One LocalQueue's creation times and requeued entries, built once per change of its
    queue (an entry added, removed or moved: a status update in place keeps them)."""
    return workloads.derived(
        posting, "counts", lambda entries: _counts(workloads, entries), _same_creation
    )


def queue_requests(workloads: Indexer, posting: PostingKey) -> QueueRequests:
    """One LocalQueue's running request totals, built once per change of its queue or of a
    Workload's requests in it."""
    return workloads.derived(
        posting, "requests", lambda entries: _requests(workloads, entries), _same_requests
    )


def _same_creation(old: JsonObject, new: JsonObject) -> bool:
    return metadata(old).get("creationTimestamp") == metadata(new).get("creationTimestamp")


def _same_requests(old: JsonObject, new: JsonObject) -> bool:
    return needs(old) == needs(new)
