"""How uvicorn runs the app: one place for the CLI and the tests, so both get the same
connection limits (keep-alive, header deadline), the access-log redaction and the same two
listeners.

The API (`--host`/`--port`) and Prometheus' `/metrics` (`--metrics-host`/`--metrics-port`) are two
sockets of one uvicorn server: they start, stop and take signals together, and a request is
routed by the local port it arrived on. The API listener has no `/metrics` (404) and the
metrics listener nothing else, so a NetworkPolicy can open the API to callers and the
metrics port to the monitoring namespace only.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from kueue_graphql.http.access_log import install_access_log_redaction
from kueue_graphql.http.connection import with_header_deadline
from kueue_graphql.http.document_size import document_size_limit
from kueue_graphql.http.probes import build_metrics_app
from kueue_graphql.http.settings import ServerSettings
from kueue_graphql.http.ws_protocol import with_slow_consumer_close

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Listener:
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def listener_problem(api: Listener, metrics: Listener | None) -> str | None:
    """Why these two listeners cannot be served side by side, or None. Requests are routed by
    their local port, so the ports must differ even on different addresses."""
    if metrics is not None and metrics.port == api.port:
        return (
            f"--metrics-port {metrics.port} is the API's --port: give the metrics listener a "
            "port of its own (or 0 for none)"
        )
    return None


class ByListener:
    """The API app, and the metrics app for connections that arrived on the metrics port.
    Lifespan events go to the API app (the metrics app has none of its own)."""

    def __init__(self, api: ASGIApp, metrics: ASGIApp, metrics_port: int) -> None:
        self.api = api
        self.metrics = metrics
        self.metrics_port = metrics_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        local = scope.get("server")
        if scope["type"] != "lifespan" and local is not None and local[1] == self.metrics_port:
            await self.metrics(scope, receive, send)
        else:
            await self.api(scope, receive, send)


def bound_socket(listener: Listener) -> socket.socket:
    """A listening TCP socket (OSError when the address is taken or not local)."""
    family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
    sock = socket.create_server((listener.host, listener.port), family=family)
    sock.set_inheritable(True)
    return sock


class ListeningServer(uvicorn.Server):
    """uvicorn on the API listener and, when there is one, the metrics listener."""

    def __init__(self, config: uvicorn.Config, api: Listener, metrics: Listener | None) -> None:
        super().__init__(config)
        self.api = api
        self.metrics = metrics

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        if sockets is not None:
            await super().serve(sockets)
            return
        listeners = [self.api] if self.metrics is None else [self.api, self.metrics]
        bound: list[socket.socket] = []
        try:
            for listener in listeners:
                bound.append(bound_socket(listener))
            # uvicorn logs its "running on" line only for an address it binds itself.
            log.info(
                "listening on %s (API)%s",
                self.api.url,
                "" if self.metrics is None else f", {self.metrics.url} (/metrics)",
            )
            await super().serve(bound)
        finally:
            # Closed by uvicorn's shutdown, but not when its startup fails.
            for sock in bound:
                sock.close()


def listening_server(
    app: Starlette,
    settings: ServerSettings,
    *,
    api: Listener,
    metrics: Listener | None,
    log_level: str = "info",
    access_log: bool = True,
    protocol: type[asyncio.Protocol] = AutoHTTPProtocol,
    log_config: Any = LOGGING_CONFIG,
) -> ListeningServer:
    """The server for `app` on `api`, with `/metrics` on `metrics` (None: no metrics listener)."""
    served: ASGIApp = app
    if metrics is not None:
        served = ByListener(app, build_metrics_app(app), metrics.port)
    config = uvicorn.Config(
        served,
        host=api.host,
        port=api.port,
        log_level=log_level,
        # The request line is logged, headers are not; tokens in the query string are
        # redacted by the access-log filter.
        access_log=access_log,
        http=with_header_deadline(protocol, settings.header_timeout_seconds),
        timeout_keep_alive=settings.keep_alive_timeout_seconds,
        # One WebSocket implementation, known: websockets' sans-I/O protocol, whose max_size
        # bounds a message after permessage-deflate (a 15 MiB comment compresses to ~15 KiB).
        ws=with_slow_consumer_close(settings.live_limits.send_timeout_seconds),
        ws_max_size=document_size_limit(settings),
        ws_per_message_deflate=True,
        ws_ping_interval=settings.ws_ping_interval_seconds,
        ws_ping_timeout=settings.ws_ping_timeout_seconds,
        lifespan="on",
        log_config=log_config,
    )
    # uvicorn configures its loggers in Config(); the filter goes on after that.
    install_access_log_redaction()
    return ListeningServer(config, api, metrics)
