"""Global object ids: round trip, malformed ids refused with BAD_REQUEST before any API call,
decoding bounded in cost."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest

from kueue_graphql.core import global_ids
from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.core.global_ids import MAX_ID_LENGTH, GlobalId, decode_id, encode_id
from kueue_graphql.graph.schema import schema_sdl
from kueue_graphql.http import ServerSettings
from tests.unit.apiserver_stub import Stub, apiserver_stub
from tests.unit.test_http import BEARER, client_for, refuse_everything


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    async with apiserver_stub(refuse_everything) as running:
        yield running


@pytest.mark.parametrize(
    "keys",
    [
        ("Workload", "team-a", "job-sample-job-1a2b3"),
        ("ClusterQueue", "", "cq-team-a"),
        ("Cohort", "", "org"),
        ("Diagnosis", "team-a", "Job", "sample-job"),
        ("KubernetesNode", "", "node." + "a" * 240),
    ],
)
def test_ids_round_trip_opaque_and_url_safe(keys: tuple[str, ...]) -> None:
    encoded = encode_id(*keys)
    assert decode_id(encoded) == GlobalId(keys[0], keys[1:])
    assert not set("/=+") & set(encoded)
    assert keys[-1] not in encoded  # opaque: the name is not readable in the id
    assert len(encoded) < MAX_ID_LENGTH


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


MALFORMED = [
    "",
    "not base64 at all!",
    _b64("2/Workload/team-a/x"),  # another format version
    _b64("1/Workload"),  # no keys
    _b64("1//team-a/x"),  # no type
    encode_id("Workload", "team-a", "x") + "==",  # padded: not the canonical form
    encode_id("Workload", "team-a", "x")[:-1] + "!",
    base64.urlsafe_b64encode(b"\xff\xfe1/Workload/a/b").decode(),  # not UTF-8
    "\u00e9" * 10,
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_ids_are_bad_requests_saying_what_to_do(text: str) -> None:
    with pytest.raises(BadRequestError, match=r"invalid id: .*use an `id` this API returned"):
        decode_id(text)


def test_a_long_id_is_refused_before_it_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[object] = []
    monkeypatch.setattr(global_ids.base64, "urlsafe_b64decode", decoded.append)
    with pytest.raises(BadRequestError, match=f"longer than {MAX_ID_LENGTH}"):
        decode_id("A" * 10_000_000)
    assert decoded == []


def test_the_schema_is_relay_compatible() -> None:
    sdl = schema_sdl()
    assert "interface Node {\n" in sdl
    assert "  node(id: ID!): Node\n" in sdl
    assert "  nodes(ids: [ID!]!): [Node]!\n" in sdl
    for entity in ("Workload", "KubernetesNode", "Cohort", "Diagnosis", "Event", "Namespace"):
        implements = sdl.split(f"type {entity} implements ")[1].split("{")[0]
        assert "Node" in implements.split(), entity


@pytest.mark.parametrize(
    ("node_id", "message"),
    [
        ("garbage", "invalid id"),
        (encode_id("NoSuchType", "", "x"), "unknown type"),
        (encode_id("Workload", "", "x"), "invalid namespace"),  # namespaced, none given
        (encode_id("ClusterQueue", "team-a", "cq"), "has no namespace"),
        (encode_id("Workload", "team-a", "Not_A_Name"), "invalid name"),
        (encode_id("Workload", "team-a", "x", "extra"), "invalid id"),
        (encode_id("Diagnosis", "team-a", "../Job", "x"), "invalid id"),
    ],
)
async def test_node_with_a_malformed_id_is_bad_request_without_api_call(
    stub: Stub, node_id: str, message: str
) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.post(
            "/graphql",
            json={
                "query": "query N($id: ID!) { node(id: $id) { id } }",
                "variables": {"id": node_id},
            },
            headers=BEARER,
        )
    body = response.json()
    assert body["data"] == {"node": None}
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert message in error["message"]
    assert stub.requests == []  # no TokenReview, no read


async def test_nodes_is_bounded_and_checks_every_id_before_any_api_call(stub: Stub) -> None:
    good = encode_id("Workload", "team-a", "x")
    async with client_for(stub, ServerSettings()) as client:
        too_many = await client.post(
            "/graphql",
            json={
                "query": "query N($ids: [ID!]!) { nodes(ids: $ids) { id } }",
                "variables": {"ids": [good] * 101},
            },
            headers=BEARER,
        )
        one_bad = await client.post(
            "/graphql",
            json={
                "query": "query N($ids: [ID!]!) { nodes(ids: $ids) { id } }",
                "variables": {"ids": [good, "garbage"]},
            },
            headers=BEARER,
        )
    for response, message in ((too_many, "at most 100"), (one_bad, "invalid id")):
        [error] = response.json()["errors"]
        assert error["extensions"]["code"] == "BAD_REQUEST"
        assert message in error["message"]
    assert stub.requests == []
