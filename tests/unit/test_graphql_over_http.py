"""GraphQL over HTTP (the current draft): the answer's media type from Accept (q-values),
application/graphql-response+json's status codes (4xx and no `data` for a request that was
not executed), application/json as before; queries over GET with Cache-Control."""

from collections.abc import AsyncIterator

import pytest

from kueue_graphql.http import ServerSettings
from kueue_graphql.http.media import MAX_ACCEPT_CHARACTERS, ResponseMedia, negotiate
from tests.unit.apiserver_stub import Stub, apiserver_stub
from tests.unit.test_http import BEARER, client_for, refuse_everything

GRAPHQL_RESPONSE = "application/graphql-response+json"
ASKS_NEW = {**BEARER, "Accept": f"{GRAPHQL_RESPONSE}, application/json;q=0.9"}
ASKS_JSON = {**BEARER, "Accept": "application/json"}


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    async with apiserver_stub(refuse_everything) as running:
        yield running


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, ResponseMedia.JSON),
        ("", ResponseMedia.JSON),
        ("*/*", ResponseMedia.JSON),
        ("application/*", ResponseMedia.JSON),
        ("application/json", ResponseMedia.JSON),
        (GRAPHQL_RESPONSE, ResponseMedia.GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE}, application/json", ResponseMedia.GRAPHQL_RESPONSE),
        (f"application/json, {GRAPHQL_RESPONSE}", ResponseMedia.JSON),
        (f"application/json;q=0.9, {GRAPHQL_RESPONSE}", ResponseMedia.GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE};q=0.5, application/json", ResponseMedia.JSON),
        (f"{GRAPHQL_RESPONSE}; charset=utf-8, */*;q=0.1", ResponseMedia.GRAPHQL_RESPONSE),
        (f"*/*, {GRAPHQL_RESPONSE};q=0", ResponseMedia.JSON),
        ("APPLICATION/GRAPHQL-RESPONSE+JSON", ResponseMedia.GRAPHQL_RESPONSE),
        # urql's and Apollo Client 4's headers.
        (
            f"{GRAPHQL_RESPONSE}, application/graphql+json, application/json, "
            "text/event-stream, multipart/mixed",
            ResponseMedia.GRAPHQL_RESPONSE,
        ),
        (f"{GRAPHQL_RESPONSE},application/json;q=0.9", ResponseMedia.GRAPHQL_RESPONSE),
        ("text/plain", None),
        ("application/json;q=0", None),
        ("application/xml, text/html;q=0.9", None),
        ("application/json;q=nonsense", None),
    ],
)
def test_negotiation_follows_q_values(accept: str | None, expected: ResponseMedia | None) -> None:
    assert negotiate(accept) is expected


def test_negotiation_reads_a_bounded_part_of_the_header() -> None:
    # What follows the first MAX_ACCEPT_CHARACTERS characters is not looked at.
    padding = "text/plain, " * (MAX_ACCEPT_CHARACTERS // 10)
    assert negotiate(padding + GRAPHQL_RESPONSE) is None


async def test_graphql_response_json_is_answered_in_it(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.post("/graphql", json={"query": "{ __typename }"}, headers=ASKS_NEW)
    assert response.status_code == 200
    assert response.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert response.json()["data"] == {"__typename": "Query"}
    assert stub.requests == []


@pytest.mark.parametrize(
    "query",
    [
        "{",  # does not parse
        "{ noSuchField }",  # does not validate
        "query A { __typename } query B { __typename }",  # no operation can be chosen
        "query ($n: Int!) { __typename }",  # a variable without a value
    ],
)
async def test_request_errors_are_400_without_data_in_graphql_response_json(
    stub: Stub, query: str
) -> None:
    async with client_for(stub, ServerSettings()) as client:
        new = await client.post("/graphql", json={"query": query}, headers=ASKS_NEW)
        old = await client.post("/graphql", json={"query": query}, headers=ASKS_JSON)
    assert new.status_code == 400
    assert new.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert "data" not in new.json()
    assert new.json()["errors"][0]["message"]
    # application/json: as before this media type existed.
    assert old.status_code == 200
    assert old.headers["content-type"] == "application/json"
    assert old.json()["data"] is None
    assert old.json()["errors"] == new.json()["errors"]
    assert stub.requests == []


async def test_refusals_before_execution_use_the_asked_media_type(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        no_token = await client.post(
            "/graphql",
            json={"query": "{ __typename }"},
            headers={"Accept": GRAPHQL_RESPONSE},
        )
        not_json = await client.post(
            "/graphql",
            content=b"{",
            headers={**ASKS_NEW, "Content-Type": "application/json"},
        )
    assert no_token.status_code == 401
    assert no_token.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert "data" not in no_token.json()
    assert not_json.status_code == 400
    assert not_json.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
    assert not_json.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert stub.requests == []


async def test_an_accept_header_admitting_no_json_is_406(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.post(
            "/graphql",
            json={"query": "{ __typename }"},
            headers={**BEARER, "Accept": "text/plain"},
        )
        page = await client.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 406
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert "application/graphql-response+json" in error["message"]
    assert page.status_code == 200  # GraphiQL's page is no GraphQL request
    assert stub.requests == []


async def test_queries_over_get_are_served_by_default_and_not_cached(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.get(
            "/graphql", params={"query": "{ __typename }"}, headers=ASKS_NEW
        )
        refused = await client.get("/graphql", params={"query": "{ __typename }"})
    assert response.status_code == 200
    assert response.json()["data"] == {"__typename": "Query"}
    assert response.headers["cache-control"] == "private, no-store"
    assert refused.status_code == 401  # no token: refused, and not cached either
    assert refused.headers["cache-control"] == "private, no-store"
    assert stub.requests == []


async def test_subscriptions_are_never_served_over_get(stub: Stub) -> None:
    async with client_for(stub, ServerSettings(allow_get_queries=True)) as client:
        response = await client.get(
            "/graphql",
            params={"query": "subscription { __typename }"},
            headers={**BEARER, "Accept": 'multipart/mixed;subscriptionSpec="1.0"'},
        )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert "subscriptions over GET are not served" in response.json()["errors"][0]["message"]
    assert stub.requests == []


async def test_answers_to_post_are_not_marked_uncacheable(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        response = await client.post(
            "/graphql", json={"query": "{ __typename }"}, headers=ASKS_JSON
        )
    assert response.status_code == 200
    assert "cache-control" not in response.headers
    assert response.headers["content-type"] == "application/json"
