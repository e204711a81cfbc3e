"""What is ahead of a pending Workload: counts and sums only, never whose.

Kueue v0.17 orders a ClusterQueue's pending Workloads (BestEffortFIFO and StrictFIFO alike) by
priority, higher first, then by the queue timestamp: the creation time, or for a Workload that
was evicted and requeued its eviction time (pkg/workload: `QueueOrderingFunc`, with
`requeuingTimestamp: Eviction` the default). The visibility API lists them in that order with
their priority and creationTimestamp, so an entry ahead is explained as higher priority,
submitted earlier at the same priority, or (same priority, created later) requeued by eviction
time. Under StrictFIFO the head blocks everything behind it even when a later Workload would
fit; under BestEffortFIFO Kueue goes on to the next one when the head does not fit.

Pure: the caller passes what could be read and says what could not (`unavailable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kueue_graphql.diagnosis.start import StartEstimate
from kueue_graphql.kueue.queue_order import WhyAhead

__all__ = ["AheadEntry", "AheadInput", "AheadReport", "WhyAhead", "ahead_of_me"]


@dataclass(frozen=True)
class AheadEntry:
    """One pending Workload ahead, as the visibility API lists it (name dropped)."""

    priority: int
    created: str | None
    """RFC 3339, as Kubernetes writes it (lexical order is time order)."""


@dataclass(frozen=True)
class AheadInput:
    priority: int
    created: str | None
    in_local_queue: int | None
    """Workloads ahead in its LocalQueue (its own namespace's entries only)."""
    in_cluster_queue: int | None
    """Kueue's positionInClusterQueue."""
    local_entries: Sequence[AheadEntry] | None
    cluster_entries: Sequence[AheadEntry] | None
    """Every entry ahead in the ClusterQueue, None when that list could not be read."""
    local_requests: Mapping[str, Decimal] | None
    """Total requests of the LocalQueue's Workloads ahead, per resource."""
    cluster_requests: Mapping[str, Decimal] | None
    held: Mapping[tuple[str, str], Decimal] | None
    """Quota reserved by admitted Workloads in the ClusterQueue, per (flavor, resource)."""
    queueing_strategy: str | None
    unavailable: Sequence[str] = ()
    start: StartEstimate | None = None
    why_local: WhyAhead | None = None
    """Counted where the whole queue is at hand (the `cache` read mode): then the entries ahead
    are not listed (`local_entries` None)."""
    why_cluster: WhyAhead | None = None
    """The same over the ClusterQueue (`cluster_entries` None)."""


@dataclass(frozen=True)
class AheadReport:
    in_local_queue: int | None
    in_cluster_queue: int | None
    local_requests: tuple[tuple[str, Decimal], ...] | None
    cluster_requests: tuple[tuple[str, Decimal], ...] | None
    held: tuple[tuple[str, str, Decimal], ...] | None
    why_local: WhyAhead | None
    why_cluster: WhyAhead | None
    queueing_strategy: str | None
    ordering: str
    unavailable: tuple[str, ...]
    start: StartEstimate | None = None


def _why(me: AheadInput, entries: Sequence[AheadEntry] | None) -> WhyAhead | None:
    if entries is None:
        return None
    higher = sum(1 for e in entries if e.priority > me.priority)
    same = [e for e in entries if e.priority == me.priority]
    earlier = sum(
        1 for e in same if me.created is None or e.created is None or e.created <= me.created
    )
    return WhyAhead(higher, earlier, len(same) - earlier)


def _ordering(strategy: str | None) -> str:
    base = (
        "Kueue orders pending Workloads by priority (higher first), then by submission time "
        "(an evicted Workload by its eviction time)"
    )
    if strategy == "StrictFIFO":
        return (
            base + "; StrictFIFO: the head of the ClusterQueue blocks every Workload behind it, "
            "even one that would fit, until it is admitted"
        )
    if strategy == "BestEffortFIFO":
        return (
            base + "; BestEffortFIFO: when the head does not fit, Kueue tries the next one, so "
            "Workloads ahead that do not fit do not hold you back"
        )
    return base + "; the ClusterQueue's queueingStrategy could not be read"


def ahead_of_me(inp: AheadInput) -> AheadReport:
    return AheadReport(
        in_local_queue=inp.in_local_queue,
        in_cluster_queue=inp.in_cluster_queue,
        local_requests=None
        if inp.local_requests is None
        else tuple(sorted(inp.local_requests.items())),
        cluster_requests=None
        if inp.cluster_requests is None
        else tuple(sorted(inp.cluster_requests.items())),
        held=None
        if inp.held is None
        else tuple((f, r, v) for (f, r), v in sorted(inp.held.items())),
        why_local=inp.why_local or _why(inp, inp.local_entries),
        why_cluster=inp.why_cluster or _why(inp, inp.cluster_entries),
        queueing_strategy=inp.queueing_strategy,
        ordering=_ordering(inp.queueing_strategy),
        unavailable=tuple(inp.unavailable),
        start=inp.start,
    )
