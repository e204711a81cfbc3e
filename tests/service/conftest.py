"""A real kueue-graphql server (in-process uvicorn on 127.0.0.1) against the real cluster."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from kueue_graphql.http import AuthMode, ReadMode, ServerSettings, build_app
from kueue_graphql.http.server import Listener, listening_server
from kueue_graphql.kube.client import KubeClient
from tests.cluster.driver import Cluster
from tests.http_limits import SERVER_CLIENT_LIMITS
from tests.waiting import READY_SECONDS, async_wait_until


def free_port() -> int:
    (port,) = free_ports(1)
    return port


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on the loopback address now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class Server:
    url: str
    app: Any
    http: httpx.AsyncClient
    # The metrics listener (/metrics), apart from the API's.
    metrics: httpx.AsyncClient

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
    kubeconfig: Path,
    auth_mode: AuthMode = AuthMode.TOKEN_REVIEW,
    *,
    settings: ServerSettings | None = None,
    log_level: str = "warning",
    **overrides: Any,
) -> AsyncIterator[Server]:
    """The server as `kueue-graphql serve` runs it (same uvicorn configuration); `overrides`
    replace single ServerSettings fields."""
    settings = settings or ServerSettings()
    settings = dataclasses.replace(
        settings, kubeconfig=str(kubeconfig), auth_mode=auth_mode, **overrides
    )
    app = build_app(settings)
    api_port, metrics_port = free_ports(2)
    api, metrics = Listener("127.0.0.1", api_port), Listener("127.0.0.1", metrics_port)
    server = listening_server(app, settings, api=api, metrics=metrics, log_level=log_level)
    task = asyncio.create_task(server.serve())

    async def started() -> bool:
        if task.done():  # it will never start: its exception, or it returned
            task.result()
            raise AssertionError("kueue-graphql exited before it started listening")
        return bool(server.started)

    await async_wait_until("kueue-graphql listening", started, READY_SECONDS, interval=0.05)
    async with (
        httpx.AsyncClient(base_url=api.url, timeout=30, limits=SERVER_CLIENT_LIMITS) as http,
        httpx.AsyncClient(
            base_url=metrics.url, timeout=30, limits=SERVER_CLIENT_LIMITS
        ) as metrics_http,
    ):
        try:
            yield Server(url=api.url, app=app, http=http, metrics=metrics_http)
        finally:
            server.should_exit = True
            await task


@pytest.fixture(scope="session")
def service_kubeconfig(cluster: Cluster) -> Path:
    """The service's own kubeconfig: ServiceAccount kueue-graphql/kueue-graphql, which may only
    review tokens and access and impersonate callers."""
    assert cluster.server_kubeconfig.is_file(), "the cluster driver writes this kubeconfig"
    return cluster.server_kubeconfig


BOTH_READ_MODES = "both_read_modes"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests in modules (or classes) marked `both_read_modes` run once per read mode: their
    `server` is the impersonate-mode server, then the cache-mode one."""
    if "read_mode" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        BOTH_READ_MODES
    ):
        metafunc.parametrize(
            "read_mode", [m.value for m in ReadMode], indirect=True, scope="session"
        )


# The read mode of every other module's `server`: impersonate, unless a run asks for another
# (`KGQL_TEST_READ_MODE=cache make test` runs the whole service suite in cache mode).
DEFAULT_READ_MODE = os.environ.get("KGQL_TEST_READ_MODE", ReadMode.IMPERSONATE.value)


@pytest.fixture(scope="session")
def read_mode(request: pytest.FixtureRequest) -> ReadMode:
    return ReadMode(getattr(request, "param", DEFAULT_READ_MODE))


async def wait_ready(server: Server, seconds: float = READY_SECONDS) -> None:
    """Until /readyz answers ok (in cache mode: every informer synced)."""
    answers: list[str] = []

    async def ready() -> bool:
        response = await server.http.get("/readyz")
        answers[:] = [response.text]
        return response.status_code == 200

    await async_wait_until("/readyz ok", ready, seconds, detail=lambda: answers[0])


@asynccontextmanager
async def server_in_mode(
    cluster: Cluster, read_mode: ReadMode, **overrides: Any
) -> AsyncIterator[Server]:
    """A server in `read_mode`: in cache mode under the ServiceAccount that may read the Kueue
    kinds (the impersonate-mode one may not), started once its informers have synced."""
    cache = read_mode is ReadMode.CACHE
    kubeconfig = cluster.cache_server_kubeconfig if cache else cluster.server_kubeconfig
    async with running_server(kubeconfig, read_mode=read_mode, **overrides) as started:
        await wait_ready(started)
        yield started


@pytest.fixture(scope="session")
async def server(
    service_kubeconfig: Path, cluster: Cluster, read_mode: ReadMode
) -> AsyncIterator[Server]:
    async with server_in_mode(cluster, read_mode) as started:
        yield started
