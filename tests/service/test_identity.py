"""Who the service acts as: exactly the identity TokenReview returns, every group included."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from kueue_graphql.http import AuthMode
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server

pytestmark = pytest.mark.cluster

TEAM_A_WORKLOADS = '{ workloads(first: 100, namespace: "team-a") { nodes { name } } }'
TEAM_B_WORKLOADS = '{ workloads(first: 100, namespace: "team-b") { nodes { name } } }'
VIEWER = "{ viewer { username groups } }"


async def test_every_group_is_impersonated(server: Server, cluster: Cluster) -> None:
    # grace's only grant comes from her SECOND group; with the first group alone she sees nothing.
    only_first_group = cluster.kubectl(
        "get", "workloads", "-n", "team-a", "--as=grace", "--as-group=engineering", check=False
    )
    assert only_first_group.returncode != 0
    assert "forbidden" in only_first_group.stderr.lower()

    token = cluster.token("grace")
    who = await server.query(VIEWER, token=token)
    assert who["data"]["viewer"]["username"] == "grace"
    assert {"engineering", "team-a-readers"} <= set(who["data"]["viewer"]["groups"])

    body = await server.query(TEAM_A_WORKLOADS, token=token)
    assert "errors" not in body, body.get("errors")
    names = {n["name"] for n in body["data"]["workloads"]["nodes"]}
    listed = cluster.kubectl(
        "get", "workloads", "-n", "team-a", "-o", "name", user="grace"
    ).stdout.split()
    assert names == {line.split("/", 1)[1] for line in listed}
    assert any(name.startswith("job-too-big-3x1cpu-") for name in names)


async def test_service_account_token(server: Server, cluster: Cluster) -> None:
    token = cluster.service_account_token("team-a", "ci-bot")
    who = await server.query(VIEWER, token=token)
    assert who["data"]["viewer"]["username"] == "system:serviceaccount:team-a:ci-bot"
    # A bound token carries extra attributes (credential id, pod/node binding); impersonating
    # them all must work for the reads to succeed.
    mine = await server.query(TEAM_A_WORKLOADS, token=token)
    assert "errors" not in mine, mine.get("errors")
    assert mine["data"]["workloads"]["nodes"]
    theirs = await server.query(TEAM_B_WORKLOADS, token=token)
    assert theirs["data"]["workloads"] is None
    assert theirs["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert "team-b" in theirs["errors"][0]["message"]


def assert_unauthenticated(response: httpx.Response) -> str:
    """A 401 with a Bearer challenge and a GraphQL-shaped body; returns the message."""
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert "data" not in body
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    message: str = error["message"]
    return message


async def test_bad_token_is_401_and_not_echoed(server: Server) -> None:
    bogus = "definitely-not-a-valid-token-0123456789"
    response = await server.post(VIEWER, token=bogus)
    assert "not accepted" in assert_unauthenticated(response)
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert bogus not in response.text
    assert bogus not in str(response.headers)
    # Also when fields that need no identity are asked next to ones that do, and again once
    # the rejection could have been cached.
    mixed = await server.post("{ __typename " + VIEWER[1:], token=bogus)
    assert_unauthenticated(mixed)
    assert bogus not in mixed.text


async def test_missing_token_is_401(server: Server) -> None:
    response = await server.post(VIEWER, token=None)
    assert "Authorization: Bearer" in assert_unauthenticated(response)
    assert response.headers["www-authenticate"] == "Bearer"
    malformed = await server.post(VIEWER, token=None, headers={"Authorization": "Basic YTpi"})
    assert_unauthenticated(malformed)
    assert "YTpi" not in malformed.text


async def test_client_impersonation_headers_are_ignored(server: Server, cluster: Cluster) -> None:
    response = await server.post(
        "{ viewer { username } " + TEAM_B_WORKLOADS[1:],
        token=cluster.token("alice"),
        headers={"Impersonate-User": "admin", "Impersonate-Group": "system:masters"},
    )
    body = response.json()
    assert body["data"]["viewer"]["username"] == "alice"
    assert body["data"]["workloads"] is None
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_unknown_object_is_not_found(server: Server, cluster: Cluster) -> None:
    body = await server.query(
        '{ workloadFor(namespace: "team-a", kind: "Job", name: "no-such-job") { name } }',
        token=cluster.token("alice"),
    )
    assert body["data"]["workloadFor"] is None
    assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_concurrent_callers_never_see_each_others_data(
    server: Server, cluster: Cluster
) -> None:
    query = "{ viewer { username } workloads(first: 100) { nodes { namespace } } " + (
        'a: workloads(first: 100, namespace: "team-a") { nodes { name } } '
        'b: workloads(first: 100, namespace: "team-b") { nodes { name } } }'
    )
    tokens = {"alice": cluster.token("alice"), "bob": cluster.token("bob")}
    users = ["alice", "bob"] * 8
    bodies = await asyncio.gather(*(server.query(query, token=tokens[u]) for u in users))
    for user, body in zip(users, bodies, strict=True):
        data = body["data"]
        assert data["viewer"]["username"] == user
        assert data["workloads"] is None  # neither may list across namespaces
        mine, theirs = ("a", "b") if user == "alice" else ("b", "a")
        assert data[mine]["nodes"]
        assert data[theirs] is None
        denied = {e["path"][0] for e in body["errors"]}
        assert denied == {"workloads", theirs}


async def test_local_mode_reads_as_the_kubeconfig_identity(cluster: Cluster) -> None:
    async with running_server(cluster.kubeconfig("alice"), AuthMode.LOCAL) as local:
        body = await local.query(
            "{ viewer { username } " + TEAM_A_WORKLOADS[1:-1] + " }", token=None
        )
        assert body["data"]["viewer"]["username"] == "alice"
        assert body["data"]["workloads"]["nodes"]
        theirs = await local.query(TEAM_B_WORKLOADS, token=None)
        assert theirs["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_tokens_never_reach_the_log(
    server: Server, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    alice = cluster.token("alice")
    bogus = "bogus-token-that-must-not-be-logged-42"
    await server.query(TEAM_A_WORKLOADS, token=alice)
    assert (await server.post(TEAM_A_WORKLOADS, token=bogus)).status_code == 401
    assert caplog.records, "the server logged nothing at DEBUG: the check would prove nothing"
    assert alice not in caplog.text
    assert bogus not in caplog.text
