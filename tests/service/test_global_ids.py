"""`node(id:)` answers exactly what each type's own root field answers, for each user and in
both read modes: the same data, or the same FORBIDDEN / NOT_FOUND with null. Ids come from the
objects themselves (the `id` field, a connection's edges), never built by the test."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

USERS = ["admin", "alice", "bob", "viewer", "nobody"]

# (the type, the typed root field with its arguments, the fields compared). The typed field
# is also where the id comes from (as admin). `{job}`: the name of that Job's Workload.
TYPED = [
    (
        "Workload",
        'workload(namespace: "team-a", name: "{too-big-3x1cpu}")',
        "id name namespace status localQueue { id name } clusterQueue { id name }",
    ),
    (
        "Workload",
        'workload(namespace: "team-b", name: "{bob-job}")',
        "id name namespace status",
    ),
    ("Job", 'job(namespace: "team-b", name: "bob-job")', "id name namespace"),
    (
        "LocalQueue",
        'localQueue(namespace: "team-a", name: "lq-team-a")',
        "id name clusterQueueName",
    ),
    ("ClusterQueue", 'clusterQueue(name: "cq-team-a")', "id name cohortName"),
    ("Cohort", 'cohort(name: "org")', "id name explicit"),
    ("Namespace", 'namespace(name: "team-b")', "id name phase"),
    ("KubernetesNode", 'kubernetesNode(name: "node-standard-1")', "id name unschedulable"),
    (
        "Diagnosis",
        'diagnose(namespace: "team-a", kind: "job", name: "too-big-3x1cpu")',
        "id stage layer summary blockingRef { kind name }",
    ),
    (
        "Diagnosis",
        'diagnose(namespace: "team-b", kind: "Job", name: "bob-job")',
        "id stage summary",
    ),
]


async def with_workload_names(server: Server, cluster: Cluster, typed: str) -> str:
    """`typed` with `{job}` replaced by the name of that Job's Workload (Kueue adds a suffix)."""
    match = re.search(r"\{([a-z0-9-]+)\}", typed)
    if match is None:
        return typed
    namespace = re.search(r'namespace: "([a-z0-9-]+)"', typed)
    assert namespace is not None
    found = await server.query(
        "query Owner($ns: String!, $job: String!) "
        '{ workloadFor(namespace: $ns, kind: "Job", name: $job) { name } }',
        {"ns": namespace.group(1), "job": match.group(1)},
        token=cluster.token("admin"),
    )
    return typed.replace(match.group(0), found["data"]["workloadFor"]["name"])


def outcome(body: dict[str, Any], key: str) -> tuple[Any, list[tuple[str, str]]]:
    """The answer and its errors' (code, message), whatever the path."""
    errors = sorted((e["extensions"]["code"], e["message"]) for e in body.get("errors") or [])
    return (body.get("data") or {}).get(key), errors


@pytest.mark.parametrize(("type_name", "typed", "fields"), TYPED)
async def test_node_by_id_answers_as_the_typed_field_for_each_user(
    server: Server, cluster: Cluster, type_name: str, typed: str, fields: str
) -> None:
    typed = await with_workload_names(server, cluster, typed)
    typed_query = f"query Typed {{ answer: {typed} {{ {fields} }} }}"
    found = await server.query(typed_query, token=cluster.token("admin"))
    assert not found.get("errors"), found
    node_id = found["data"]["answer"]["id"]
    node_query = (
        f"query ById($id: ID!) {{ answer: node(id: $id) {{ __typename ... on {type_name} "
        f"{{ {fields} }} }} }}"
    )
    seen = set()
    for user in USERS:
        token = cluster.token(user)
        expected = outcome(await server.query(typed_query, token=token), "answer")
        by_id = await server.query(node_query, {"id": node_id}, token=token)
        answer, errors = outcome(by_id, "answer")
        if answer is not None:
            assert answer.pop("__typename") == type_name
        assert (answer, errors) == expected, user
        seen.add("answered" if answer is not None else errors[0][0])
    # The matrix is not trivial: some user is answered, some refused.
    assert "answered" in seen, seen
    assert len(seen) > 1, seen


async def test_nodes_answers_each_id_as_node_does(server: Server, cluster: Cluster) -> None:
    ids_query = """query Ids {
      a: workloadFor(namespace: "team-a", kind: "Job", name: "too-big-3x1cpu") { id }
      b: workloadFor(namespace: "team-b", kind: "Job", name: "bob-job") { id }
      cq: clusterQueue(name: "cq-team-a") { id }
    }"""
    found = await server.query(ids_query, token=cluster.token("admin"))
    ids = [found["data"][k]["id"] for k in ("a", "b", "cq")]
    body = await server.query(
        "query Many($ids: [ID!]!) { nodes(ids: $ids) { id __typename } }",
        {"ids": ids},
        token=cluster.token("alice"),
    )
    assert body["data"]["nodes"] == [{"id": ids[0], "__typename": "Workload"}, None, None]
    assert sorted((e["path"][1], e["extensions"]["code"]) for e in body["errors"]) == [
        (1, "FORBIDDEN"),
        (2, "FORBIDDEN"),
    ]


async def test_edges_carry_the_ids_and_the_cursors_the_connection_pages_with(
    server: Server, cluster: Cluster
) -> None:
    page = """query Page($after: String) {
      workloads(first: 2, namespace: "team-a", after: $after) {
        nodes { id name }
        edges { cursor node { id name } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }"""
    token = cluster.token("alice")
    first = (await server.query(page, token=token))["data"]["workloads"]
    edges = first["edges"]
    assert len(edges) == 2
    assert [e["node"] for e in edges] == first["nodes"]
    info = first["pageInfo"]
    assert info["hasNextPage"]
    assert not info["hasPreviousPage"]
    assert (info["startCursor"], info["endCursor"]) == (edges[0]["cursor"], edges[1]["cursor"])
    # Paging after the first edge's cursor starts with the second edge.
    after_first = await server.query(page, {"after": edges[0]["cursor"]}, token=token)
    second = after_first["data"]["workloads"]
    assert second["nodes"][0] == edges[1]["node"]
    assert second["pageInfo"]["hasPreviousPage"]
    # An object's id is the same wherever it is reached.
    workload = edges[0]["node"]
    again = await server.query(
        "query One($id: ID!) { node(id: $id) { id ... on Workload { name } } }",
        {"id": workload["id"]},
        token=token,
    )
    assert again["data"]["node"] == workload
