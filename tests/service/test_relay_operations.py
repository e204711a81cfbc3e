"""The documents Relay's compiler generates for a portal (tests/node/relay/Portal.ts, compiled by
tests/relay_compile.py over the committed SDL) run against the real server as several users:
the refetch query through `node(id:)` answers the Workload the portal's query showed, the
pagination query pages through `edges` with their cursors, and a user without access gets
FORBIDDEN and none of the data. (tests/unit/test_relay_compiler.py checks that they compile and
validate; this checks that they work.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.legit_queries import REPO
from tests.relay_compile import compile_with_relay, generated_texts
from tests.service.conftest import Server

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

NAMESPACE = "team-a"
JOB = "too-big-3x1cpu"


@pytest.fixture(scope="module")
def relay_documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp_path: Path = tmp_path_factory.mktemp("relay")
    compiled = asyncio.run(compile_with_relay(tmp_path, REPO / "schema" / "schema.graphql"))
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    return generated_texts(tmp_path / "generated")


def codes(body: dict[str, Any]) -> set[str]:
    return {e["extensions"]["code"] for e in body.get("errors") or []}


@pytest.mark.parametrize("user", ["alice", "viewer"])
async def test_the_refetch_query_answers_the_workload_the_portal_showed(
    server: Server, cluster: Cluster, relay_documents: dict[str, str], user: str
) -> None:
    token = cluster.token(user)
    why = await server.query(
        relay_documents["PortalWhyQuery"], {"namespace": NAMESPACE, "job": JOB}, token=token
    )
    shown = why["data"]["workloadFor"]
    assert shown is not None, why
    assert shown["id"], why
    # FORBIDDEN where the user may not read a part; NOT_FOUND for a seed LocalQueue whose
    # ClusterQueue does not exist (on the page of team-a's Workloads).
    assert codes(why) <= {"FORBIDDEN", "NOT_FOUND"}, why.get("errors")
    refetched = await server.query(
        relay_documents["PortalWorkloadRefetchQuery"], {"id": shown["id"]}, token=token
    )
    node = refetched["data"]["node"]
    assert node is not None, refetched
    # The same parts refused, at the same places under the Workload.
    assert errors_under(refetched, "node") == errors_under(why, "workloadFor")
    for field in ("id", "name", "namespace", "localQueue", "clusterQueue"):
        assert node[field] == shown[field], field
    assert node["diagnosis"]["id"] == shown["diagnosis"]["id"]
    assert node["diagnosis"]["stage"] == shown["diagnosis"]["stage"]


def errors_under(body: dict[str, Any], root: str) -> set[tuple[tuple[object, ...], str]]:
    """(path below `root`, code) of each error under the root field `root`."""
    return {
        (tuple(e["path"][1:]), e["extensions"]["code"])
        for e in body.get("errors") or []
        if (e.get("path") or [None])[0] == root
    }


@pytest.mark.parametrize("user", ["alice", "viewer"])
async def test_the_pagination_query_pages_through_edges(
    server: Server, cluster: Cluster, relay_documents: dict[str, str], user: str
) -> None:
    token = cluster.token(user)
    pagination = relay_documents["PortalWorkloadsPaginationQuery"]
    whole = await server.query(pagination, {"count": 50, "namespace": NAMESPACE}, token=token)
    everything = [e["node"]["id"] for e in whole["data"]["workloads"]["edges"]]
    assert len(everything) >= 2, whole
    walked: list[str] = []
    cursor = None
    for _ in range(len(everything)):
        page = await server.query(
            pagination, {"count": 1, "cursor": cursor, "namespace": NAMESPACE}, token=token
        )
        connection = page["data"]["workloads"]
        assert [e["cursor"] for e in connection["edges"]] == [connection["pageInfo"]["endCursor"]]
        walked += [e["node"]["id"] for e in connection["edges"]]
        cursor = connection["pageInfo"]["endCursor"]
        if not connection["pageInfo"]["hasNextPage"]:
            break
    assert walked == everything


async def test_a_user_without_access_gets_forbidden_and_no_data(
    server: Server, cluster: Cluster, relay_documents: dict[str, str]
) -> None:
    token = cluster.token("bob")
    why = await server.query(
        relay_documents["PortalWhyQuery"], {"namespace": NAMESPACE, "job": JOB}, token=token
    )
    assert "FORBIDDEN" in codes(why), why
    data = why.get("data") or {}
    assert data.get("workloadFor") is None, why
    assert data.get("diagnose") is None, why
    # The id viewer's portal holds gives bob nothing either.
    shown = await server.query(
        relay_documents["PortalWhyQuery"],
        {"namespace": NAMESPACE, "job": JOB},
        token=cluster.token("viewer"),
    )
    refetched = await server.query(
        relay_documents["PortalWorkloadRefetchQuery"],
        {"id": shown["data"]["workloadFor"]["id"]},
        token=token,
    )
    assert refetched["data"]["node"] is None, refetched
    assert codes(refetched) == {"FORBIDDEN"}, refetched
