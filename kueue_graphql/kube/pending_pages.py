"""How far Kueue's visibility API is read for one Workload's queue position.

Kueue v0.17 answers `localqueues/<name>/pendingworkloads?limit=&offset=` by sorting the whole
ClusterQueue for every call (pkg/visibility/storage), and lists same-named LocalQueues of other
namespaces too (kueue#10575), so a long queue is expensive to read and the caller's entry may
sit far behind her own namespace's. The list is read only as far as the caller's entry: a
small first page (the head of the queue is found with one call of 10 items), then pages ten
times larger up to `PENDING_LARGEST_PAGE`, until the entry, the end of the list, or
`PENDING_BOUND` entries read. Past the bound the answer is "position beyond PENDING_BOUND",
never "absent".
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["PENDING_BOUND", "PENDING_LARGEST_PAGE", "pending_pages"]

PENDING_FIRST_PAGE = 10
PENDING_LARGEST_PAGE = 2_000
PENDING_BOUND = 20_000
"""The most visibility entries read for one position; a Workload further back is answered
"position beyond 20000" (documented in docs/service.md)."""


def pending_pages(
    bound: int = PENDING_BOUND,
    first: int = PENDING_FIRST_PAGE,
    largest: int = PENDING_LARGEST_PAGE,
) -> Iterator[tuple[int, int]]:
    """(offset, limit) of each page in turn, together exactly `bound` entries."""
    offset, limit = 0, first
    while offset < bound:
        size = min(limit, bound - offset)
        yield offset, size
        offset += size
        limit = min(limit * 10, largest)
