"""A real graphql-transport-ws client (the `websockets` library), for tests and the benchmark."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

PROTOCOL = "graphql-transport-ws"


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
