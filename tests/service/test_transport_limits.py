"""Issue 22's transport findings against the real server, in both read modes: one size cap for
every document however it arrives (N1), malformed WebSocket frames closed with 4400 and never an
ERROR traceback (N2), several operations without operationName refused on every transport (N8).
The slow consumer (N6) is in test_subscription_streams.py. Server CPU per refusal is printed by
benchmarks/query_bomb.py (tests assert no timings)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.cluster.driver import Cluster
from tests.service.conftest import Server
from tests.service.live_client import MALFORMED_FRAMES, close_of, ws_url
from tests.service.test_bad_input import assert_error

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

PROTOCOL = "graphql-transport-ws"
MULTIPART_ACCEPT = 'multipart/mixed;subscriptionSpec="1.0", application/json'
TWO_SUBSCRIPTIONS = (
    'subscription Queue { clusterQueue(name: "cq-a") { name } } '
    'subscription Mine { workloads(namespace: "team-a") { count } }'
)


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


async def initialised(socket: ClientConnection, token: str) -> None:
    init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
    await socket.send(json.dumps(init))
    assert json.loads(await socket.recv())["type"] == "connection_ack"


# -- N1: one size cap ------------------------------------------------------------------------


async def test_compressed_comment_padded_subscribe_is_refused_by_its_inflated_size(
    server: Server, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """15 MiB of comment compresses (permessage-deflate) to some 15 KiB; it was parsed in full
    (6.7 s of CPU, /healthz held 15-24 s) for a caller without any RBAC. Now uvicorn's protocol
    stops inflating at --max-body-bytes and closes with 1009: nothing parses it."""
    caplog.set_level(logging.DEBUG)
    padded = "#" + " " * (15 << 20) + '\nsubscription { clusterQueue(name: "cq-a") { name } }'
    message = json.dumps({"id": "1", "type": "subscribe", "payload": {"query": padded}})
    async with connect(
        ws_url(server.url),
        subprotocols=[PROTOCOL],  # type: ignore[list-item]
        compression="deflate",
        max_size=None,
    ) as socket:
        await initialised(socket, cluster.token("nobody"))
        await socket.send(message)
        code, reason = await close_of(socket)
    assert code == 1009, reason
    assert errors_logged(caplog) == []
    # The server still answers, at once.
    assert (await server.http.get("/healthz")).status_code == 200


async def test_document_over_the_cap_is_refused_on_every_http_transport(
    server: Server, cluster: Cluster
) -> None:
    headers = {"Authorization": f"Bearer {cluster.token('nobody')}"}
    padded = {"query": "#" + " " * 70_000 + "\n{ __typename }"}
    plain = await server.http.post("/graphql", json=padded, headers=headers)
    assert_error(plain, 413, "BAD_REQUEST", "over 65536 bytes")
    streamed = await server.http.post(
        "/graphql", json=padded, headers={**headers, "Accept": MULTIPART_ACCEPT}
    )
    assert_error(streamed, 413, "BAD_REQUEST", "over 65536 bytes")


# -- N2: malformed WebSocket frames ----------------------------------------------------------


@pytest.mark.parametrize("frame", MALFORMED_FRAMES.values(), ids=MALFORMED_FRAMES.keys())
@pytest.mark.parametrize("protocol", [PROTOCOL, "graphql-ws"])
async def test_malformed_first_frame_is_closed_with_4400_and_one_debug_line(
    server: Server, frame: str, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Before any token: each raised inside strawberry's handler (TypeError, RecursionError),
    one ERROR traceback per frame, and the socket dropped without a close code."""
    caplog.set_level(logging.DEBUG)
    async with connect(ws_url(server.url), subprotocols=[protocol]) as socket:  # type: ignore[list-item]
        await socket.send(frame)
        code, _ = await close_of(socket)
    assert code == 4400
    assert errors_logged(caplog) == []
    lines = [r for r in caplog.records if r.getMessage().startswith("WebSocket closed with 4400")]
    assert [r.levelno for r in lines] == [logging.DEBUG]


async def test_pings_before_connection_init_are_limited(server: Server) -> None:
    """A client needs no ping before connection_init; ten are answered, the 11th closes 4429."""
    async with connect(ws_url(server.url), subprotocols=[PROTOCOL]) as socket:  # type: ignore[list-item]
        pongs = 0
        for _ in range(10):
            await socket.send('{"type": "ping"}')
            pongs += json.loads(await socket.recv()) == {"type": "pong"}
        await socket.send('{"type": "ping"}')
        code, reason = await close_of(socket)
    assert pongs == 10
    assert code == 4429, reason


# -- N8: operationName required for several operations -----------------------------------------


async def test_two_subscriptions_without_operation_name_over_multipart(
    server: Server, cluster: Cluster
) -> None:
    """Multipart ran the first of the two (strawberry takes the first operation's name)."""
    headers = {"Authorization": f"Bearer {cluster.token('alice')}", "Accept": MULTIPART_ACCEPT}
    body: dict[str, Any] = {"query": TWO_SUBSCRIPTIONS}
    async with server.http.stream("POST", "/graphql", json=body, headers=headers) as response:
        text = (await response.aread()).decode()
    assert "Traceback" not in text
    assert "2 operations (Queue, Mine)" in text, text
    assert "BAD_REQUEST" in text, text
    assert server.app.state.services.live.total == 0


async def test_two_queries_without_operation_name_over_http(
    server: Server, cluster: Cluster
) -> None:
    document = "query Me { viewer { username } } query Queues { viewer { groups } }"
    headers = {"Authorization": f"Bearer {cluster.token('alice')}"}
    response = await server.http.post("/graphql", json={"query": document}, headers=headers)
    body = assert_error(response, 200, "BAD_REQUEST", "2 operations (Me, Queues)")
    assert body["data"] is None
    named = await server.http.post(
        "/graphql", json={"query": document, "operationName": "Me"}, headers=headers
    )
    assert named.json()["data"]["viewer"]["username"] == "alice"


async def test_two_subscriptions_without_operation_name_over_websocket(
    server: Server, cluster: Cluster
) -> None:
    async with connect(ws_url(server.url), subprotocols=[PROTOCOL]) as socket:  # type: ignore[list-item]
        await initialised(socket, cluster.token("alice"))
        subscribe = {"id": "1", "type": "subscribe", "payload": {"query": TWO_SUBSCRIPTIONS}}
        await socket.send(json.dumps(subscribe))
        answer = json.loads(await socket.recv())
    assert answer["type"] == "error", answer
    assert answer["payload"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "2 operations (Queue, Mine)" in answer["payload"][0]["message"]
    assert server.app.state.services.live.total == 0
