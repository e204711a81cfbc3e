"""Pages follow kubectl's list order, and a page without totalCount reads only what it needs."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kueue_graphql.http import ReadMode
from kueue_graphql.kube.client import ApiCall
from tests.cluster.driver import Cluster
from tests.service.conftest import Server
from tests.service.test_graph_edges import kubectl_items

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

PAGE = """query($after: String) {
  workloads(first: 2, after: $after) { nodes { namespace name } pageInfo { hasNextPage endCursor } }
}"""


async def test_pages_walk_the_list_in_kubectl_order(server: Server, cluster: Cluster) -> None:
    seen: list[tuple[str, str]] = []
    after = None
    for _ in range(500):
        body = await server.query(PAGE, {"after": after}, token=cluster.token("viewer"))
        assert "errors" not in body, body["errors"]
        page = body["data"]["workloads"]
        seen += [(n["namespace"], n["name"]) for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    listed = kubectl_items(cluster, "viewer", "get", "workloads", "-A")
    assert seen == [(w["metadata"]["namespace"], w["metadata"]["name"]) for w in listed]


async def test_a_page_without_total_count_stops_reading(
    server: Server, cluster: Cluster, read_mode: ReadMode
) -> None:
    listed = kubectl_items(cluster, "viewer", "get", "workloads", "-A")
    assert len(listed) > 8, "the scenarios make more Workloads than two small pages hold"
    calls: list[ApiCall] = []
    server.kube.observers.append(calls.append)
    try:
        body = await server.query(
            "{ workloads(first: 1) { nodes { name } pageInfo { hasNextPage } } }",
            token=cluster.token("viewer"),
        )
        lists = [c for c in calls if c.method == "GET" and c.path.endswith("/workloads")]
        calls.clear()
        counted = await server.query(
            "{ workloads(first: 1) { totalCount } }", token=cluster.token("viewer")
        )
        counted_lists = [c for c in calls if c.method == "GET" and c.path.endswith("/workloads")]
    finally:
        server.kube.observers.remove(calls.append)
    assert body["data"]["workloads"]["nodes"] == [{"name": listed[0]["metadata"]["name"]}]
    assert body["data"]["workloads"]["pageInfo"]["hasNextPage"] is True
    assert counted["data"]["workloads"]["totalCount"] == len(listed)
    if read_mode is ReadMode.CACHE:
        # From the cache's index: no Workload read from the API server at all, and the answer
        # says how fresh it is.
        assert lists == []
        assert counted_lists == []
        assert set(body["extensions"]["cache"]["kinds"]) == {"Workload"}
        assert body["extensions"]["cache"]["ageSeconds"] >= 0
        return
    assert "cache" not in body["extensions"]
    # One small read, not the whole list: fewer objects asked for than exist.
    assert len(lists) == 1
    assert int(dict(lists[0].query)["limit"]) < len(listed)
    # totalCount needs the whole list, and gets it right.
    assert counted["data"]["workloads"]["totalCount"] == len(listed)
    assert sum(int(dict(c.query)["limit"]) for c in counted_lists) >= len(listed)


# -- the edges that grow with the cluster are connections too --------------------------------

EDGE_PAGE = """query($after: String) {{
  {root} {{ {edge}(first: 2, after: $after) {{
    nodes {{ {node} }} pageInfo {{ hasNextPage endCursor }} totalCount
  }} }}
}}"""


async def walk_edge(
    server: Server, user: str, cluster: Cluster, root: str, edge: str, node: str = "name"
) -> tuple[list[dict[str, Any]], list[str], set[int]]:
    """Every page of one edge, two at a time: (nodes, cursors, totalCounts seen)."""
    query = EDGE_PAGE.format(root=root, edge=edge, node=node)
    root_name = root.split("(", 1)[0].split(":", 1)[0]
    nodes: list[dict[str, Any]] = []
    cursors: list[str] = []
    totals: set[int] = set()
    after = None
    for _ in range(500):
        body = await server.query(query, {"after": after}, token=cluster.token(user))
        assert "errors" not in body, body["errors"]
        page = body["data"][root_name][edge]
        nodes += page["nodes"]
        totals.add(page["totalCount"])
        if page["pageInfo"]["endCursor"] is not None:
            cursors.append(page["pageInfo"]["endCursor"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    return nodes, cursors, totals


def decoded(cursor: str) -> tuple[str, str]:
    namespace, name = json.loads(base64.urlsafe_b64decode(cursor))
    return (namespace, name)


@pytest.mark.parametrize(("user", "namespace"), [("alice", "team-a"), ("bob", "team-b")])
async def test_local_queue_workloads_page_as_a_tenant(
    server: Server, cluster: Cluster, user: str, namespace: str
) -> None:
    listed = kubectl_items(cluster, user, "get", "workloads", "-n", namespace)
    queues = kubectl_items(cluster, user, "get", "localqueues", "-n", namespace)
    assert queues
    mine = {(w["metadata"]["namespace"], w["metadata"]["name"]) for w in listed}
    for queue in queues:
        name = queue["metadata"]["name"]
        nodes, cursors, totals = await walk_edge(
            server,
            user,
            cluster,
            f'localQueue(namespace: "{namespace}", name: "{name}")',
            "workloads",
            "namespace name",
        )
        expected = sorted(
            w["metadata"]["name"] for w in listed if w["spec"].get("queueName") == name
        )
        assert [n["name"] for n in nodes] == expected, name
        assert totals == {len(expected)}, name
        assert {n["namespace"] for n in nodes} <= {namespace}
        # A cursor names only the caller's own last item of a page.
        assert {decoded(c) for c in cursors} <= mine


async def test_tenant_gets_no_cluster_wide_edge(server: Server, cluster: Cluster) -> None:
    """alice may not list Workloads across namespaces nor read ClusterQueues: the edges that
    need that are FORBIDDEN, with no item, count, cursor or other tenant's name."""
    body = await server.query(
        """{ localQueue(namespace: "team-a", name: "lq-team-a") { clusterQueue {
              workloads(first: 2) { nodes { name } totalCount pageInfo { endCursor } } } }
            resourceFlavor(name: "standard") {
              clusterQueues(first: 2) { nodes { name } totalCount } }
            cohort(name: "org") { members(first: 2) { nodes { name } totalCount } } }""",
        token=cluster.token("alice"),
    )
    assert body["errors"]
    assert {e["extensions"]["code"] for e in body["errors"]} == {"FORBIDDEN"}
    text = json.dumps(body)
    for other in kubectl_items(cluster, "bob", "get", "workloads", "-n", "team-b"):
        assert other["metadata"]["name"] not in text
    assert "team-b" not in text
    cluster_queue = (body["data"] or {}).get("localQueue", {}).get("clusterQueue")
    assert cluster_queue is None or cluster_queue.get("workloads") is None


async def test_a_forged_cursor_only_positions_the_callers_own_list(
    server: Server, cluster: Cluster
) -> None:
    bobs = kubectl_items(cluster, "bob", "get", "workloads", "-n", "team-b")
    assert bobs
    forged = base64.urlsafe_b64encode(
        json.dumps(["team-b", bobs[0]["metadata"]["name"]]).encode()
    ).decode()
    body = await server.query(
        """query($after: String) { localQueue(namespace: "team-a", name: "lq-team-a") {
             workloads(first: 100, after: $after) { nodes { namespace name } totalCount } } }""",
        {"after": forged},
        token=cluster.token("alice"),
    )
    assert "errors" not in body, body["errors"]
    page = body["data"]["localQueue"]["workloads"]
    assert all(n["namespace"] == "team-a" for n in page["nodes"])
    own = kubectl_items(cluster, "alice", "get", "workloads", "-n", "team-a")
    assert page["totalCount"] == sum(1 for w in own if w["spec"].get("queueName") == "lq-team-a")


def cluster_queue_of(workload: dict[str, Any], queues: dict[tuple[str, str], str]) -> str | None:
    admitted = ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue")
    if admitted:
        return str(admitted)
    key = (workload["metadata"]["namespace"], workload["spec"].get("queueName") or "")
    return queues.get(key)


async def test_cluster_queue_workloads_page_as_viewer(server: Server, cluster: Cluster) -> None:
    workloads = kubectl_items(cluster, "viewer", "get", "workloads", "-A")
    queues = {
        (q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"]
        for q in kubectl_items(cluster, "viewer", "get", "localqueues", "-A")
    }
    names = {(w["metadata"]["namespace"], w["metadata"]["name"]) for w in workloads}
    for cluster_queue in kubectl_items(cluster, "viewer", "get", "clusterqueues"):
        name = cluster_queue["metadata"]["name"]
        nodes, cursors, totals = await walk_edge(
            server,
            "viewer",
            cluster,
            f'clusterQueue(name: "{name}")',
            "workloads",
            "namespace name",
        )
        expected = [
            (w["metadata"]["namespace"], w["metadata"]["name"])
            for w in workloads
            if cluster_queue_of(w, queues) == name
        ]
        assert [(n["namespace"], n["name"]) for n in nodes] == expected, name
        assert totals == {len(expected)}, name
        assert {decoded(c) for c in cursors} <= names


def parent_of(cohort: dict[str, Any]) -> str | None:
    parent = (cohort.get("spec") or {}).get("parentName")
    return str(parent) if parent else None


async def test_cohort_and_flavor_edges_page_as_viewer(server: Server, cluster: Cluster) -> None:
    queues = kubectl_items(cluster, "viewer", "get", "clusterqueues")
    cohorts = kubectl_items(cluster, "viewer", "get", "cohorts")
    cohort_names = {q["spec"]["cohortName"] for q in queues if q["spec"].get("cohortName")}
    cohort_names |= {c["metadata"]["name"] for c in cohorts}
    assert cohort_names
    for cohort in sorted(cohort_names):
        members, _, totals = await walk_edge(
            server, "viewer", cluster, f'cohort(name: "{cohort}")', "members"
        )
        expected = sorted(
            q["metadata"]["name"] for q in queues if q["spec"].get("cohortName") == cohort
        )
        assert [m["name"] for m in members] == expected, cohort
        assert totals == {len(expected)}, cohort
        children, _, totals = await walk_edge(
            server, "viewer", cluster, f'cohort(name: "{cohort}")', "children"
        )
        expected = sorted(c["metadata"]["name"] for c in cohorts if parent_of(c) == cohort)
        assert [c["name"] for c in children] == expected, cohort
        assert totals == {len(expected)}, cohort
    for flavor in kubectl_items(cluster, "viewer", "get", "resourceflavors"):
        name = flavor["metadata"]["name"]
        offered, _, totals = await walk_edge(
            server, "viewer", cluster, f'resourceFlavor(name: "{name}")', "clusterQueues"
        )
        expected = sorted(
            q["metadata"]["name"]
            for q in queues
            if any(
                f["name"] == name
                for group in q["spec"].get("resourceGroups") or []
                for f in group.get("flavors") or []
            )
        )
        assert [q["name"] for q in offered] == expected, name
        assert totals == {len(expected)}, name


async def test_an_edge_page_without_total_count_stops_reading(
    server: Server, cluster: Cluster, read_mode: ReadMode
) -> None:
    listed = kubectl_items(cluster, "alice", "get", "workloads", "-n", "team-a")
    in_queue = [w for w in listed if w["spec"].get("queueName") == "lq-team-a"]
    assert len(in_queue) >= 2
    calls: list[ApiCall] = []
    server.kube.observers.append(calls.append)
    try:
        body = await server.query(
            """{ localQueue(namespace: "team-a", name: "lq-team-a") {
                 workloads(first: 1) { nodes { name } pageInfo { hasNextPage } } } }""",
            token=cluster.token("alice"),
        )
    finally:
        server.kube.observers.remove(calls.append)
    assert "errors" not in body, body["errors"]
    page = body["data"]["localQueue"]["workloads"]
    assert page["nodes"] == [{"name": in_queue[0]["metadata"]["name"]}]
    assert page["pageInfo"]["hasNextPage"] is True
    lists = [c for c in calls if c.method == "GET" and c.path.endswith("/workloads")]
    if read_mode is ReadMode.CACHE:
        # Paged from the cache's (namespace, LocalQueue) index: no Workload read at all.
        assert lists == []
        assert "Workload" in body["extensions"]["cache"]["kinds"]
        return
    assert len(lists) == 1
    assert int(dict(lists[0].query)["limit"]) < len(listed)
