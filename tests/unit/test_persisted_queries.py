"""Persisted queries: Apollo's automatic persisted queries (hash-only, then the document with
its hash) over POST and GET, and the operator's trusted documents (only those run, anything
else refused before parsing)."""

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.cli import main
from kueue_graphql.http import ServerSettings, build_app
from kueue_graphql.http.persisted import (
    AutomaticPersistedQueries,
    PersistedQueryError,
    TrustedDocuments,
    TrustedDocumentsError,
)
from kueue_graphql.http.ws_messages import MalformedMessageError, MessageLimits, check_message
from tests.unit.apiserver_stub import Stub, apiserver_stub
from tests.unit.test_http import BEARER, client_for, refuse_everything

QUERY = "query Typename { __typename }"
OTHER = "query Other { __typename }"


def sha(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def persisted(document: str, version: int = 1) -> dict[str, Any]:
    return {"persistedQuery": {"version": version, "sha256Hash": sha(document)}}


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    async with apiserver_stub(refuse_everything) as running:
        yield running


def code(response: Any) -> str:
    return str(response.json()["errors"][0]["extensions"]["code"])


async def test_apollo_round_trip_over_post(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        unknown = await client.post(
            "/graphql", json={"extensions": persisted(QUERY)}, headers=BEARER
        )
        registered = await client.post(
            "/graphql", json={"query": QUERY, "extensions": persisted(QUERY)}, headers=BEARER
        )
        known = await client.post("/graphql", json={"extensions": persisted(QUERY)}, headers=BEARER)
    # Apollo's link retries with the document on this code, which comes with HTTP 200.
    assert unknown.status_code == 200
    assert code(unknown) == "PERSISTED_QUERY_NOT_FOUND"
    assert "data" not in unknown.json()
    assert registered.json()["data"] == {"__typename": "Query"}
    assert known.status_code == 200
    assert known.json()["data"] == {"__typename": "Query"}
    assert stub.requests == []


async def test_apollo_round_trip_over_get(stub: Stub) -> None:
    def params(document: str, with_query: bool) -> dict[str, str]:
        sent = {"extensions": json.dumps(persisted(document))}
        return {**sent, "query": document} if with_query else sent

    async with client_for(stub, ServerSettings()) as client:
        unknown = await client.get(
            "/graphql", params=params(QUERY, False), headers={**BEARER, "Accept": "*/*"}
        )
        await client.get("/graphql", params=params(QUERY, True), headers=BEARER)
        known = await client.get("/graphql", params=params(QUERY, False), headers=BEARER)
    # `Accept: */*` with a hash and no document is a query, not a request for GraphiQL.
    assert code(unknown) == "PERSISTED_QUERY_NOT_FOUND"
    assert known.json()["data"] == {"__typename": "Query"}
    assert known.headers["cache-control"] == "private, no-store"
    assert stub.requests == []


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"query": OTHER, "extensions": persisted(QUERY)}, "does not match"),
        ({"extensions": persisted(QUERY, version=2)}, "version"),
        ({"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "ABC"}}}, "64"),
        ({"extensions": {"persistedQuery": "x"}}, "must be an object"),
    ],
)
async def test_malformed_persisted_queries_are_bad_requests(
    stub: Stub, body: dict[str, Any], words: str
) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.post("/graphql", json=body, headers=BEARER)
    assert response.status_code == 400
    assert code(response) == "BAD_REQUEST"
    assert words in response.json()["errors"][0]["message"]
    assert stub.requests == []


async def test_persisted_queries_off_say_so(stub: Stub) -> None:
    async with client_for(stub, ServerSettings(persisted_queries_max_bytes=0)) as client:
        response = await client.post(
            "/graphql", json={"extensions": persisted(QUERY)}, headers=BEARER
        )
    assert code(response) == "PERSISTED_QUERY_NOT_SUPPORTED"


async def test_the_size_cap_applies_before_hashing(stub: Stub) -> None:
    big = "query Big { __typename }" + " " * 200
    async with client_for(stub, ServerSettings(max_body_bytes=200)) as client:
        response = await client.post(
            "/graphql", json={"query": big, "extensions": persisted(big)}, headers=BEARER
        )
    assert response.status_code == 413


def test_the_store_is_bounded_least_recently_used_out_first() -> None:
    store = AutomaticPersistedQueries(max_bytes=2 * len(QUERY))
    third = "query Third { __typename }"
    for document in (QUERY, OTHER):
        store.document(document, persisted(document))
    assert store.document(None, persisted(QUERY)) == QUERY  # QUERY is now the most recent
    store.document(third, persisted(third))
    with pytest.raises(PersistedQueryError) as evicted:
        store.document(None, persisted(OTHER))
    assert evicted.value.code.value == "PERSISTED_QUERY_NOT_FOUND"
    assert store.document(None, persisted(QUERY)) == QUERY


def trusted_file(tmp_path: Path, documents: dict[str, str]) -> Path:
    path = tmp_path / "trusted.json"
    path.write_text(json.dumps(documents))
    return path


async def test_trusted_documents_run_and_nothing_else(stub: Stub, tmp_path: Path) -> None:
    settings = ServerSettings(trusted_documents=trusted_file(tmp_path, {sha(QUERY): QUERY}))
    async with client_for(stub, settings) as client:
        by_hash = await client.post(
            "/graphql", json={"extensions": persisted(QUERY)}, headers=BEARER
        )
        whole = await client.post("/graphql", json={"query": QUERY}, headers=BEARER)
        other = await client.post("/graphql", json={"query": OTHER}, headers=BEARER)
        # A document that would not even parse is refused the same way: it is not parsed.
        garbage = await client.post("/graphql", json={"query": "{" * 1000}, headers=BEARER)
        unknown_hash = await client.post(
            "/graphql", json={"query": OTHER, "extensions": persisted(OTHER)}, headers=BEARER
        )
        over_get = await client.get("/graphql", params={"query": OTHER}, headers=BEARER)
    assert by_hash.json()["data"] == {"__typename": "Query"}
    assert whole.json()["data"] == {"__typename": "Query"}
    for refused in (other, garbage, unknown_hash, over_get):
        assert refused.status_code == 400
        assert code(refused) == "PERSISTED_QUERY_NOT_ALLOWED"
        assert "--trusted-documents" in refused.json()["errors"][0]["message"]
    assert stub.requests == []


def test_trusted_documents_close_websocket_operations_too() -> None:
    limits = MessageLimits(
        max_bytes=1000,
        max_json_depth=8,
        max_operation_name_length=64,
        trusted=TrustedDocuments({sha(QUERY): QUERY}),
    )
    types = frozenset({"subscribe"})
    check_message({"type": "subscribe", "id": "1", "payload": {"query": QUERY}}, limits, types)
    with pytest.raises(MalformedMessageError, match="PERSISTED_QUERY_NOT_ALLOWED"):
        check_message({"type": "subscribe", "id": "1", "payload": {"query": OTHER}}, limits, types)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "not a JSON file"),
        ("[]", "must be a JSON object"),
        ("{}", "not empty"),
        (json.dumps({"abc": QUERY}), "64 lowercase hex"),
        (json.dumps({sha(OTHER): QUERY}), "not the document's SHA-256"),
        (json.dumps({sha(QUERY): 1}), "the document's text"),
        (json.dumps({sha("{ noSuchField }"): "{ noSuchField }"}), "noSuchField"),
        (json.dumps({sha("{"): "{"}), "Syntax Error"),
    ],
)
def test_a_bad_trusted_documents_file_stops_the_start(
    stub: Stub, tmp_path: Path, content: str, words: str
) -> None:
    path = tmp_path / "trusted.json"
    path.write_text(content)
    with pytest.raises(TrustedDocumentsError, match=words):
        build_app(ServerSettings(trusted_documents=path), kube=stub.kube)


def test_serve_with_a_bad_trusted_documents_file_says_which_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trusted.json"
    path.write_text(json.dumps({sha(QUERY): QUERY, sha(OTHER): QUERY}))
    assert main(["serve", "--port", "1", "--trusted-documents", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"entry '{sha(OTHER)}'" in err
    assert "not the document's SHA-256" in err
