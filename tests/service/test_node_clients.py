"""urql and Apollo Client 4, configured as their docs show (tests/node/clients.mjs), run the
README's first query against the real server from Node, as alice: each must get the answer
the Python client (httpx, POST application/json) gets for the same query, over the protocol
it speaks by default (urql: GET; Apollo's persisted-queries link: the hash alone, the document
on PERSISTED_QUERY_NOT_FOUND, then the hash alone again)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kueue_graphql.http import ReadMode
from tests import node_clients
from tests.cluster.driver import Cluster
from tests.legit_queries import docs_queries
from tests.service.conftest import Server, server_in_mode

pytestmark = pytest.mark.cluster

GRAPHQL_RESPONSE = "application/graphql-response+json; charset=utf-8"
# The README's "Why is my job waiting?" query, with the Job it is asked about there.
README_WHY = next(q for _, q in docs_queries() if "query WhyIsMyJobWaiting(" in q)
WHY_VARIABLES = {"ns": "team-a", "job": "too-big-3x1cpu"}


@pytest.fixture(scope="module")
async def fresh(cluster: Cluster, read_mode: ReadMode) -> AsyncIterator[Server]:
    """A server of this module alone: its store of persisted queries starts empty."""
    async with server_in_mode(cluster, read_mode) as started:
        yield started


def as_asked(value: Any, reference: Any) -> Any:
    """`value` without the `__typename` fields a client adds to every selection (urql's and
    Apollo's caches do) where `reference` has none."""
    if isinstance(value, dict) and isinstance(reference, dict):
        return {
            key: as_asked(item, reference.get(key))
            for key, item in value.items()
            if key != "__typename" or key in reference
        }
    if isinstance(value, list) and isinstance(reference, list):
        pairs = zip(value, reference, strict=False)
        return [as_asked(item, seen) for item, seen in pairs] + value[len(reference) :]
    return value


@pytest.fixture(scope="module")
async def answers(fresh: Server, cluster: Cluster) -> dict[str, Any]:
    """What the Node clients printed, and the Python client's answer to the same query."""
    token = cluster.token("alice")
    python = await fresh.query(README_WHY, WHY_VARIABLES, token=token)
    assert "errors" not in python, python
    assert python["data"]["diagnose"]["stage"], python
    clients = await node_clients.run(
        "clients.mjs",
        {
            "KGQL_URL": f"{fresh.url}/graphql",
            "KGQL_TOKEN": token,
            "KGQL_OPERATION": json.dumps({"query": README_WHY, "variables": WHY_VARIABLES}),
        },
    )
    assert clients.returncode == 0, clients.stderr
    printed: dict[str, Any] = json.loads(clients.stdout)
    print(json.dumps(printed, indent=1))
    return {"python": python["data"], **printed}


def test_urql_defaults_query_over_get(answers: dict[str, Any]) -> None:
    urql = answers["urql"]
    assert urql["error"] is None, urql["error"]
    assert [(r["method"], r["sentDocument"], r["status"]) for r in urql["requests"]] == [
        ("GET", True, 200)
    ]
    # urql's default Accept ranks application/graphql-response+json first.
    assert urql["requests"][0]["contentType"] == GRAPHQL_RESPONSE
    assert as_asked(urql["data"], answers["python"]) == answers["python"]


def test_apollo_persisted_query_link_and_default_cache(answers: dict[str, Any]) -> None:
    first, second = answers["apollo"]
    for client in (first, second):
        assert client["error"] is None, client["error"]
        assert as_asked(client["data"], answers["python"]) == answers["python"]
    wire = [
        [(r["method"], r["sentDocument"], r["status"], r["codes"]) for r in client["requests"]]
        for client in (first, second)
    ]
    assert wire == [
        # An unknown hash, then the document with it.
        [("POST", False, 200, ["PERSISTED_QUERY_NOT_FOUND"]), ("POST", True, 200, [])],
        # Another client (an empty cache): the hash alone is enough now.
        [("POST", False, 200, [])],
    ]
    # Every request named the document by the same SHA-256.
    (sha,) = {r["sentHash"] for client in (first, second) for r in client["requests"]}
    assert sha is not None
