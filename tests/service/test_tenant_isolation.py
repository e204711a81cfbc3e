"""A tenant never sees another tenant's object, count or name: not through a list, a filter that
points at the other tenant's queue, an edge, a totalCount or a forged cursor. In both read modes
(the cache holds every tenant's objects: this is where a slip would show)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kueue_graphql.graph.pagination import encode_cursor
from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

TENANTS = [("alice", "team-a", "team-b"), ("bob", "team-b", "team-a")]

LIST = """query($ns: String, $cq: String, $lq: String, $after: String) {
  workloads(first: 100, namespace: $ns, clusterQueue: $cq, localQueue: $lq, after: $after) {
    totalCount nodes { namespace name localQueue { namespace name } } pageInfo { hasNextPage }
  }
}"""


def names_in(cluster: Cluster, namespace: str) -> set[str]:
    """Every object name of the namespace's Kueue and batch objects (as the admin sees them)."""
    shown = json.loads(
        cluster.kubectl("get", "workloads,localqueues,jobs", "-n", namespace, "-o", "json").stdout
    )
    return {item["metadata"]["name"] for item in shown["items"]}


def visible_count(cluster: Cluster, user: str, namespace: str) -> int:
    shown = json.loads(
        cluster.kubectl("get", "workloads", "-n", namespace, "-o", "json", user=user).stdout
    )
    return len(shown["items"])


@pytest.mark.parametrize(("user", "own", "other"), TENANTS)
async def test_no_other_tenant_object_count_or_name(
    server: Server, cluster: Cluster, user: str, own: str, other: str
) -> None:
    token = cluster.token(user)
    theirs = names_in(cluster, other) - names_in(cluster, own)
    assert theirs, "the other tenant has objects of its own"
    other_queues = json.loads(
        cluster.kubectl("get", "localqueues", "-n", other, "-o", "json").stdout
    )["items"]
    other_cq = other_queues[0]["spec"]["clusterQueue"]
    other_lq = other_queues[0]["metadata"]["name"]
    answers: list[dict[str, Any]] = []

    async def ask(query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = await server.query(query, variables, token=token)
        answers.append(body)
        return body

    # Their namespace, and every namespace: refused, with no data and no count.
    for ns in (other, None):
        body = await ask(LIST, {"ns": ns})
        assert body["data"]["workloads"] is None
        assert {e["extensions"]["code"] for e in body["errors"]} == {"FORBIDDEN"}

    # Own namespace: exactly what kubectl shows this tenant, and the count of that only.
    own_count = visible_count(cluster, user, own)
    variants: list[dict[str, Any]] = [
        {"ns": own},
        # Filters naming the other tenant's ClusterQueue and LocalQueue.
        {"ns": own, "cq": other_cq},
        {"ns": own, "lq": other_queues[0]["metadata"]["name"]},
        # Forged cursors pointing into (and just before) the other namespace.
        {"ns": own, "after": encode_cursor((other, ""))},
        {"ns": own, "after": encode_cursor((other, "zzzz"))},
        {"ns": own, "after": encode_cursor((own[:-1], "zzzz"))},
        {"ns": own, "after": encode_cursor(("", ""))},
    ]
    for variables in variants:
        body = await ask(LIST, variables)
        assert "errors" not in body, (variables, body)
        found = body["data"]["workloads"]
        assert {n["namespace"] for n in found["nodes"]} <= {own}, variables
        for node in found["nodes"]:
            assert node["localQueue"] is None or node["localQueue"]["namespace"] == own
        assert len(found["nodes"]) <= found["totalCount"] <= own_count, variables
        if "after" not in variables and "cq" not in variables and "lq" not in variables:
            assert found["totalCount"] == own_count

    # Edges and single objects of the other tenant: refused.
    refused = [
        (
            '{ workloadFor(namespace: "%s", kind: "Job", name: "%s") { name } }',
            (other, sorted(theirs)[0]),
        ),
        ('{ localQueue(namespace: "%s", name: "%s") { name } }', (other, other_lq)),
        ('{ localQueues(first: 100, namespace: "%s") { totalCount } }', (other,)),
        ("{ localQueues(first: 100) { totalCount } }", ()),
        ('{ clusterQueue(name: "%s") { name } }', (other_cq,)),
        ("{ clusterQueues(first: 100) { totalCount } }", ()),
        ('{ jobs(first: 100, namespace: "%s") { totalCount } }', (other,)),
        ('{ diagnose(namespace: "%s", kind: "Job", name: "%s") { summary } }', (other, "bob-job")),
    ]
    asked = set()
    for template, arguments in refused:
        asked |= set(arguments)
        body = await ask(template % arguments)
        codes = {e["extensions"]["code"] for e in body.get("errors") or []}
        assert codes <= {"FORBIDDEN", "NOT_FOUND"}, body
        assert codes, body

    # Own LocalQueues filtered by the other tenant's ClusterQueue: own namespace only.
    body = await ask(
        "query($ns: String, $cq: String) { localQueues(first: 100, namespace: $ns, "
        "clusterQueue: $cq) { totalCount nodes { namespace name } } }",
        {"ns": own, "cq": other_cq},
    )
    assert {n["namespace"] for n in body["data"]["localQueues"]["nodes"]} <= {own}

    # No name of theirs appears anywhere in any answer (data, errors or extensions), but for
    # the names the caller typed in (which errors may repeat).
    text = json.dumps(answers)
    leaked = sorted(name for name in theirs - asked if json.dumps(name) in text)
    assert leaked == []
