"""The `cache` read mode's stores and indexes (kube/store.py, lookups/cache_indexes.py), on
objects captured from the real control plane (tests/fixtures/captured): every indexed page
equals the page cut from a brute-force filter of the same objects, through inserts, updates,
deletes and re-lists."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.cache_changes import CacheChanges
from kueue_graphql.kube.changes import WatchTarget
from kueue_graphql.kube.client import ApiCallMeter
from kueue_graphql.kube.dependencies import object_key, position_key
from kueue_graphql.kube.paging import Page, PageRequest, object_order_key, page_of
from kueue_graphql.kube.resources import CLUSTER_QUEUE, COHORT, LOCAL_QUEUE, WORKLOAD
from kueue_graphql.kube.store import ALL, ANY, Indexer, namespace_key
from kueue_graphql.kueue.conditions import workload_status
from kueue_graphql.lookups.apiserver import ApiServerReader
from kueue_graphql.lookups.cache_indexes import kueue_cache, kueue_store, local_queue_of_posting
from kueue_graphql.lookups.cached import CachedQuotaReads, CacheReader
from kueue_graphql.lookups.disclosure import ServiceQuotaReads
from kueue_graphql.lookups.recording import RecordingReader, changed_since
from kueue_graphql.lookups.selection import (
    admitted_cluster_queue,
    field_selector,
    flavor_names,
    label_selector,
    workload_matches,
)
from tests.unit.test_position_reads import AllowAll

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured"


def _captured() -> list[dict[str, Any]]:
    return [
        json.loads(path.read_text())
        for path in sorted(CAPTURED.glob("*.json"))
        if path.name != "VERSIONS.json"
    ]


def _unique(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_key = {object_order_key(o): o for o in objects if o}
    return [copy.deepcopy(by_key[k]) for k in sorted(by_key)]


def captured_workloads() -> list[dict[str, Any]]:
    """The captured Workloads, plus copies in a second namespace and under other names (so the
    namespace and cursor orders are exercised: `team-a` < `team-a-2`, `team` < `team-a`)."""
    base = _unique([s["workload"] for s in _captured() if s.get("workload")])
    extra = []
    for namespace in ("team", "team-a-2"):
        for workload in base:
            clone = copy.deepcopy(workload)
            clone["metadata"]["namespace"] = namespace
            clone["metadata"]["uid"] = f"{namespace}-{clone['metadata']['uid']}"
            for ref in clone["metadata"].get("ownerReferences") or []:
                ref["uid"] = f"{namespace}-{ref['uid']}"
            extra.append(clone)
    assert len(base) >= 8
    return base + extra


def captured(key: str) -> list[dict[str, Any]]:
    return _unique([o for s in _captured() for o in s.get(key) or []])


def names(page: Page) -> list[tuple[str, str]]:
    return [object_order_key(o) for o in page.items]


def all_pages(store: Indexer, keys: list[Any], first: int) -> list[tuple[str, str]]:
    """Every page in turn, each after the previous one's last object (as a cursor does)."""
    seen: list[tuple[str, str]] = []
    after = None
    for _ in range(100):
        page = store.page(keys, PageRequest(first=first, after=after, count_all=False))
        seen += names(page)
        if not page.has_next:
            return seen
        last = page.items[-1]["metadata"]
        after = (last.get("namespace") or "", last["name"])
    raise AssertionError("pages never ended")


def test_managed_fields_are_stripped_and_list_items_get_their_kind() -> None:
    workload = captured_workloads()[0]
    workload["metadata"]["managedFields"] = [{"manager": "kueue"}]
    del workload["kind"]
    store = kueue_store(WORKLOAD)
    store.replace([workload], "10")
    stored = store.get(workload["metadata"]["namespace"], workload["metadata"]["name"])
    assert stored is not None
    assert "managedFields" not in stored["metadata"]
    assert stored["kind"] == "Workload"
    assert stored["apiVersion"] == WORKLOAD.api_version


def brute_force(
    objects: list[dict[str, Any]],
    namespace: str | None,
    queue: str | None,
    cluster_queue: str | None,
    status: str | None,
) -> list[dict[str, Any]]:
    return [
        w
        for w in objects
        if (namespace is None or w["metadata"].get("namespace") == namespace)
        and workload_matches(w, status, queue)
        and (cluster_queue is None or (admitted_cluster_queue(w) or "") == cluster_queue)
    ]


def test_every_filter_combination_pages_like_a_brute_force_filter() -> None:
    workloads = captured_workloads()
    store = kueue_store(WORKLOAD)
    store.replace(copy.deepcopy(workloads), "1")
    namespaces = sorted({w["metadata"]["namespace"] for w in workloads})
    queues = sorted({w["spec"].get("queueName") or "" for w in workloads})
    cluster_queues = sorted({admitted_cluster_queue(w) or "" for w in workloads})
    statuses = sorted({workload_status(w) for w in workloads})
    assert len(statuses) >= 3, statuses
    checked = 0
    for ns, queue, cq, status in itertools.product(
        [None, *namespaces],
        [None, *[q for q in queues if q]],
        [None, *cluster_queues],
        [None, *statuses],
    ):
        expected = brute_force(workloads, ns, queue, cq, status)
        key = ("wl", ns, queue, cq, status)
        assert store.count(key) == len(expected)
        whole = store.page([key], None)
        assert names(whole) == [object_order_key(w) for w in page_of(expected, None).items]
        for first in (1, 2, 5):
            assert all_pages(store, [key], first) == names(whole)
        checked += 1
    assert checked > 100


def test_a_page_matches_page_of_with_totals_and_cursor() -> None:
    workloads = captured_workloads()
    store = kueue_store(WORKLOAD)
    store.replace(copy.deepcopy(workloads), "1")
    for after in [None, ("team-a", ""), ("team-a", "zzz"), ("team", "zzz"), ("zzz", "")]:
        request = PageRequest(first=3, after=after)
        got = store.page([ALL], request)
        expected = page_of(workloads, request)
        assert names(got) == names(expected)
        assert (got.has_next, got.total_count) == (expected.has_next, expected.total_count)
    assert store.page([namespace_key("team")], None).total_count == len(workloads) // 3


def test_union_of_postings_is_merged_in_order() -> None:
    workloads = captured_workloads()
    store = kueue_store(WORKLOAD)
    store.replace(copy.deepcopy(workloads), "1")
    keys = [("wl", "team-a-2", ANY, ANY, ANY), ("wl", "team", ANY, ANY, ANY)]
    expected = [
        object_order_key(w)
        for w in page_of(
            [w for w in workloads if w["metadata"]["namespace"] in ("team", "team-a-2")], None
        ).items
    ]
    assert names(store.page(keys, None)) == expected
    assert all_pages(store, keys, 4) == expected


def test_watch_events_move_objects_between_postings() -> None:
    workloads = captured_workloads()
    store = kueue_store(WORKLOAD)
    store.replace(copy.deepcopy(workloads), "1")
    pending = next(w for w in workloads if workload_status(w) == "pending")
    ns, name = pending["metadata"]["namespace"], pending["metadata"]["name"]
    pending_before = store.count(("wl", ns, ANY, ANY, "pending"))
    finished = copy.deepcopy(pending)
    finished["status"] = {
        "conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded"}]
    }
    store.apply("MODIFIED", finished, "2")
    assert store.count(("wl", ns, ANY, ANY, "pending")) == pending_before - 1
    assert (ns + "/", name) in names(store.page([("wl", ns, ANY, ANY, "finished")], None))
    assert store.resource_version == "2"
    store.apply("DELETED", finished, "3")
    assert store.get(ns, name) is None
    assert store.count(ALL) == len(workloads) - 1
    assert (ns + "/", name) not in names(store.page([("wl", ANY, ANY, ANY, "finished")], None))
    store.apply("ADDED", copy.deepcopy(pending), "4")
    assert store.count(("wl", ns, ANY, ANY, "pending")) == pending_before
    store.apply("BOOKMARK", {"metadata": {"resourceVersion": "9"}}, "9")
    assert store.resource_version == "9"
    assert store.count(ALL) == len(workloads)


def test_a_relist_swaps_a_complete_state_in_at_once() -> None:
    workloads = captured_workloads()
    store = kueue_store(WORKLOAD)
    with pytest.raises(LookupError):
        store.state()
    store.replace(copy.deepcopy(workloads), "1")
    before = store.state()
    count_before = len(before.objects)
    store.replace(copy.deepcopy(workloads[:3]), "50")
    # The old state was left untouched (a reader holding it saw no half-built store), and
    # the new one is complete.
    assert len(before.objects) == count_before
    assert before.resource_version == "1"
    assert store.count(ALL) == 3
    assert store.resource_version == "50"


def test_owner_indexes() -> None:
    workloads = captured_workloads()
    store = kueue_store(WORKLOAD)
    store.replace(copy.deepcopy(workloads), "1")
    owned = next(w for w in workloads if w["metadata"].get("ownerReferences"))
    ref = owned["metadata"]["ownerReferences"][0]
    assert [object_order_key(w) for w in store.items(("owner-uid", ref["uid"]))] == [
        object_order_key(owned)
    ]
    by_name = store.items(
        ("owner-name", owned["metadata"]["namespace"], ref["kind"].lower(), ref["name"])
    )
    assert [object_order_key(w) for w in by_name] == [object_order_key(owned)]


def test_local_queue_cluster_queue_and_cohort_indexes() -> None:
    queues = captured("clusterQueues")
    assert queues
    store = kueue_store(CLUSTER_QUEUE)
    store.replace(copy.deepcopy(queues), "1")
    cohorts = {q["spec"].get("cohortName") or "" for q in queues}
    flavors = set().union(*(flavor_names(q) for q in queues))
    for cohort, flavor in itertools.product([None, *cohorts], [None, *flavors]):
        expected = [
            q["metadata"]["name"]
            for q in queues
            if (cohort is None or (q["spec"].get("cohortName") or "") == cohort)
            and (flavor is None or flavor in flavor_names(q))
        ]
        got = [q["metadata"]["name"] for q in store.page([("cq", cohort, flavor)], None).items]
        assert got == sorted(expected)

    local_queues = _unique([s["localQueue"] for s in _captured() if s.get("localQueue")])
    lq_store = kueue_store(LOCAL_QUEUE)
    lq_store.replace(copy.deepcopy(local_queues), "1")
    for q in local_queues:
        target = q["spec"]["clusterQueue"]
        matching = lq_store.items(("lq", q["metadata"]["namespace"], target))
        assert q["metadata"]["name"] in [m["metadata"]["name"] for m in matching]

    cohort_objects = captured("cohorts")
    cohort_store = kueue_store(COHORT)
    cohort_store.replace(copy.deepcopy(cohort_objects), "1")
    for cohort in cohort_objects:
        # A Cohort made without a spec (lend-root in lending-limits.json) has none at all.
        parent = (cohort.get("spec") or {}).get("parentName") or ""
        children = cohort_store.items(("cohort-parent", parent))
        assert cohort["metadata"]["name"] in [c["metadata"]["name"] for c in children]


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "2"}, False),
        ("a!=1", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("a in (1, 2),b", {"a": "2", "b": "x"}, True),
        ("a notin (1,2)", {"a": "1"}, False),
        ("kueue.x-k8s.io/job-uid=abc-1", {"kueue.x-k8s.io/job-uid": "abc-1"}, True),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    matches = label_selector(selector)
    assert matches is not None
    assert matches({"metadata": {"labels": labels}}) is expected


def test_unparsed_selectors_are_left_to_the_api_server() -> None:
    assert label_selector("a > 1") is None
    assert field_selector("status.phase=Running") is None
    by_name = field_selector("metadata.name=x,metadata.namespace!=y")
    assert by_name is not None
    assert by_name({"metadata": {"name": "x", "namespace": "z"}})
    assert not by_name({"metadata": {"name": "x", "namespace": "y"}})


def test_listeners_hear_changes_in_their_namespace_and_every_relist() -> None:
    workloads = captured_workloads()
    store = kueue_store(WORKLOAD)
    store.replace(copy.deepcopy(workloads), "1")
    heard: list[str | None] = []
    stop = store.listen(
        "team", lambda obj: heard.append(None if obj is None else obj["metadata"]["namespace"])
    )
    everywhere: list[object] = []
    store.listen(None, everywhere.append)
    one = next(w for w in workloads if w["metadata"]["namespace"] == "team-a")
    store.apply("MODIFIED", copy.deepcopy(one), "2")
    assert heard == []
    assert len(everywhere) == 1
    mine = copy.deepcopy(next(w for w in workloads if w["metadata"]["namespace"] == "team"))
    store.apply("DELETED", mine, "3")
    assert heard == ["team"]
    store.replace(copy.deepcopy(workloads), "4")
    assert heard == ["team", None]
    stop()
    store.apply("ADDED", mine, "5")
    assert heard == ["team", None]
    assert len(everywhere) == 4


class _NoOtherChanges:
    def open(self, identity: object, targets: object) -> Any:
        raise AssertionError("only cached kinds are subscribed to here")


async def test_cache_changes_wake_a_subscription_after_the_store_has_the_change() -> None:
    cache = kueue_cache(None)
    store = cache.stores[WORKLOAD]
    workloads = captured_workloads()
    store.replace(copy.deepcopy(workloads), "1")
    watched = next(w for w in workloads if w["metadata"]["namespace"] == "team-a")
    other = next(
        w
        for w in workloads
        if w["metadata"]["namespace"] == "team-a"
        and w["metadata"]["name"] != watched["metadata"]["name"]
    )
    changes = CacheChanges(cache, _NoOtherChanges(), local_queue_of_posting)
    by_name = changes.open(
        None, [WatchTarget(WORKLOAD, "team-a", f"metadata.name={watched['metadata']['name']}")]
    )
    whole_namespace = changes.open(None, [WatchTarget(WORKLOAD, "team-a")])
    try:
        assert await by_name.wait(0.01) is False
        store.apply("MODIFIED", copy.deepcopy(other), "2")
        assert await by_name.wait(0.01) is False
        assert await whole_namespace.wait(0.01) is True
        changed = copy.deepcopy(watched)
        changed["metadata"]["labels"] = {"changed": "yes"}
        store.apply("MODIFIED", changed, "3")
        assert await by_name.wait(0.01) is True
        # What wakes the subscription is already in the store it recomputes from.
        found = store.get("team-a", watched["metadata"]["name"])
        assert found is not None
        assert found["metadata"]["labels"] == {"changed": "yes"}
        assert await by_name.wait(0.01) is False
    finally:
        await by_name.close()
        await whole_namespace.close()
    # Closed subscriptions wait on nothing (the store keeps the one dispatching listener).
    assert changes.indexed() == 0


async def test_cache_changes_wake_only_on_a_dependency() -> None:
    """After `depend_on`, a change wakes a subscription only when it touches one of its
    dependencies; a Workload of another namespace in the same ClusterQueue touches a position
    (issue 26: every change of the namespace woke every subscription)."""
    cache = kueue_cache(None)
    queues = cache.stores[LOCAL_QUEUE]
    queues.replace(
        [
            {"metadata": {"namespace": ns, "name": "lq"}, "spec": {"clusterQueue": cq}}
            for ns, cq in (("team-a", "cq-1"), ("team-b", "cq-1"), ("team-c", "cq-2"))
        ],
        "1",
    )
    store = cache.stores[WORKLOAD]
    ours = _pending_workload("team-a", "ours", "lq", 0, "2026-01-01T00:00:00Z")
    store.replace([copy.deepcopy(ours)], "1")
    changes = CacheChanges(cache, _NoOtherChanges(), local_queue_of_posting)
    sub = changes.open(None, [WatchTarget(WORKLOAD, "team-a")])
    try:
        unseen = sub.depend_on(
            {object_key(WORKLOAD, "team-a", "ours"), position_key("team-a", "lq", "ours")}
        )
        # Positions come from the store that wakes the subscription: nothing to read again
        # at the re-check.
        assert unseen == set()
        # Same namespace, another ClusterQueue: nothing.
        unrelated = _pending_workload("team-a", "other", "lq-c", 0, "2026-01-01T00:00:00Z")
        store.apply("ADDED", unrelated, "2")
        assert await sub.wait(0.01) is False
        # Another namespace, another ClusterQueue: nothing.
        store.apply("ADDED", _pending_workload("team-c", "x", "lq", 5, "2026-01-01T00:00:01Z"), "3")
        assert await sub.wait(0.01) is False
        # Another namespace, the same ClusterQueue: its position may move.
        store.apply("ADDED", _pending_workload("team-b", "y", "lq", 5, "2026-01-01T00:00:01Z"), "4")
        assert await sub.wait(0.01) is True
        # The Workload itself.
        changed = copy.deepcopy(ours)
        changed["metadata"]["labels"] = {"changed": "yes"}
        store.apply("MODIFIED", changed, "5")
        assert await sub.wait(0.01) is True
    finally:
        await sub.close()
    assert changes.indexed() == 0


def _queues_feeding_one_cluster_queue(cache: Any) -> None:
    cache.stores[LOCAL_QUEUE].replace(
        [
            {"metadata": {"namespace": ns, "name": "lq"}, "spec": {"clusterQueue": "cq-1"}}
            for ns in ("team-a", "team-b")
        ],
        "1",
    )


def _one_ahead_of_ours() -> tuple[Any, dict[str, Any]]:
    """A cache where team-b's "ahead" is before team-a's "ours" in one ClusterQueue; "ahead"."""
    cache = kueue_cache(None)
    _queues_feeding_one_cluster_queue(cache)
    ahead = _pending_workload("team-b", "ahead", "lq", 5, "2026-01-01T00:00:00Z")
    ours = _pending_workload("team-a", "ours", "lq", 0, "2026-01-01T00:00:00Z")
    cache.stores[WORKLOAD].replace([copy.deepcopy(ahead), copy.deepcopy(ours)], "1")
    return cache, ahead


async def _woken(subscriptions: dict[str, Any]) -> set[str]:
    return {name for name, sub in subscriptions.items() if await sub.wait(0)}


async def test_a_change_that_leaves_the_pending_order_wakes_no_position() -> None:
    """A status write of a pending Workload of the same ClusterQueue (another namespace), ahead
    of the watched one, moves no entry: no position dependent wakes (issue 26: every change of
    a Workload of the ClusterQueue woke every position in it, and each recomputed)."""
    cache, ahead = _one_ahead_of_ours()
    store = cache.stores[WORKLOAD]
    changes = CacheChanges(cache, _NoOtherChanges(), local_queue_of_posting)
    sub = changes.open(None, [WatchTarget(WORKLOAD, "team-a")])
    try:
        sub.depend_on(
            {object_key(WORKLOAD, "team-a", "ours"), position_key("team-a", "lq", "ours")}
        )
        written = copy.deepcopy(ahead)
        written["status"]["conditions"] = [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "x"}
        ]
        written["metadata"]["annotations"] = {"touched": "yes"}
        store.apply("MODIFIED", written, "2")
        assert store.moves == ()
        assert await sub.wait(0) is False
        # Its entry moving behind ours (lower priority) does move ours.
        behind = copy.deepcopy(written)
        behind["spec"]["priority"] = -1
        store.apply("MODIFIED", behind, "3")
        assert await sub.wait(0) is True
        assert sub.touched() == {position_key("team-a", "lq", "ours")}
    finally:
        await sub.close()
    assert changes.indexed() == 0


async def test_a_change_of_the_pending_order_wakes_only_the_positions_it_moves() -> None:
    """An entry that comes, leaves or moves wakes the subscriptions of the Workloads behind it
    (any namespace of the ClusterQueue), not those ahead of it, found through the index of the
    watched entries; the wake says it was for the position."""
    cache = kueue_cache(None)
    _queues_feeding_one_cluster_queue(cache)
    store = cache.stores[WORKLOAD]
    watched = {
        "first": _pending_workload("team-a", "first", "lq", 10, "2026-01-01T00:00:00Z"),
        "middle": _pending_workload("team-a", "middle", "lq", 5, "2026-01-01T00:00:00Z"),
        "last": _pending_workload("team-a", "last", "lq", 0, "2026-01-01T00:00:00Z"),
    }
    store.replace([copy.deepcopy(w) for w in watched.values()], "1")
    changes = CacheChanges(cache, _NoOtherChanges(), local_queue_of_posting)
    subs = {name: changes.open(None, [WatchTarget(WORKLOAD, "team-a")]) for name in watched}
    try:
        for name, sub in subs.items():
            sub.depend_on(
                {object_key(WORKLOAD, "team-a", name), position_key("team-a", "lq", name)}
            )
        # Comes between first and middle (another namespace): middle and last move.
        newcomer = _pending_workload("team-b", "new", "lq", 7, "2026-01-01T00:00:01Z")
        store.apply("ADDED", copy.deepcopy(newcomer), "2")
        assert await _woken(subs) == {"middle", "last"}
        assert subs["last"].touched() == {position_key("team-a", "lq", "last")}
        # Leaves from there: the same two.
        store.apply("DELETED", copy.deepcopy(newcomer), "3")
        assert await _woken(subs) == {"middle", "last"}
        # Comes behind everyone: nobody.
        store.apply(
            "ADDED", _pending_workload("team-b", "tail", "lq", -5, "2026-01-01T00:00:01Z"), "4"
        )
        assert await _woken(subs) == set()
        # A watched Workload that moves is re-keyed: middle drops behind last, and a newcomer
        # between their new places wakes middle only (and middle's own change wakes it).
        moved = copy.deepcopy(watched["middle"])
        moved["spec"]["priority"] = -2
        store.apply("MODIFIED", moved, "5")
        assert await _woken(subs) == {"middle", "last"}
        store.apply(
            "ADDED", _pending_workload("team-b", "mid2", "lq", -1, "2026-01-01T00:00:01Z"), "6"
        )
        assert await _woken(subs) == {"middle"}
        # A LocalQueue of another ClusterQueue: nobody.
        store.apply(
            "ADDED", _pending_workload("team-a", "else", "lq-c", 50, "2026-01-01T00:00:01Z"), "7"
        )
        assert await _woken(subs) == set()
    finally:
        for sub in subs.values():
            await sub.close()
    assert changes.indexed() == 0


async def test_a_position_only_wake_reads_the_position_again_and_finds_it_unchanged() -> None:
    """Woken for a position only, a subscription reads its position again through the cache
    (no API call): an entry ahead of it that moves but stays ahead leaves the recorded
    position as it was, so nothing is recomputed (graph/subscription.py `_reads_the_same`)."""
    cache, ahead = _one_ahead_of_ours()
    store = cache.stores[WORKLOAD]
    reader = RecordingReader(CacheReader(_allowing_reader(), cache))
    first = await reader.pending_read("team-a", "lq", "ours")
    assert first.own is not None
    assert first.own.item["positionInClusterQueue"] == 1
    changes = CacheChanges(cache, _NoOtherChanges(), local_queue_of_posting)
    sub = changes.open(None, [WatchTarget(WORKLOAD, "team-a")])
    try:
        sub.depend_on(reader.recorded)
        further_ahead = copy.deepcopy(ahead)
        further_ahead["spec"]["priority"] = 50
        store.apply("MODIFIED", further_ahead, "2")
        assert await sub.wait(0) is True
        touched = sub.touched()
        assert touched == {position_key("team-a", "lq", "ours")}
        again = CacheReader(_allowing_reader(), cache)
        assert await changed_since(again, reader.recorded, touched) is False
        # The one ahead leaves: the position reads differently.
        store.apply("DELETED", further_ahead, "3")
        assert await sub.wait(0) is True
        assert await changed_since(again, reader.recorded, sub.touched() or ()) is True
    finally:
        await sub.close()


class _NoApi:
    async def request_json(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a position in the cache read mode costs no API call")


def _allowing_reader() -> ApiServerReader:
    async def identity() -> Identity:
        return Identity("alice")

    return ApiServerReader(
        _NoApi(),  # type: ignore[arg-type]
        AllowAll(),  # type: ignore[arg-type]
        identity,
        impersonate=False,
        meter=ApiCallMeter(budget=100),
    )


def _pending_workload(
    namespace: str, name: str, queue: str, priority: int, created: str, **status: Any
) -> dict[str, Any]:
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": at} for kind, at in status.items()
    ]
    return {
        "metadata": {"namespace": namespace, "name": name, "creationTimestamp": created},
        "spec": {"queueName": queue, "priority": priority},
        "status": {"conditions": conditions},
    }


async def test_cluster_queue_pending_from_the_cache_in_kueues_queue_order() -> None:
    """The disclosure policy's pending list of a ClusterQueue in cache mode: its LocalQueues'
    pending, active Workloads by priority, then creation (or eviction) time; no API call (the
    fallback has no client)."""
    cache = kueue_cache(None)
    queues = [
        {"metadata": {"namespace": ns, "name": lq}, "spec": {"clusterQueue": cq}}
        for ns, lq, cq in (("a", "lq", "cq"), ("b", "lq", "cq"), ("c", "lq", "other"))
    ]
    cache.stores[LOCAL_QUEUE].replace(queues, "1")
    inactive = _pending_workload("a", "inactive", "lq", 100, "2026-01-01T00:00:00Z")
    inactive["spec"]["active"] = False
    # Created first, evicted (PodsReady timeout) and requeued later: ordered by its eviction
    # time. One preempted keeps its creation time (Kueue's GetQueueOrderTimestamp).
    requeued = _pending_workload(
        "a", "requeued", "lq", 0, "2026-01-01T00:00:00Z", Evicted="2026-01-01T00:00:07Z"
    )
    requeued["status"]["conditions"][0]["reason"] = "PodsReadyTimeout"
    preempted = _pending_workload(
        "b", "preempted", "lq", 0, "2026-01-01T00:00:02Z", Evicted="2026-01-01T00:00:08Z"
    )
    preempted["status"]["conditions"][0]["reason"] = "Preempted"
    workloads = [
        _pending_workload("a", "early", "lq", 0, "2026-01-01T00:00:01Z"),
        _pending_workload("b", "high", "lq", 10, "2026-01-01T00:00:05Z"),
        _pending_workload("b", "late", "lq", 0, "2026-01-01T00:00:09Z"),
        requeued,
        preempted,
        _pending_workload(
            "a", "admitted", "lq", 50, "2026-01-01T00:00:00Z", QuotaReserved="2026-01-01T00:00:02Z"
        ),
        _pending_workload("c", "elsewhere", "lq", 99, "2026-01-01T00:00:00Z"),
        inactive,
    ]
    cache.stores[WORKLOAD].replace(workloads, "1")
    reads = CachedQuotaReads(cache, ServiceQuotaReads(None, ApiCallMeter(budget=0)))  # type: ignore[arg-type]
    entries = await reads.cluster_queue_pending("cq", 10)
    assert [(e["priority"], e["metadata"]["creationTimestamp"]) for e in entries] == [
        (10, "2026-01-01T00:00:05Z"),
        (0, "2026-01-01T00:00:01Z"),
        (0, "2026-01-01T00:00:02Z"),  # preempted at :08, ordered by creation
        (0, "2026-01-01T00:00:00Z"),  # requeued at :07
        (0, "2026-01-01T00:00:09Z"),
    ]
    assert [e["positionInClusterQueue"] for e in entries] == [0, 1, 2, 3, 4]
    assert all("name" not in e["metadata"] for e in entries)
    assert len(await reads.cluster_queue_pending("cq", 2)) == 2
    assert await reads.cluster_queue_pending("none", 5) == []
