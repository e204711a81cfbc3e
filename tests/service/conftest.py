"""A real kueue-graphql server (in-process uvicorn on 127.0.0.1) against the real cluster."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from kueue_graphql.http import AuthMode, ServerSettings, build_app
from kueue_graphql.kube.client import KubeClient
from tests.cluster.driver import Cluster


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    url: str
    app: Any
    http: httpx.AsyncClient

    @property
    def kube(self) -> KubeClient:
        kube: KubeClient = self.app.state.services.kube
        return kube

    async def post(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        token: str | None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        return await self.http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=all_headers
        )

    async def query(
        self, query: str, variables: dict[str, Any] | None = None, *, token: str | None
    ) -> dict[str, Any]:
        response = await self.post(query, variables, token=token)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


@asynccontextmanager
async def running_server(
    kubeconfig: Path, auth_mode: AuthMode = AuthMode.TOKEN_REVIEW, **settings: Any
) -> AsyncIterator[Server]:
    app = build_app(ServerSettings(kubeconfig=str(kubeconfig), auth_mode=auth_mode, **settings))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started or task.done():
            break
        await asyncio.sleep(0.05)
    assert server.started, "kueue-graphql did not start"
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        try:
            yield Server(url=url, app=app, http=http)
        finally:
            server.should_exit = True
            await task


@pytest.fixture(scope="session")
def service_kubeconfig(cluster: Cluster) -> Path:
    """The service's own kubeconfig: ServiceAccount kueue-graphql/kueue-graphql, which may only
    review tokens and access and impersonate callers."""
    assert cluster.server_kubeconfig.is_file(), "the cluster driver writes this kubeconfig"
    return cluster.server_kubeconfig


@pytest.fixture(scope="session")
async def server(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig) as started:
        yield started
