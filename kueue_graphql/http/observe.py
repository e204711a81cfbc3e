"""One access-log line and one metrics sample per GraphQL request, a request id on every
response, and the log format (`--log-format text|json`).

The line names the caller (the username TokenReview vouched for) but never a token: the
Authorization header is not read here at all.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kueue_graphql.context import RequestContext
from kueue_graphql.observe.metrics import REQUEST_SECONDS, REQUESTS

access_log = logging.getLogger("kueue_graphql.access")

REQUEST_ID_HEADER = "x-request-id"
# A client's id is kept when it is a plain token (a UUID, a trace id); anything else, replaced.
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_STATUS_OUTCOMES = {401: "UNAUTHENTICATED", 403: "FORBIDDEN", 504: "UNAVAILABLE"}


@dataclass
class RequestRecord:
    """Per-request facts the GraphQL view leaves for the access log (in scope["state"])."""

    request_id: str
    context: RequestContext | None = None
    outcome: str | None = None


def request_record(scope: Scope) -> RequestRecord | None:
    record = scope.get("state", {}).get("kueue_graphql_request")
    return record if isinstance(record, RequestRecord) else None


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name.lower() == REQUEST_ID_HEADER.encode():
            candidate: str = value.decode("latin-1")
            if _CLIENT_REQUEST_ID.fullmatch(candidate):
                return candidate
    return uuid.uuid4().hex


class RequestLog:
    """Outermost middleware: request id in and out, then the access line and metrics for
    requests to `path` (the GraphQL endpoint)."""

    def __init__(self, app: ASGIApp, path: str = "/graphql") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        record = RequestRecord(_request_id(scope))
        scope.setdefault("state", {})["kueue_graphql_request"] = record
        started = time.monotonic()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.encode(), record.request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if scope["path"] == self.path and scope["method"] in ("GET", "POST"):
                self._observe(scope, record, status, time.monotonic() - started)

    @staticmethod
    def _observe(scope: Scope, record: RequestRecord, status: int, seconds: float) -> None:
        context = record.context
        operation_type = context.operation.type if context else "none"
        outcome = record.outcome or _outcome_of_status(status)
        if scope["method"] == "GET" and context is None and status == 200:
            return  # the GraphiQL page, not a request
        REQUESTS.labels(operation_type, outcome).inc()
        REQUEST_SECONDS.labels(operation_type).observe(seconds)
        identity = context.identity.known() if context else None
        access_log.info(
            "graphql request %s %s %s in %.1f ms",
            record.request_id,
            (context.operation.name if context else None) or "-",
            outcome,
            seconds * 1000,
            extra={
                "request": {
                    "requestId": record.request_id,
                    "operationName": context.operation.name if context else None,
                    "operationType": operation_type,
                    "outcome": outcome,
                    "status": status,
                    "durationMs": round(seconds * 1000, 1),
                    "apiCalls": len(context.meter.calls) if context else 0,
                    "username": identity.username if identity else None,
                }
            },
        )


def _outcome_of_status(status: int) -> str:
    if 200 <= status < 300:
        return "OK"
    if status in _STATUS_OUTCOMES:
        return _STATUS_OUTCOMES[status]
    return "BAD_REQUEST" if 400 <= status < 500 else "INTERNAL"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and a request's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = getattr(record, "request", None)
        if isinstance(request, dict):
            line.update(request)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_logging(log_format: str, level: str) -> None:
    """Root logging for `serve`; uvicorn's loggers propagate into it."""
    handler = logging.StreamHandler()
    if log_format == "json":
        formatter: logging.Formatter = JsonFormatter()
        formatter.converter = time.gmtime
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
