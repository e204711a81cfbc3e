"""Queue positions that cost what the answer needs (issue 26, item 2).

- Kueue's queue order (kueue/queue_order.py) on captured Workload objects;
- the impersonate mode's paging plan (what it reads: tests/unit/test_position_reads.py);
- the cache mode's positions from the store's ordered postings, against a brute-force sort of
  the same objects, kept up to date by watch events.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest

from kueue_graphql.kube.pending_pages import PENDING_BOUND, pending_pages
from kueue_graphql.kube.resources import LOCAL_QUEUE, WORKLOAD
from kueue_graphql.kueue.objects import metadata, spec
from kueue_graphql.kueue.podsets import total_needs, workload_requests
from kueue_graphql.kueue.queue_order import WhyAhead, in_queue, queue_order
from kueue_graphql.lookups.cache_indexes import kueue_cache, queue_order_key
from kueue_graphql.lookups.queue_positions import cached_pending_read, first_in_cluster_queue
from kueue_graphql.lookups.queue_totals import queue_counts, queue_requests

# -- Kueue's order ---------------------------------------------------------------------------


def _workload(
    namespace: str,
    name: str,
    *,
    queue: str = "lq",
    priority: int | None = 0,
    created: str = "2026-01-01T00:00:00Z",
    uid: str | None = None,
    conditions: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    wl_spec: dict[str, Any] = {"queueName": queue}
    if priority is not None:
        wl_spec["priority"] = priority
    return {
        "metadata": {
            "namespace": namespace,
            "name": name,
            "creationTimestamp": created,
            "uid": uid or f"uid-{namespace}-{name}",
        },
        "spec": wl_spec,
        "status": {"conditions": list(conditions)},
    }


def _evicted(reason: str, at: str) -> dict[str, Any]:
    return {"type": "Evicted", "status": "True", "reason": reason, "lastTransitionTime": at}


def test_kueue_orders_by_priority_then_queue_timestamp_then_uid() -> None:
    high = _workload("a", "high", priority=5, created="2026-01-01T00:00:09Z")
    early = _workload("a", "early", created="2026-01-01T00:00:01Z")
    unset = _workload("a", "unset", priority=None, created="2026-01-01T00:00:02Z")
    tie_b = _workload("a", "tie-b", created="2026-01-01T00:00:03Z", uid="b")
    tie_a = _workload("a", "tie-a", created="2026-01-01T00:00:03Z", uid="a")
    # Evicted by the PodsReady timeout or an AdmissionCheck: ordered by the eviction time.
    timed_out = _workload(
        "a",
        "timed-out",
        created="2026-01-01T00:00:00Z",
        conditions=[_evicted("PodsReadyTimeout", "2026-01-01T00:00:04Z")],
    )
    checked = _workload(
        "a",
        "checked",
        created="2026-01-01T00:00:00Z",
        conditions=[_evicted("AdmissionCheck", "2026-01-01T00:00:05Z")],
    )
    # Preempted: keeps its creation time.
    preempted = _workload(
        "a",
        "preempted",
        created="2026-01-01T00:00:00Z",
        conditions=[_evicted("Preempted", "2026-01-01T00:00:08Z")],
    )
    everyone = [high, early, unset, tie_b, tie_a, timed_out, checked, preempted]
    shuffled = random.Random(7).sample(everyone, len(everyone))
    ordered = [metadata(w)["name"] for w in sorted(shuffled, key=queue_order)]
    assert ordered == [
        "high",
        "preempted",
        "early",
        "unset",
        "tie-a",
        "tie-b",
        "timed-out",
        "checked",
    ]


def test_in_queue_means_pending_active_and_queued() -> None:
    assert in_queue(_workload("a", "x"))
    assert not in_queue(_workload("a", "x", queue=""))
    inactive = _workload("a", "x")
    inactive["spec"]["active"] = False
    assert not in_queue(inactive)
    reserved = _workload(
        "a",
        "x",
        conditions=[{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
    )
    assert not in_queue(reserved)


# -- the impersonate mode's plan -------------------------------------------------------------


def test_the_paging_plan_starts_small_and_stops_at_the_bound() -> None:
    plan = list(pending_pages())
    assert plan[:4] == [(0, 10), (10, 100), (110, 1000), (1110, 2000)]
    assert all(limit <= 2000 for _, limit in plan)
    offsets = [offset for offset, _ in plan]
    assert offsets == sorted(offsets)
    assert all(a + la == b for (a, la), (b, _) in itertools.pairwise(plan))
    assert sum(limit for _, limit in plan) == PENDING_BOUND
    assert list(pending_pages(bound=50)) == [(0, 10), (10, 40)]


# -- the cache mode --------------------------------------------------------------------------


def _local_queue(namespace: str, name: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterQueue": cluster_queue},
    }


def _brute_force(workloads: list[dict[str, Any]], queues: list[dict[str, Any]], cq: str) -> list:
    members = {
        (metadata(q)["namespace"], metadata(q)["name"])
        for q in queues
        if spec(q)["clusterQueue"] == cq
    }
    pending = [
        w
        for w in workloads
        if in_queue(w) and (metadata(w)["namespace"], spec(w)["queueName"]) in members
    ]
    return sorted(pending, key=queue_order)


def _requesting(wl: dict[str, Any], requests: dict[str, str], version: str) -> dict[str, Any]:
    container = {"name": "main", "resources": {"requests": requests}}
    pod_set = {"name": "main", "count": 2, "template": {"spec": {"containers": [container]}}}
    return {
        **wl,
        "metadata": {**wl["metadata"], "resourceVersion": version},
        "spec": {**wl["spec"], "podSets": [pod_set]},
    }


def _brute_force_ahead(me: dict[str, Any], ahead: list[dict[str, Any]]) -> WhyAhead:
    """Entries ahead by why, as diagnosis/ahead.py's `_why` counts a listed queue."""

    def priority(w: dict[str, Any]) -> int:
        return spec(w).get("priority") or 0

    created = metadata(me)["creationTimestamp"]
    higher = sum(1 for x in ahead if priority(x) > priority(me))
    same = [x for x in ahead if priority(x) == priority(me)]
    earlier = sum(1 for x in same if metadata(x)["creationTimestamp"] <= created)
    return WhyAhead(higher, earlier, len(same) - earlier)


def _brute_force_requests(ahead: list[dict[str, Any]]) -> tuple[tuple[str, Decimal], ...]:
    out: dict[str, Decimal] = {}
    for x in ahead:
        for res, value in total_needs(workload_requests(x)).items():
            out[res] = out.get(res, Decimal(0)) + value
    return tuple(sorted(out.items()))


def _random_workloads(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for index in range(count):
        namespace = rng.choice(["a", "b", "c"])
        conditions: list[dict[str, Any]] = []
        roll = rng.random()
        if roll < 0.1:
            conditions = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}]
        elif roll < 0.2:
            conditions = [
                _evicted("PodsReadyTimeout", f"2026-01-01T00:00:{rng.randrange(60):02d}Z")
            ]
        wl = _workload(
            namespace,
            f"wl-{index:04d}",
            queue=rng.choice(["lq", "other"]),
            priority=rng.choice([0, 0, 0, 5, -1]),
            created=f"2026-01-01T00:00:{rng.randrange(60):02d}Z",
            conditions=conditions,
        )
        requests = {"cpu": f"{rng.randrange(1, 2000)}m"}
        if rng.random() < 0.3:
            requests["memory"] = f"{rng.randrange(1, 64)}Gi"
        out.append(_requesting(wl, requests, "1"))
    return out


def _check_every_position(cache: Any, workloads: list, queues: list) -> None:
    wl_store, lq_store = cache.stores[WORKLOAD], cache.stores[LOCAL_QUEUE]
    for cq in ("cq", "elsewhere"):
        expected = _brute_force(workloads, queues, cq)
        got = first_in_cluster_queue(wl_store, lq_store, cq, len(expected) + 5)
        assert [metadata(w)["name"] for w in got] == [metadata(w)["name"] for w in expected]
        for position, w in enumerate(expected):
            ns, name, lq = metadata(w)["namespace"], metadata(w)["name"], spec(w)["queueName"]
            read = cached_pending_read(wl_store, lq_store, ns, lq, name, ahead=True)
            assert read.own is not None, name
            own_ahead = [
                x
                for x in expected[:position]
                if metadata(x)["namespace"] == ns and spec(x)["queueName"] == lq
            ]
            assert read.own.item["positionInClusterQueue"] == position
            assert read.own.position_in_local_queue == len(own_ahead)
            # What is ahead, counted and summed from the running totals (one entry read).
            assert [metadata(x)["name"] for x in read.items] == [name]
            assert read.ahead is not None
            assert read.ahead.local_requests == _brute_force_requests(own_ahead)
            assert read.ahead.local == _brute_force_ahead(w, own_ahead)
            assert read.ahead.cluster == _brute_force_ahead(w, expected[:position])
            head = expected[0]
            if (
                head is not w
                and metadata(head)["namespace"] == ns
                and spec(head)["queueName"] == lq
            ):
                assert read.own.head_of_cluster_queue == metadata(head)["name"]
            else:
                assert read.own.head_of_cluster_queue is None
    for w in workloads:
        if not in_queue(w):
            ns, name, lq = metadata(w)["namespace"], metadata(w)["name"], spec(w)["queueName"]
            assert cached_pending_read(wl_store, lq_store, ns, lq, name, ahead=False).own is None


def test_cache_positions_match_a_sort_of_the_clusterqueue_and_follow_watch_events() -> None:
    queues = [
        _local_queue("a", "lq", "cq"),
        _local_queue("b", "lq", "cq"),  # same name, other namespace (kueue#10575)
        _local_queue("a", "other", "cq"),
        _local_queue("c", "lq", "elsewhere"),
        _local_queue("c", "other", "elsewhere"),
    ]
    workloads = _random_workloads(300, seed=26)
    cache = kueue_cache(None)
    cache.stores[LOCAL_QUEUE].replace([dict(q) for q in queues], "1")
    cache.stores[WORKLOAD].replace([dict(w) for w in workloads], "1")
    _check_every_position(cache, workloads, queues)

    # Watch events: a priority raised, one admitted, one deleted, one added.
    rng = random.Random(1)
    raised = rng.choice([w for w in workloads if in_queue(w)])
    raised = {**raised, "spec": {**raised["spec"], "priority": 100}}
    admitted = rng.choice([w for w in workloads if in_queue(w) and w is not raised])
    admitted = {
        **admitted,
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]},
    }
    deleted = rng.choice(workloads)
    added = _requesting(
        _workload("b", "newcomer", priority=5, created="2026-01-01T00:00:30Z"), {"cpu": "7"}, "5"
    )
    # Its requests changed (a new version), its place in the queue not.
    resized = rng.choice([w for w in workloads if in_queue(w) and w not in (raised, deleted)])
    resized = _requesting(resized, {"cpu": "3", "nvidia.com/gpu": "1"}, "7")
    store = cache.stores[WORKLOAD]
    store.apply("MODIFIED", raised, "2")
    store.apply("MODIFIED", admitted, "3")
    store.apply("DELETED", deleted, "4")
    store.apply("ADDED", added, "5")
    store.apply("MODIFIED", resized, "7")
    by_name = {(metadata(w)["namespace"], metadata(w)["name"]): w for w in workloads}
    for changed in (raised, admitted, added, resized):
        by_name[(metadata(changed)["namespace"], metadata(changed)["name"])] = changed
    del by_name[(metadata(deleted)["namespace"], metadata(deleted)["name"])]
    _check_every_position(cache, list(by_name.values()), queues)

    # Kueue's status update of a pending Workload (a new version, same place, same requests)
    # keeps the running totals: counted by identity, nothing rebuilt.
    still = next(w for w in by_name.values() if in_queue(w) and metadata(w)["namespace"] == "a")
    posting = queue_order_key("a", spec(still)["queueName"])
    kept = (queue_requests(store, posting), queue_counts(store, posting))
    condition = {"type": "QuotaReserved", "status": "False", "reason": "Pending"}
    updated = {**still, "status": {"conditions": [*still["status"]["conditions"], condition]}}
    updated = {**updated, "metadata": {**updated["metadata"], "resourceVersion": "8"}}
    store.apply("MODIFIED", updated, "8")
    by_name[("a", metadata(still)["name"])] = updated
    assert (queue_requests(store, posting), queue_counts(store, posting)) == kept
    assert queue_requests(store, posting) is kept[0]
    _check_every_position(cache, list(by_name.values()), queues)

    # A LocalQueue moved to another ClusterQueue takes its Workloads along (no re-index).
    moved = _local_queue("b", "lq", "elsewhere")
    cache.stores[LOCAL_QUEUE].apply("MODIFIED", moved, "6")
    queues = [q for q in queues if metadata(q) != metadata(moved)] + [moved]
    _check_every_position(cache, list(by_name.values()), queues)


def test_cache_position_without_the_entries_ahead_materializes_one_entry() -> None:
    queues = [_local_queue("a", "lq", "cq"), _local_queue("b", "lq", "cq")]
    workloads = [
        _workload(
            "a" if i % 2 else "b",
            f"wl-{i:05d}",
            created=f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
        )
        for i in range(2_000)
    ]
    cache = kueue_cache(None)
    cache.stores[LOCAL_QUEUE].replace(queues, "1")
    cache.stores[WORKLOAD].replace(workloads, "1")
    read = cached_pending_read(
        cache.stores[WORKLOAD], cache.stores[LOCAL_QUEUE], "a", "lq", "wl-01999", ahead=False
    )
    assert read.own is not None
    assert read.own.item["positionInClusterQueue"] == 1_999
    assert read.own.position_in_local_queue == 999
    assert len(read.items) == 1


@pytest.mark.parametrize("missing", ["workload", "queue"])
def test_cache_position_of_an_unknown_workload_or_queue_is_not_found(missing: str) -> None:
    cache = kueue_cache(None)
    cache.stores[LOCAL_QUEUE].replace(
        [] if missing == "queue" else [_local_queue("a", "lq", "cq")], "1"
    )
    cache.stores[WORKLOAD].replace([] if missing == "workload" else [_workload("a", "x")], "1")
    read = cached_pending_read(
        cache.stores[WORKLOAD], cache.stores[LOCAL_QUEUE], "a", "lq", "x", ahead=False
    )
    assert read.own is None
    assert not read.forbidden


def test_requests_ahead_are_summed_per_object_version() -> None:
    """aheadOfMe's sums remember each Workload version's requests (by uid and
    resourceVersion): a new version of the same Workload is summed anew."""
    from kueue_graphql.lookups.ahead import _sum

    def version(resource_version: str, cpu: str) -> dict[str, Any]:
        container = {"name": "main", "resources": {"requests": {"cpu": cpu}}}
        return {
            "metadata": {
                "name": "x",
                "namespace": "a",
                "uid": "u-1",
                "resourceVersion": resource_version,
            },
            "spec": {
                "podSets": [
                    {"name": "main", "count": 2, "template": {"spec": {"containers": [container]}}}
                ]
            },
        }

    assert _sum([version("1", "1")]) == {"cpu": 2}
    assert _sum([version("1", "1"), version("1", "1")]) == {"cpu": 4}
    assert _sum([version("2", "3")]) == {"cpu": 6}
