"""How uvicorn runs the app: one place for the CLI and the tests, so both get the same
connection limits (keep-alive, header deadline) and the access-log redaction."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from kueue_graphql.http.access_log import install_access_log_redaction
from kueue_graphql.http.connection import with_header_deadline
from kueue_graphql.http.document_size import document_size_limit
from kueue_graphql.http.settings import ServerSettings
from kueue_graphql.http.ws_protocol import with_slow_consumer_close


def uvicorn_config(
    app: Starlette,
    settings: ServerSettings,
    *,
    host: str,
    port: int,
    log_level: str = "info",
    access_log: bool = True,
    protocol: type[asyncio.Protocol] = AutoHTTPProtocol,
    log_config: Any = LOGGING_CONFIG,
) -> uvicorn.Config:
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
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
    return config
