"""GraphQL over HTTP media types and Apollo's automatic persisted queries against the real
server, as a real user (the unit tests in tests/unit/test_graphql_over_http.py and
test_persisted_queries.py cover each rule in-process)."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

GRAPHQL_RESPONSE = "application/graphql-response+json"
# What Apollo Client 4 sends.
APOLLO_ACCEPT = f"{GRAPHQL_RESPONSE},application/json;q=0.9"
VIEWER = "query Viewer { viewer { username } }"


def persisted(document: str) -> str:
    sha = hashlib.sha256(document.encode()).hexdigest()
    return json.dumps({"persistedQuery": {"version": 1, "sha256Hash": sha}})


async def test_apollo_persisted_query_round_trip_over_get(server: Server, cluster: Cluster) -> None:
    headers = {"Authorization": f"Bearer {cluster.token('viewer')}", "Accept": APOLLO_ACCEPT}
    unknown = await server.http.get(
        "/graphql", params={"extensions": persisted(VIEWER)}, headers=headers
    )
    assert unknown.status_code == 200, unknown.text
    assert unknown.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    sent = await server.http.get(
        "/graphql", params={"query": VIEWER, "extensions": persisted(VIEWER)}, headers=headers
    )
    known = await server.http.get(
        "/graphql", params={"extensions": persisted(VIEWER)}, headers=headers
    )
    for response in (sent, known):
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
        assert response.headers["cache-control"] == "private, no-store"
        assert response.json()["data"]["viewer"]["username"] == "viewer"


async def test_graphql_response_json_request_errors_are_400(
    server: Server, cluster: Cluster
) -> None:
    headers = {"Authorization": f"Bearer {cluster.token('viewer')}", "Accept": APOLLO_ACCEPT}
    response = await server.http.post(
        "/graphql", json={"query": "{ viewer { password } }"}, headers=headers
    )
    assert response.status_code == 400, response.text
    assert "data" not in response.json()
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
