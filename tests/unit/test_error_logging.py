"""Expected errors (a stable `extensions.code`) are one DEBUG line; only unexpected exceptions
are logged at ERROR with their traceback (and stay masked for the caller)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from kueue_graphql.http import ServerSettings, build_app
from kueue_graphql.http.services import build_services
from kueue_graphql.kube.authz import Authorizer
from tests.unit.apiserver_stub import Stub, apiserver_stub

TOKEN = "secret-token-never-logged"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def alice_denied_everything(method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    if path.endswith("/tokenreviews"):
        user = {"username": "alice", "uid": "u-1", "groups": ["team-a", "system:authenticated"]}
        return 201, {"status": {"authenticated": True, "user": user}}
    if path.endswith("/subjectaccessreviews"):
        return 201, {"status": {"allowed": False}}
    return 500, {"message": "the stub must not be read"}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with apiserver_stub(alice_denied_everything) as stub:
        yield _client(stub)


def _client(stub: Stub) -> httpx.AsyncClient:
    settings = ServerSettings()
    app = build_app(settings, kube=stub.kube)
    app.state.services = build_services(stub.kube, settings)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(("kueue_graphql", "strawberry"))]


async def test_expected_errors_are_one_debug_line_without_traceback(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with client:
        denied = await client.post(
            "/graphql", json={"query": '{ clusterQueue(name: "cq-a") { name } }'}, headers=HEADERS
        )
        invalid = await client.post(
            "/graphql", json={"query": '{ clusterQueue(name: "cq-a") { nope } }'}, headers=HEADERS
        )
        bad_name = await client.post(
            "/graphql", json={"query": '{ clusterQueue(name: "../x") { name } }'}, headers=HEADERS
        )
    assert denied.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert invalid.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert bad_name.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"

    records = _records(caplog)
    errors = [r for r in records if r.name == "kueue_graphql.graph.errors"]
    assert [r.getMessage() for r in errors] == [
        "error FORBIDDEN at clusterQueue",
        "error BAD_REQUEST at -",
        "error BAD_REQUEST at clusterQueue",
    ]
    assert all(r.levelno == logging.DEBUG for r in errors)
    assert not [r for r in records if r.levelno >= logging.WARNING]
    assert not [r for r in records if r.exc_info]
    assert not [r for r in records if r.name.startswith("strawberry")]
    logged = caplog.text
    assert TOKEN not in logged
    assert "cq-a" not in logged  # the caller's data stays out: code and path only


async def test_unexpected_exception_is_an_error_with_traceback_and_masked(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: object, **kwargs: object) -> bool:
        raise RuntimeError("internal detail: the authz cache broke")

    monkeypatch.setattr(Authorizer, "allowed", broken)
    caplog.set_level(logging.DEBUG)
    async with client:
        response = await client.post(
            "/graphql", json={"query": '{ clusterQueue(name: "cq-a") { name } }'}, headers=HEADERS
        )
    body = response.json()
    assert body["errors"][0]["message"] == "Unexpected error."
    assert body["errors"][0]["extensions"] == {"code": "INTERNAL"}
    assert "internal detail" not in response.text

    errors = [r for r in _records(caplog) if r.levelno >= logging.ERROR]
    assert len(errors) == 1  # once, not again by strawberry
    assert errors[0].getMessage() == "unexpected error at clusterQueue"
    assert errors[0].exc_info is not None
    assert isinstance(errors[0].exc_info[1], RuntimeError)
    assert TOKEN not in caplog.text
