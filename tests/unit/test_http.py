"""The HTTP layer refuses bad requests before any Kubernetes API call."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from kueue_graphql.graph.schema import QueryLimits
from kueue_graphql.http import ServerSettings, build_app
from kueue_graphql.http.services import build_services
from tests.unit.apiserver_stub import Stub, apiserver_stub


def refuse_everything(method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    return 500, {"message": "the stub must not be called"}


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    async with apiserver_stub(refuse_everything) as running:
        yield running


def client_for(stub: Stub, settings: ServerSettings) -> httpx.AsyncClient:
    app = build_app(settings, kube=stub.kube)
    # httpx does not run the lifespan; set up what it would.
    app.state.services = build_services(stub.kube, settings)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


BEARER = {"Authorization": "Bearer not-checked-before-validation"}


async def test_query_without_token_is_401_without_api_call(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.post("/graphql", json={"query": "{ viewer { username } }"})
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert stub.requests == []


async def test_too_deep_query_is_refused_before_any_api_call(stub: Stub) -> None:
    settings = ServerSettings(query_limits=QueryLimits(max_depth=3))
    query = (
        '{ workload(namespace: "a", name: "b") '
        "{ localQueue { clusterQueue { cohort { name } } } } }"
    )
    async with client_for(stub, settings) as client:
        response = await client.post("/graphql", json={"query": query}, headers=BEARER)
    errors = response.json()["errors"]
    assert "exceeds maximum operation depth" in errors[0]["message"]
    assert errors[0]["extensions"]["code"] == "BAD_REQUEST"
    assert stub.requests == []


async def test_too_many_aliases_and_tokens_are_refused(stub: Stub) -> None:
    settings = ServerSettings(query_limits=QueryLimits(max_aliases=2, max_tokens=50))
    aliases = "{ a: viewer { username } b: viewer { username } c: viewer { username } }"
    tokens = "{ " + " ".join(f"v{i}: viewer {{ username }}" for i in range(20)) + " }"
    async with client_for(stub, settings) as client:
        for query in (aliases, tokens):
            response = await client.post("/graphql", json={"query": query}, headers=BEARER)
            assert response.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert stub.requests == []


async def test_body_over_cap_is_413(stub: Stub) -> None:
    settings = ServerSettings(max_body_bytes=100)
    async with client_for(stub, settings) as client:
        response = await client.post("/graphql", content=b"{" + b" " * 200 + b"}", headers=BEARER)
    assert response.status_code == 413
    assert stub.requests == []


async def test_queries_over_get_can_be_turned_off(stub: Stub) -> None:
    async with client_for(stub, ServerSettings(allow_get_queries=False)) as client:
        response = await client.get(
            "/graphql", params={"query": "{ viewer { username } }"}, headers=BEARER
        )
    assert response.status_code in (400, 405)
    assert stub.requests == []


async def test_graphiql_page_is_served_to_browsers(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()
    assert "isHeadersEditorEnabled: true" in response.text  # for the Authorization header
    assert "shouldPersistHeaders: false" in response.text  # tokens stay out of localStorage


async def test_healthz(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        assert (await client.get("/healthz")).text == "ok"


async def test_unreachable_api_server_is_unavailable_not_a_crash(stub: Stub) -> None:
    # The stub answers 500 to the TokenReview: the caller learns the service is unavailable.
    async with client_for(stub, ServerSettings()) as client:
        response = await client.post(
            "/graphql", json={"query": "{ viewer { username } }"}, headers=BEARER
        )
    body = response.json()
    assert body["data"] == {"viewer": None}
    assert body["errors"][0]["extensions"]["code"] == "UNAVAILABLE"
    assert "not-checked" not in response.text  # the token is never echoed
    assert len(stub.requests) == 1
