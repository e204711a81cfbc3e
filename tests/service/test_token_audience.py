"""--token-audience on the real control plane: with it, TokenReview is asked for that audience,
so only tokens minted for it are accepted (`kubectl create token SA --audience kueue-graphql`).
The API server's own tokens are refused then: ServiceAccount tokens of its default audience,
and static --token-auth-file tokens, which are audience-agnostic and count only for the API
server's --api-audiences (k8s.io/apiserver authenticator.WrapAudienceAgnosticToken). Without
the flag, nothing changes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server, wait_ready
from tests.service.live_client import PROTOCOL

pytestmark = pytest.mark.cluster

AUDIENCE = "kueue-graphql"
VIEWER = "{ viewer { username } }"
CI_BOT = "system:serviceaccount:team-a:ci-bot"


def minted(cluster: Cluster, *audiences: str) -> str:
    """A bound token of team-a/ci-bot from the TokenRequest API (as admin), for `audiences`
    (none: the API server's own)."""
    flags = [f"--audience={audience}" for audience in audiences]
    return cluster.kubectl(
        "create", "token", "ci-bot", "-n", "team-a", "--duration=600s", *flags
    ).stdout.strip()


@pytest.fixture(scope="module")
async def audience_server(cluster: Cluster) -> AsyncIterator[Server]:
    async with running_server(cluster.server_kubeconfig, token_audiences=(AUDIENCE,)) as started:
        await wait_ready(started)
        yield started


def refused(response: httpx.Response) -> bool:
    body: dict[str, Any] = response.json()
    codes = [e["extensions"]["code"] for e in body.get("errors") or []]
    return response.status_code == 401 and codes == ["UNAUTHENTICATED"] and "data" not in body


async def test_a_token_minted_for_the_audience_is_accepted(
    audience_server: Server, cluster: Cluster
) -> None:
    body = await audience_server.query(VIEWER, token=minted(cluster, AUDIENCE))
    assert body["data"] == {"viewer": {"username": CI_BOT}}, body
    assert "errors" not in body
    # One of several audiences is enough.
    body = await audience_server.query(VIEWER, token=minted(cluster, "elsewhere", AUDIENCE))
    assert body["data"]["viewer"]["username"] == CI_BOT


@pytest.mark.parametrize("kind", ["another audience", "the API server's audience", "static"])
async def test_other_tokens_are_unauthenticated(
    audience_server: Server, cluster: Cluster, kind: str
) -> None:
    token = {
        "another audience": lambda: minted(cluster, "not-kueue-graphql"),
        "the API server's audience": lambda: minted(cluster),
        "static": lambda: cluster.token("alice"),
    }[kind]()
    response = await audience_server.post(VIEWER, token=token)
    assert refused(response), response.text
    assert AUDIENCE in response.json()["errors"][0]["message"]
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    # Refused at the WebSocket's connection_init too (4403), before any operation.
    url = audience_server.url.replace("http://", "ws://") + "/graphql"
    async with connect(url, subprotocols=[PROTOCOL]) as socket:  # type: ignore[list-item]
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
        await socket.send(json.dumps(init))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 30)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403


async def test_without_the_flag_the_api_servers_own_tokens_are_accepted(
    server: Server, cluster: Cluster
) -> None:
    # As before --token-audience: TokenReview's default audiences are the API server's, so
    # kubectl's tokens pass and one minted for kueue-graphql alone does not.
    alice = await server.query(VIEWER, token=cluster.token("alice"))
    assert alice["data"]["viewer"]["username"] == "alice"
    default = await server.query(VIEWER, token=minted(cluster))
    assert default["data"]["viewer"]["username"] == CI_BOT
    assert refused(await server.post(VIEWER, token=minted(cluster, AUDIENCE)))
