"""ASGI middleware: client impersonation headers dropped, body size capped, deadline enforced."""

from __future__ import annotations

import asyncio
import json
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


async def _send_json(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"errors": [{"message": message, "extensions": {"code": code}}]}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class DropImpersonationHeaders:
    """A client must never choose who the service acts as: Impersonate-* headers are removed
    before anything else sees the request (the service never forwards client headers anyway)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = scope["headers"]
            kept = [(k, v) for k, v in headers if not k.lower().startswith(b"impersonate-")]
            if len(kept) != len(headers):
                log.info("dropped client-sent Impersonate-* headers")
                scope = dict(scope, headers=kept)
        await self.app(scope, receive, send)


class BodySizeLimit:
    """Refuses bodies over `max_bytes` with 413 before the GraphQL layer parses anything."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if (
                name.lower() == b"content-length"
                and value.isdigit()
                and int(value) > self.max_bytes
            ):
                await _send_json(
                    send, 413, "BAD_REQUEST", f"request body over {self.max_bytes} bytes"
                )
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _send_json(
                    send, 413, "BAD_REQUEST", f"request body over {self.max_bytes} bytes"
                )
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class Deadline:
    """A backstop for the per-request deadline: API calls already stop at the deadline (the
    meter refuses them), this also stops work that is not waiting on the API server."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            async with asyncio.timeout(self.seconds):
                await self.app(scope, receive, tracking_send)
        except TimeoutError:
            if not started:
                await _send_json(send, 504, "UNAVAILABLE", "request deadline exceeded")
