"""The API server stops answering mid-load and comes back.

The shared control plane's kube-apiserver is frozen with SIGSTOP (its TCP connections stay
open and new ones are accepted by the kernel, nothing is answered: the worst kind of outage
for a client) for at most `STOP_SECONDS`, then resumed with SIGCONT, always (finally). The
controllers and Kueue run without leader election here, so they simply retry.

While it is stopped: every error is UNAVAILABLE (never FORBIDDEN, NOT_FOUND, UNAUTHENTICATED,
INTERNAL or a 5xx) and /readyz says 503 within 2 s. After it resumes: /readyz is OK again and
the answers are what kubectl shows. No asyncio task or file descriptor is left behind by the
failed requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.core.errors import ErrorCode
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server
from tests.waiting import READY_SECONDS

pytestmark = [pytest.mark.cluster, pytest.mark.disrupts_cluster]

STOP_SECONDS = 10.0
# Reads give up after this (ServerSettings.api_request_timeout_seconds; 10 s by default): short
# enough that each client gets several answers while the API server is stopped.
API_TIMEOUT_SECONDS = 2.0
CLIENTS = 4
QUERY = '{ workloads(first: 100, namespace: "team-a") { nodes { name } } }'


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def settled_counts() -> tuple[int, int]:
    """(asyncio tasks, open fds) once the loop has run whatever was ready to finish."""
    for _ in range(5):
        await asyncio.sleep(0.2)
    gc.collect()
    return len(asyncio.all_tasks()), open_fds()


@dataclass
class Answer:
    sent: float
    received: float
    user: str
    status: int
    codes: list[str | None]
    names: set[str] | None


@dataclass
class Load:
    server: Server
    tokens: dict[str, str]
    answers: list[Answer] = field(default_factory=list)
    stopping: bool = False

    async def client(self, user: str) -> None:
        while not self.stopping:
            sent = time.monotonic()
            response = await self.server.post(QUERY, token=self.tokens[user])
            body: dict[str, Any] = response.json()
            codes = [(e.get("extensions") or {}).get("code") for e in body.get("errors") or []]
            workloads = (body.get("data") or {}).get("workloads")
            names = {n["name"] for n in workloads["nodes"]} if workloads else None
            self.answers.append(
                Answer(sent, time.monotonic(), user, response.status_code, codes, names)
            )
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def loaded(server: Server, tokens: dict[str, str]) -> AsyncIterator[Load]:
    load = Load(server, tokens)
    users = list(tokens)
    tasks = [asyncio.create_task(load.client(users[i % len(users)])) for i in range(CLIENTS)]
    try:
        yield load
    finally:
        load.stopping = True
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=3 * API_TIMEOUT_SECONDS + 30)


async def readyz_status(server: Server) -> tuple[int, float]:
    started = time.monotonic()
    response = await server.http.get("/readyz", timeout=10)
    return response.status_code, time.monotonic() - started


async def wait_ready(server: Server, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if (await readyz_status(server))[0] == 200:
                return True
        await asyncio.sleep(0.5)
    return False


def kubectl_names(cluster: Cluster, user: str) -> set[str]:
    items = cluster.get_json("workloads.kueue.x-k8s.io", "-n", "team-a", user=user)["items"]
    return {item["metadata"]["name"] for item in items}


async def test_api_server_stopped_and_resumed_mid_load(
    cluster: Cluster, service_kubeconfig: Path
) -> None:
    tokens = {user: cluster.token(user) for user in ("alice", "viewer")}
    async with running_server(
        service_kubeconfig, api_request_timeout_seconds=API_TIMEOUT_SECONDS
    ) as server:
        # Warm: the pools, caches and lazily created tasks a running server has anyway.
        async with loaded(server, tokens) as warm:
            await asyncio.sleep(2)
        assert warm.answers, "no answer before the fault"
        assert all(a.codes == [] for a in warm.answers), warm.answers[:3]
        tasks_before, fds_before = await settled_counts()

        readyz: tuple[int, float] | None = None
        unknown_token: tuple[int, list[str | None]] | None = None
        stopped_at = resumed_at = 0.0
        async with loaded(server, tokens) as load:
            await asyncio.sleep(1)
            with cluster.api_server_frozen():
                stopped_at = time.monotonic()
                readyz = await readyz_status(server)
                # A token no cache knows: its TokenReview cannot be answered, which says
                # nothing about the token (UNAVAILABLE, not a 401).
                response = await server.post(QUERY, token="a-token-never-reviewed")
                unknown_token = (
                    response.status_code,
                    [(e.get("extensions") or {}).get("code") for e in response.json()["errors"]],
                )
                await asyncio.sleep(max(0.0, STOP_SECONDS - (time.monotonic() - stopped_at)))
            resumed_at = time.monotonic()
            ready_again = await wait_ready(server, READY_SECONDS)
            await asyncio.sleep(3)
        assert ready_again, f"/readyz did not answer 200 within {READY_SECONDS:g} s of SIGCONT"

        assert readyz is not None
        assert readyz[0] == 503, readyz
        assert readyz[1] < 2, f"/readyz took {readyz[1]:.2f} s to say 503"
        assert unknown_token is not None
        assert unknown_token[1] == [ErrorCode.UNAVAILABLE.value], unknown_token

        during = [a for a in load.answers if stopped_at < a.sent and a.received < resumed_at]
        assert len(during) >= CLIENTS, f"{len(during)} answers while stopped"
        for answer in during:
            assert answer.status < 500, answer
            assert answer.codes, f"an answer while the API server was stopped: {answer}"
            assert set(answer.codes) == {ErrorCode.UNAVAILABLE.value}, answer
        for answer in load.answers:
            assert answer.status < 500, answer
            assert set(answer.codes) <= {ErrorCode.UNAVAILABLE.value}, answer

        # Recovered: answers as kubectl shows them, for each user.
        for user, token in tokens.items():
            body = await server.query(QUERY, token=token)
            assert "errors" not in body, body
            names = {n["name"] for n in body["data"]["workloads"]["nodes"]}
            assert names == kubectl_names(cluster, user), user
        after = [a for a in load.answers if a.sent > resumed_at + 1 and a.names is not None]
        assert after, "no answer after the API server came back"

        tasks_after, fds_after = await settled_counts()
        print(
            f"\nfault: {len(during)} answers while stopped (all UNAVAILABLE), /readyz 503 in "
            f"{readyz[1]:.2f} s, unknown token {unknown_token}, {len(after)} answers after; "
            f"tasks {tasks_before} -> {tasks_after}, fds {fds_before} -> {fds_after}"
        )
        # Tolerance: the server's API connection pool and this test's HTTP client open
        # connections on demand, so after the fault up to one connection per concurrent client
        # on each side may be open that was not (or was closed) before: 2 x CLIENTS fds and
        # CLIENTS tasks. A leak grows with the failed requests, which are many more.
        failed = sum(1 for a in load.answers if a.codes)
        assert failed > 2 * CLIENTS, failed
        assert tasks_after <= tasks_before + CLIENTS, (tasks_before, tasks_after)
        assert fds_after <= fds_before + 2 * CLIENTS, (fds_before, fds_after, failed)
    # The shared control plane answers again for whatever runs after this (marked
    # disrupts_cluster, it runs after every other test: tests/conftest.py).
    assert cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
