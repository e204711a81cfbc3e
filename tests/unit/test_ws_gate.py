"""What a WebSocket client sends is refused with a close code, never an ERROR traceback; one
size cap for every document; operationName required for several operations. Through a real
uvicorn server on loopback (our protocol configuration: size cap after permessage-deflate), with
an API-server stub that only answers TokenReview: nothing here reads any object."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from kueue_graphql.http import ServerSettings
from kueue_graphql.http.websocket import MAX_MESSAGES_BEFORE_INIT
from tests.service.conftest import Server, running_server
from tests.service.live_client import MALFORMED_FRAMES, close_of, ws_url
from tests.unit.apiserver_stub import Stub, apiserver_stub

CAP = 4096


def reviews_only(method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    if path.endswith("/tokenreviews"):
        user = {"username": "alice", "uid": "u-1", "groups": ["system:authenticated"]}
        return 201, {"status": {"authenticated": True, "user": user}}
    if path.endswith("/selfsubjectaccessreviews"):
        return 201, {"status": {"allowed": True}}
    return 500, {"message": "the stub must not be read"}


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    async with apiserver_stub(reviews_only) as running:
        yield running


@pytest.fixture
async def server(stub: Stub, tmp_path: Path) -> AsyncIterator[Server]:
    host = stub.kube.api_client.configuration.host
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "stub", "cluster": {"server": host}}],
                "users": [{"name": "service", "user": {"token": "service-token"}}],
                "contexts": [{"name": "stub", "context": {"cluster": "stub", "user": "service"}}],
                "current-context": "stub",
            }
        )
    )
    settings = ServerSettings(max_body_bytes=CAP, allow_get_queries=True)
    async with running_server(kubeconfig, settings=settings, log_level="debug") as running:
        yield running


def calls(stub: Stub) -> list[str]:
    """API calls after the server's start (its own access checks at start left out)."""
    return [r.path for r in stub.requests if not r.path.endswith("/selfsubjectaccessreviews")]


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("frame", MALFORMED_FRAMES.values(), ids=MALFORMED_FRAMES.keys())
async def test_malformed_first_frame_is_closed_with_4400(
    server: Server, frame: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with connect(ws_url(server.url), subprotocols=["graphql-transport-ws"]) as socket:  # type: ignore[list-item]
        await socket.send(frame)
        code, _ = await close_of(socket)
    assert code == 4400
    assert errors_logged(caplog) == []
    refused = [r for r in caplog.records if "WebSocket closed with 4400" in r.getMessage()]
    assert len(refused) == 1
    assert refused[0].levelno == logging.DEBUG


async def test_malformed_frame_on_the_legacy_protocol_is_closed_with_4400(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(ws_url(server.url), subprotocols=["graphql-ws"]) as socket:  # type: ignore[list-item]
        await socket.send("[]")
        code, _ = await close_of(socket)
    assert code == 4400
    assert errors_logged(caplog) == []


async def test_pings_before_connection_init_are_limited(server: Server) -> None:
    async with connect(ws_url(server.url), subprotocols=["graphql-transport-ws"]) as socket:  # type: ignore[list-item]
        for _ in range(MAX_MESSAGES_BEFORE_INIT):
            await socket.send(json.dumps({"type": "ping"}))
            assert json.loads(await socket.recv()) == {"type": "pong"}
        await socket.send(json.dumps({"type": "ping"}))
        code, reason = await close_of(socket)
    assert (code, reason) == (4429, "more than 10 messages before connection_init")


async def _initialised(socket: ClientConnection) -> None:
    init = {"type": "connection_init", "payload": {"Authorization": "Bearer some-token"}}
    await socket.send(json.dumps(init))
    assert json.loads(await socket.recv())["type"] == "connection_ack"


async def test_compressed_padded_subscribe_is_refused_by_its_decompressed_size(
    server: Server, stub: Stub, caplog: pytest.LogCaptureFixture
) -> None:
    # 4 MiB of comment compresses (permessage-deflate) to a few KiB on the wire.
    padded = "#" + " " * (4 << 20) + '\nsubscription { clusterQueue(name: "x") { name } }'
    message = json.dumps({"id": "1", "type": "subscribe", "payload": {"query": padded}})
    async with connect(
        ws_url(server.url),
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        compression="deflate",
    ) as socket:
        await _initialised(socket)
        await socket.send(message)
        code, _ = await close_of(socket)
    assert code == 1009
    assert calls(stub) == ["/apis/authentication.k8s.io/v1/tokenreviews"]
    assert errors_logged(caplog) == []


async def test_two_operations_without_operation_name_over_websocket(server: Server) -> None:
    document = (
        'subscription A { clusterQueue(name: "x") { name } } '
        'subscription B { workload(namespace: "a", name: "b") { type } }'
    )
    async with connect(ws_url(server.url), subprotocols=["graphql-transport-ws"]) as socket:  # type: ignore[list-item]
        await _initialised(socket)
        subscribe = {"id": "1", "type": "subscribe", "payload": {"query": document}}
        await socket.send(json.dumps(subscribe))
        answer = json.loads(await socket.recv())
    assert answer["type"] == "error", answer
    assert "2 operations (A, B)" in answer["payload"][0]["message"]
    assert answer["payload"][0]["extensions"]["code"] == "BAD_REQUEST"


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_two_operations_without_operation_name_over_http(
    server: Server, stub: Stub, method: str
) -> None:
    document = "query A { __typename } query B { viewer { username } }"
    headers = {"Authorization": "Bearer some-token"}
    if method == "POST":
        response = await server.http.post("/graphql", json={"query": document}, headers=headers)
    else:
        response = await server.http.get("/graphql", params={"query": document}, headers=headers)
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert "2 operations (A, B)" in error["message"]
    assert calls(stub) == []


async def test_get_query_string_over_the_cap_is_414(server: Server, stub: Stub) -> None:
    query = "#" + "x" * CAP + "\n{ __typename }"
    response = await server.http.get(
        "/graphql", params={"query": query}, headers={"Authorization": "Bearer t"}
    )
    assert response.status_code == 414
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert calls(stub) == []


async def test_post_body_over_the_cap_is_413(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post(
            "/graphql",
            json={"query": "#" + "x" * CAP + "\n{ __typename }"},
            headers={"Authorization": "Bearer t"},
        )
    assert response.status_code == 413
