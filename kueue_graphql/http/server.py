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
from kueue_graphql.http.settings import ServerSettings


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
        lifespan="on",
        log_config=log_config,
    )
    # uvicorn configures its loggers in Config(); the filter goes on after that.
    install_access_log_redaction()
    return config
