"""ASGI middleware: concurrency capped, client impersonation headers dropped, body size and
read time capped, deadline enforced."""

from __future__ import annotations

import asyncio
import functools
import json
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.http.streaming import MultipartSubscriptionTransport

from kueue_graphql.http.document_size import too_large

log = logging.getLogger(__name__)


def error_body(code: str, message: str) -> bytes:
    """The GraphQL error shape, for answers given outside of GraphQL."""
    return json.dumps({"errors": [{"message": message, "extensions": {"code": code}}]}).encode()


async def _send_json(
    send: Send,
    status: int,
    code: str,
    message: str,
    extra_headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    body = error_body(code, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra_headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


_MULTIPART_SUBSCRIPTIONS = MultipartSubscriptionTransport()


def is_subscription_stream(scope: Scope) -> bool:
    """An HTTP request asking for a subscription as a multipart stream (`Accept:
    multipart/mixed;subscriptionSpec="1.0"`). It lives as long as the subscription, so the
    request deadline and the concurrency cap do not apply; the subscription caps do."""
    for name, value in scope.get("headers") or ():
        if name == b"accept" and _asks_for_stream(value):
            return True
    return False


@functools.lru_cache(maxsize=64)
def _asks_for_stream(accept: bytes) -> bool:
    # Asked several times per request, and parsing a media type is not cheap; clients send
    # few distinct Accept headers (the cache is bounded for those that vary it).
    text = accept.decode("latin-1")
    return any(_MULTIPART_SUBSCRIPTIONS.accepts(part) for part in text.split(","))


class ConcurrencyLimit:
    """At most `max_requests` HTTP requests in the application at once; the next one gets 503
    UNAVAILABLE with `Retry-After: 1` at once instead of queueing behind them. `/healthz` is
    not counted, so a busy server is not mistaken for a dead one."""

    def __init__(self, app: ASGIApp, max_requests: int) -> None:
        self.app = app
        self.max_requests = max_requests
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/healthz" or is_subscription_stream(scope):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            await _send_json(
                send,
                503,
                "UNAVAILABLE",
                f"the server is busy ({self.max_requests} requests in progress); retry shortly",
                ((b"retry-after", b"1"),),
            )
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


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
    """Refuses bodies over `max_bytes` with 413 before the GraphQL layer parses anything, and
    bodies not received within `timeout_seconds` with 408 (a client sending one byte every few
    seconds would otherwise hold its connection and request slot for as long as it likes)."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_seconds: float = 10.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds

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
                    send, 413, "BAD_REQUEST", too_large("request body", self.max_bytes)
                )
                return
        chunks: list[bytes] = []
        try:
            async with asyncio.timeout(self.timeout_seconds):
                complete = await self._read(receive, chunks)
        except TimeoutError:
            await _send_json(
                send,
                408,
                "BAD_REQUEST",
                f"the request body did not arrive within {self.timeout_seconds:g} s",
                ((b"connection", b"close"),),
            )
            return
        if complete is None:
            return
        if not complete:
            await _send_json(send, 413, "BAD_REQUEST", too_large("request body", self.max_bytes))
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive, chunks: list[bytes]) -> bool | None:
        """Reads the body into `chunks`: True when whole, False when over the cap, None when
        the client went away."""
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return False
            chunks.append(chunk)
            if not message.get("more_body", False):
                return True


class Deadline:
    """A backstop for the per-request deadline: API calls already stop at the deadline (the
    meter refuses them), this also stops work that is not waiting on the API server."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_subscription_stream(scope):
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
