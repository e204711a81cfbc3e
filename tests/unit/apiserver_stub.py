"""A tiny HTTP endpoint that records what the Kubernetes client sends.

Only for unit tests of the transport and the caches: it shows the exact header lines on the wire
(repeated Impersonate-Group lines) and counts requests. Integration tests use the real API
server instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from kueue_graphql.kube.client import KubeClient
from kueue_graphql.kube.transport import install_repeated_header_rest_client

Handler = Callable[[str, str, dict[str, Any] | None], tuple[int, dict[str, Any]]]


@dataclass
class Recorded:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: dict[str, Any] | None


@dataclass
class Stub:
    kube: KubeClient
    requests: list[Recorded] = field(default_factory=list)


@asynccontextmanager
async def apiserver_stub(handler: Handler) -> AsyncIterator[Stub]:
    recorded: list[Recorded] = []

    async def handle(request: web.Request) -> web.Response:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        recorded.append(Recorded(request.method, request.path, list(request.headers.items()), body))
        status, answer = handler(request.method, request.path, body)
        return web.json_response(answer, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    configuration = k8s_client.Configuration(host=f"http://127.0.0.1:{port}")
    api_client = k8s_client.ApiClient(configuration)
    install_repeated_header_rest_client(api_client)
    stub = Stub(KubeClient(api_client), recorded)
    try:
        yield stub
    finally:
        await api_client.rest_client.close()
        await api_client._replaced_rest_client.close()
        await runner.cleanup()
