"""aheadOfMe's pure part: why the Workloads ahead are ahead, and what each strategy means."""

from __future__ import annotations

from decimal import Decimal

from kueue_graphql.diagnosis.ahead import AheadEntry, AheadInput, WhyAhead, ahead_of_me


def _input(**changes: object) -> AheadInput:
    fields: dict[str, object] = {
        "priority": 0,
        "created": "2026-12-03T10:00:05Z",
        "in_local_queue": 1,
        "in_cluster_queue": 4,
        "local_entries": [AheadEntry(0, "2026-12-03T10:00:03Z")],
        "cluster_entries": [
            AheadEntry(100, "2026-12-03T10:00:01Z"),
            AheadEntry(100, "2026-12-03T10:00:09Z"),
            AheadEntry(0, "2026-12-03T10:00:02Z"),
            AheadEntry(0, "2026-12-03T10:00:07Z"),
        ],
        "local_requests": {"cpu": Decimal(1)},
        "cluster_requests": None,
        "held": {("standard", "cpu"): Decimal(1)},
        "queueing_strategy": "BestEffortFIFO",
    }
    fields.update(changes)
    return AheadInput(**fields)  # type: ignore[arg-type]


def test_reasons_by_priority_then_time() -> None:
    report = ahead_of_me(_input())
    # The same-priority entry created later is ahead only by its (or our) eviction time.
    assert report.why_cluster == WhyAhead(2, 1, 1)
    assert report.why_local == WhyAhead(0, 1, 0)
    assert report.held == (("standard", "cpu", Decimal(1)),)
    assert report.local_requests == (("cpu", Decimal(1)),)


def test_unreadable_cluster_list_gives_no_reasons() -> None:
    report = ahead_of_me(_input(cluster_entries=None, held=None))
    assert report.why_cluster is None
    assert report.held is None
    assert report.in_cluster_queue == 4


def test_strategies_are_explained() -> None:
    strict = ahead_of_me(_input(queueing_strategy="StrictFIFO")).ordering
    best = ahead_of_me(_input()).ordering
    unknown = ahead_of_me(_input(queueing_strategy=None)).ordering
    assert "blocks every Workload behind it" in strict
    assert "tries the next one" in best
    assert "could not be read" in unknown
