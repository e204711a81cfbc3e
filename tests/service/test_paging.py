"""Pages follow kubectl's list order, and a page without totalCount reads only what it needs."""

from __future__ import annotations

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
