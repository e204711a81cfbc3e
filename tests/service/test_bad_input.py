"""Bad input over HTTP: every malformed or hostile request gets a clear GraphQL error with a
stable `extensions.code` — never a 500, a plain-text page or a stack trace."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

VIEWER = "{ viewer { username } }"


def assert_error(
    response: httpx.Response, status: int, code: str, *fragments: str
) -> dict[str, Any]:
    """The response is `status` with a GraphQL-shaped JSON body whose first error has `code`
    and a message containing every fragment; returns the body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    assert "Traceback" not in response.text, response.text
    assert 'File "' not in response.text, response.text
    body: dict[str, Any] = response.json()
    error = body["errors"][0]
    assert error["extensions"]["code"] == code, body
    for fragment in fragments:
        assert fragment in error["message"], body
    return body


def b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


@pytest.fixture
def viewer(cluster: Cluster) -> dict[str, str]:
    return {"Authorization": f"Bearer {cluster.token('viewer')}"}


@pytest.fixture
def alice(cluster: Cluster) -> dict[str, str]:
    return {"Authorization": f"Bearer {cluster.token('alice')}"}


# -- the HTTP body ---------------------------------------------------------------------------


async def test_malformed_json_body(server: Server, viewer: dict[str, str]) -> None:
    for content in (b'{"query": "{ viewer { username } }"', b"\xff\xfe", b"", b"{'query': 1}"):
        response = await server.http.post(
            "/graphql", content=content, headers={**viewer, "Content-Type": "application/json"}
        )
        assert_error(response, 400, "BAD_REQUEST", "JSON")


@pytest.mark.parametrize("content", [b"5", b'"a string"', b"null", b"true"])
async def test_json_body_that_is_not_an_object(
    server: Server, viewer: dict[str, str], content: bytes
) -> None:
    response = await server.http.post(
        "/graphql", content=content, headers={**viewer, "Content-Type": "application/json"}
    )
    assert_error(response, 400, "BAD_REQUEST", "JSON object")


async def test_batched_requests_are_refused(server: Server, viewer: dict[str, str]) -> None:
    response = await server.http.post("/graphql", json=[{"query": VIEWER}] * 2, headers=viewer)
    assert_error(response, 400, "BAD_REQUEST")


@pytest.mark.parametrize("content_type", ["text/plain", "application/graphql", "text/html"])
async def test_non_json_content_type(
    server: Server, viewer: dict[str, str], content_type: str
) -> None:
    response = await server.http.post(
        "/graphql", content=VIEWER.encode(), headers={**viewer, "Content-Type": content_type}
    )
    assert_error(response, 415, "BAD_REQUEST", "application/json")


@pytest.mark.parametrize(
    "payload",
    [{}, {"query": ""}, {"query": None}, {"variables": {}}],
    ids=["no-query", "empty", "null", "only-variables"],
)
async def test_empty_query(server: Server, viewer: dict[str, str], payload: object) -> None:
    response = await server.http.post("/graphql", json=payload, headers=viewer)
    assert_error(response, 400, "BAD_REQUEST", "query")


async def test_blank_query_is_a_syntax_error(server: Server, viewer: dict[str, str]) -> None:
    response = await server.http.post("/graphql", json={"query": "   "}, headers=viewer)
    assert_error(response, 200, "BAD_REQUEST", "Syntax Error")


async def test_query_and_variables_of_the_wrong_json_type(
    server: Server, viewer: dict[str, str]
) -> None:
    for payload, fragment in (
        ({"query": 5}, "query"),
        ({"query": VIEWER, "variables": [1]}, "variables"),
        ({"query": VIEWER, "variables": "{}"}, "variables"),
    ):
        response = await server.http.post("/graphql", json=payload, headers=viewer)
        assert_error(response, 400, "BAD_REQUEST", fragment)


async def test_body_over_the_size_cap(server: Server, viewer: dict[str, str]) -> None:
    cap = 64 * 1024
    big = {"query": VIEWER + " " * cap}
    response = await server.http.post("/graphql", json=big, headers=viewer)
    assert_error(response, 413, "BAD_REQUEST", f"{cap} bytes")

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while read
        yield b'{"query": "' + b" " * cap
        yield b'{ viewer { username } }"}'

    response = await server.http.post(
        "/graphql", content=chunks(), headers={**viewer, "Content-Type": "application/json"}
    )
    assert_error(response, 413, "BAD_REQUEST", f"{cap} bytes")


async def test_get_query_is_served_and_not_cached(server: Server, viewer: dict[str, str]) -> None:
    # Queries over GET are on by default (--no-allow-get-queries: 405, tests/unit/test_http.py).
    response = await server.http.get(
        "/graphql", params={"query": VIEWER}, headers={**viewer, "Accept": "application/json"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["viewer"]["username"]
    assert response.headers["cache-control"] == "private, no-store"
    missing = await server.http.get("/graphql", params={"query": VIEWER})
    assert_error(missing, 401, "UNAUTHENTICATED", "Bearer")
    assert missing.headers["cache-control"] == "private, no-store"


# -- the GraphQL document --------------------------------------------------------------------


async def test_unknown_field(server: Server, cluster: Cluster) -> None:
    response = await server.post("{ viewer { username password } }", token=cluster.token("viewer"))
    body = assert_error(response, 200, "BAD_REQUEST", "Cannot query field 'password'")
    assert body["data"] is None
    assert body["extensions"]["apiCalls"] == 0


async def test_unknown_root_field_argument_and_operation(server: Server, cluster: Cluster) -> None:
    token = cluster.token("viewer")
    for query, fragment in (
        ("{ secrets { name } }", "Cannot query field 'secrets'"),
        ('{ clusterQueue(name: "x", all: true) { name } }', "Unknown argument 'all'"),
        ("mutation { viewer { username } }", "mutation"),
        # Subscriptions sent as a plain POST, valid or not: refused before anything runs (a valid
        # one used to run its generator as a query field: INTERNAL).
        ("subscription { viewer { username } }", "served over WebSocket"),
        (
            'subscription { diagnosis(namespace: "team-a", kind: "Job", name: "x") { stage } }',
            "served over WebSocket",
        ),
    ):
        response = await server.post(query, token=token)
        assert_error(response, 200, "BAD_REQUEST", fragment)


async def test_wrong_variable_types(server: Server, cluster: Cluster) -> None:
    query = (
        "query Q($ns: String!, $n: Int!) { workloads(first: $n, namespace: $ns) { totalCount } }"
    )
    token = cluster.token("viewer")
    for variables, fragment in (
        ({"ns": 5, "n": 1}, "$ns"),
        ({"ns": "team-a", "n": "ten"}, "$n"),
        ({"ns": "team-a", "n": 1.5}, "$n"),
        ({"ns": "team-a"}, "$n"),
        ({"ns": None, "n": 1}, "$ns"),
    ):
        response = await server.post(query, variables, token=token)
        body = assert_error(response, 200, "BAD_REQUEST", fragment)
        assert body["extensions"]["apiCalls"] == 0


@pytest.mark.parametrize("first", ["0", "-1", "101", "100000", "99999999999"])
async def test_page_size_out_of_range(server: Server, cluster: Cluster, first: str) -> None:
    response = await server.post(
        f"{{ workloads(first: {first}) {{ nodes {{ name }} }} }}", token=cluster.token("viewer")
    )
    body = assert_error(response, 200, "BAD_REQUEST")
    message = body["errors"][0]["message"]
    # In Int range: the service's own bound; beyond it: GraphQL's Int.
    assert "between 1 and 100" in message or "32-bit" in message, message
    assert body["extensions"]["apiCalls"] == 0  # refused before the list is read


@pytest.mark.parametrize(
    "cursor",
    ["not base64 !!", "%%%", "é", b64([1, 2, 3]), b64({}), b64(7), "AAAA"],
    ids=["garbage", "percent", "non-ascii", "three", "object", "number", "binary"],
)
async def test_forged_cursor(server: Server, cluster: Cluster, cursor: str) -> None:
    response = await server.post(
        "query Q($after: String) { workloads(first: 5, after: $after) { nodes { name } } }",
        {"after": cursor},
        token=cluster.token("viewer"),
    )
    body = assert_error(response, 200, "BAD_REQUEST", "invalid cursor")
    assert body["extensions"]["apiCalls"] == 0  # refused before the list is read


async def test_over_deep_query(server: Server, cluster: Cluster) -> None:
    query = '{ cohort(name: "root") { ' + "parent { " * 14 + "name" + " }" * 15 + " }"
    response = await server.post(query, token=cluster.token("viewer"))
    body = assert_error(response, 200, "BAD_REQUEST", "exceeds maximum operation depth")
    assert body["extensions"]["apiCalls"] == 0


async def test_too_many_aliases(server: Server, cluster: Cluster) -> None:
    query = "{ " + " ".join(f"a{i}: viewer {{ username }}" for i in range(31)) + " }"
    response = await server.post(query, token=cluster.token("viewer"))
    body = assert_error(response, 200, "BAD_REQUEST", "aliases")
    assert body["extensions"]["apiCalls"] == 0


async def test_too_many_tokens(server: Server, cluster: Cluster) -> None:
    query = "{ viewer { " + "username " * 2100 + "} }"
    response = await server.post(query, token=cluster.token("viewer"))
    body = assert_error(response, 200, "BAD_REQUEST", "token")
    assert body["extensions"]["apiCalls"] == 0


# -- names -----------------------------------------------------------------------------------


async def test_names_that_do_not_exist(server: Server, cluster: Cluster) -> None:
    token = cluster.token("viewer")
    for query, fragment in (
        ('{ workload(namespace: "team-a", name: "no-such-workload") { name uid } }', "team-a"),
        ('{ clusterQueue(name: "no-such-cq") { name uid } }', "no-such-cq"),
        ('{ job(namespace: "team-a", name: "no-such-job") { name uid } }', "no-such-job"),
        ('{ workload(namespace: "no-such-namespace", name: "w") { name uid } }', "w"),
        ('{ workloadFor(namespace: "team-a", kind: "Job", name: "no-such") { name } }', "no-such"),
    ):
        response = await server.post(query, token=token)
        body = assert_error(response, 200, "NOT_FOUND", fragment)
        assert list(body["data"].values()) == [None]


BAD_NAMES = [
    "../../api/v1/secrets",
    "a/b",
    "x?watch=true",
    "x#y",
    "Upper-Case",
    "with space",
    "",
    "-leading-dash",
    "ünicode",
    "x" * 300,
]


@pytest.mark.parametrize("name", BAD_NAMES)
async def test_invalid_name(server: Server, cluster: Cluster, name: str) -> None:
    for query in (
        'query Q($n: String!) { workload(namespace: "team-a", name: $n) { name uid } }',
        "query Q($n: String!) { clusterQueue(name: $n) { name uid } }",
        'query Q($n: String!) { pod(namespace: "team-a", name: $n) { name uid } }',
        'query Q($n: String!) { workloadFor(namespace: "team-a", kind: "Job", name: $n) { name } }',
        'query Q($n: String!) { diagnose(namespace: "team-a", kind: "Job", name: $n) { stage } }',
        'query Q($n: String!) { diagnose(namespace: "team-a", kind: "Workload", name: $n) '
        "{ stage } }",
    ):
        response = await server.post(query, {"n": name}, token=cluster.token("viewer"))
        body = assert_error(response, 200, "BAD_REQUEST", "invalid name")
        assert body["extensions"]["apiCalls"] == 0, "refused before any API call"
        assert len(body["errors"][0]["message"]) < 400  # a long name is not echoed whole


@pytest.mark.parametrize("namespace", [*BAD_NAMES, "a.b", "x" * 64])
async def test_invalid_namespace(server: Server, cluster: Cluster, namespace: str) -> None:
    for query in (
        'query Q($ns: String!) { workload(namespace: $ns, name: "w") { name uid } }',
        "query Q($ns: String!) { workloads(first: 5, namespace: $ns) { totalCount } }",
        "query Q($ns: String!) { pods(first: 5, namespace: $ns) { totalCount } }",
    ):
        response = await server.post(query, {"ns": namespace}, token=cluster.token("viewer"))
        body = assert_error(response, 200, "BAD_REQUEST", "invalid namespace")
        assert body["extensions"]["apiCalls"] == 0, "refused before any API call"


async def test_invalid_label_selector(server: Server, cluster: Cluster) -> None:
    response = await server.post(
        '{ pods(first: 5, labelSelector: "a in (b") { totalCount } }',
        token=cluster.token("viewer"),
    )
    assert_error(response, 200, "BAD_REQUEST")


async def test_bad_input_as_a_tenant_is_still_bad_input(
    server: Server, alice: dict[str, str]
) -> None:
    # Validation comes before authorization: alice learns her input is wrong, not that she
    # may not read it.
    response = await server.http.post(
        "/graphql",
        json={"query": '{ workload(namespace: "team-b/..", name: "w") { name uid } }'},
        headers=alice,
    )
    assert_error(response, 200, "BAD_REQUEST", "invalid namespace")
