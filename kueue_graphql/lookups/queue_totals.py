"""What is ahead of a pending Workload in the `cache` read mode: counts and sums in O(log n).

For each LocalQueue's ordered posting (lookups/queue_positions.py) the store keeps, until an
entry of it changes (`Indexer.derived`), running totals built once in O(n): the requests of
the first i Workloads per resource, and each one's creation time. "The requests of everything
ahead of me" is then one bisect and one subtraction-free lookup; "ahead by higher priority" one
more bisect (Kueue's order puts priority first); "same priority, created later" (requeued by
an eviction time) needs only the Workloads whose queue timestamp is not their creation time,
few of them, unless the Workload asked about was requeued itself (then its same-priority
stretch is counted one by one). Pure reads of the stores; the caller authorizes.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.reads import AheadCounts
from kueue_graphql.kube.store import Indexer, OrderedEntry, PostingKey
from kueue_graphql.kueue.exact import ZERO, exact_arithmetic
from kueue_graphql.kueue.objects import metadata
from kueue_graphql.kueue.podsets import total_needs, workload_requests
from kueue_graphql.kueue.queue_order import queue_timestamp

__all__ = ["QueueTotals", "needs", "queue_totals"]

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


@dataclass(frozen=True)
class QueueTotals:
    """Running totals over one ordered posting (entry i is the posting's i-th)."""

    entries: Sequence[OrderedEntry]
    requests: Mapping[str, Sequence[Decimal]]
    """Per resource, the requests of the first i Workloads (i = 0..n)."""
    first: Mapping[str, int]
    """Per resource, the first entry that requests it (a sum names only resources requested)."""
    created: Sequence[str | None]
    requeued: Sequence[int]
    """Entries ordered by a time other than their creation time (evicted and requeued)."""

    def requests_before(self, position: int) -> tuple[tuple[str, Decimal], ...]:
        """The requests of the first `position` Workloads, per resource, sorted."""
        return tuple(
            (res, sums[position])
            for res, sums in sorted(self.requests.items())
            if self.first[res] < position
        )

    def counts_before(self, me: OrderedEntry, created: str | None) -> AheadCounts:
        """Entries before `me` (which need not be in this posting), by why they are ahead:
        `created <=` as diagnosis/ahead.py's `_why` compares (an unknown time counts as
        earlier)."""
        position = bisect.bisect_left(self.entries, me)
        priority = me[0][0]
        higher = bisect.bisect_left(self.entries, ((priority,),))
        mine_requeued = me[0][2] != created
        stretch = range(higher, position) if mine_requeued else self._requeued_in(higher, position)
        later = sum(
            1
            for i in stretch
            if created is not None and (c := self.created[i]) is not None and c > created
        )
        return AheadCounts(higher, position - higher - later, later)

    def _requeued_in(self, start: int, stop: int) -> Sequence[int]:
        return self.requeued[
            bisect.bisect_left(self.requeued, start) : bisect.bisect_left(self.requeued, stop)
        ]


def _build(workloads: Indexer, entries: Sequence[OrderedEntry]) -> QueueTotals:
    requests: dict[str, list[Decimal]] = {}
    first: dict[str, int] = {}
    created: list[str | None] = []
    requeued: list[int] = []
    for i, (_, (namespace_slash, name)) in enumerate(entries):
        obj = workloads.get(namespace_slash[:-1], name)
        stamp = metadata(obj).get("creationTimestamp") if obj is not None else None
        created.append(str(stamp) if stamp else None)
        if obj is None:
            continue
        if queue_timestamp(obj) != created[-1]:
            requeued.append(i)
        for res, value in needs(obj).items():
            if res not in requests:
                requests[res] = [ZERO] * (i + 1)
                first[res] = i
            sums = requests[res]
            sums.extend([sums[-1]] * (i + 1 - len(sums)))
            sums.append(sums[-1] + value)
    for sums in requests.values():
        sums.extend([sums[-1]] * (len(entries) + 1 - len(sums)))
    return QueueTotals(entries, requests, first, created, requeued)


def queue_totals(workloads: Indexer, posting: PostingKey) -> QueueTotals:
    """The running totals of one LocalQueue's ordered posting, built once per change of it."""
    return workloads.derived(
        posting, "queue-totals", exact_arithmetic(lambda entries: _build(workloads, entries))
    )
