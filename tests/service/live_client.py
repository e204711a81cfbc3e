"""A real graphql-transport-ws client (the `websockets` library), for tests and the benchmark."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

PROTOCOL = "graphql-transport-ws"

# First frames that raised inside strawberry's handlers (issue 22, N2); each must close 4400.
MALFORMED_FRAMES = {
    "array": "[]",
    "number": "1",
    "string": '"x"',
    "null": "null",
    "1000-deep": "[" * 1000 + "]" * 1000,
    "40-deep": "[" * 40 + "]" * 40,
    "not-json": "{nope",
    "type-number": '{"type": 5}',
    "id-list": '{"type": "subscribe", "id": ["a"], "payload": {"query": "{ __typename }"}}',
    "query-number": '{"type": "subscribe", "id": "1", "payload": {"query": 7}}',
    "init-payload-list": '{"type": "connection_init", "payload": []}',
    "ping-payload-number": '{"type": "ping", "payload": 1}',
}


class Subscriber:
    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket

    async def subscribe(self, op_id: str, query: str, variables: dict[str, Any]) -> None:
        message = {
            "id": op_id,
            "type": "subscribe",
            "payload": {"query": query, "variables": variables},
        }
        await self.socket.send(json.dumps(message))

    async def complete(self, op_id: str) -> None:
        await self.socket.send(json.dumps({"id": op_id, "type": "complete"}))

    async def receive(self) -> dict[str, Any]:
        """The next message that is not a ping (pings are answered)."""
        while True:
            message: dict[str, Any] = json.loads(await self.socket.recv())
            if message["type"] == "ping":
                await self.socket.send(json.dumps({"type": "pong"}))
                continue
            return message


@asynccontextmanager
async def subscriber(base_url: str, token: str | None) -> AsyncIterator[Subscriber]:
    url = base_url.replace("http://", "ws://") + "/graphql"
    async with connect(url, subprotocols=[PROTOCOL], max_size=2**22) as socket:  # type: ignore[list-item]
        payload = {"Authorization": f"Bearer {token}"} if token else {}
        await socket.send(json.dumps({"type": "connection_init", "payload": payload}))
        ack = json.loads(await socket.recv())
        assert ack["type"] == "connection_ack", ack
        yield Subscriber(socket)


def ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://") + "/graphql"


async def close_of(socket: ClientConnection) -> tuple[int, str]:
    """Reads until the server closes the socket (within 30 s): its close code and reason."""

    async def read_all() -> None:
        while True:
            await socket.recv()

    with pytest.raises(ConnectionClosed) as closed:
        await asyncio.wait_for(read_all(), 30)
    frame = closed.value.rcvd
    assert frame is not None, "the server dropped the socket without a close frame"
    return frame.code, frame.reason
