"""The gate in front of the GraphQL view: refusals before any GraphQL work or API call."""

from __future__ import annotations

from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kueue_graphql.auth import (
    bearer_token,
)
from kueue_graphql.core.errors import ErrorCode
from kueue_graphql.http.document_size import document_size_limit, too_large
from kueue_graphql.http.media import negotiate
from kueue_graphql.http.middleware import (
    is_subscription_stream,
)
from kueue_graphql.http.refusals import (
    MALFORMED_CREDENTIALS,
    MISSING_CREDENTIALS,
    check_operation_name,
    graphql_error,
    unauthenticated,
)
from kueue_graphql.http.services import Services
from kueue_graphql.http.settings import ServerSettings

# An answer to a query over GET holds what the caller may read: no cache keeps it (the URL
# does not name the caller, whose token is in the Authorization header).
GET_CACHE_CONTROL = (b"cache-control", b"private, no-store")


def is_get_request(request: Request) -> bool:
    """A GraphQL request over GET: a document (`query`) or a persisted query's hash
    (`extensions`) in the query string. Without either, a GET is for the GraphiQL page."""
    params = request.query_params
    return request.method == "GET" and ("query" in params or "extensions" in params)


class GraphQLGate:
    """Refusals before any GraphQL work or API call, as GraphQL-shaped errors in the media type
    the request asked for: an Accept header that admits no JSON (406), subscriptions over GET,
    and queries over GET when they are off (405), a POST body that is not JSON (415), and in
    token-review mode a query without a bearer token (401; one whose token TokenReview rejects
    gets the same 401 from GraphQLView). The GraphiQL page itself (GET, HTML) needs no token.
    Every answer to a GET request carries `Cache-Control: private, no-store`."""

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self.allow_get_queries = settings.allow_get_queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            if is_get_request(request):
                send = uncached(send)
            refusal = self.refusal(request)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, request: Request) -> Response | None:
        is_get_query = is_get_request(request)
        streaming = is_subscription_stream(request.scope)
        media = negotiate(request.headers.get("accept"))
        if media is None and (request.method == "POST" or is_get_query) and not streaming:
            return graphql_error(
                406,
                ErrorCode.BAD_REQUEST,
                "the Accept header admits no media type this server answers in: accept "
                "application/graphql-response+json or application/json",
            )
        if is_get_query and streaming:
            # A subscription's document and variables would be in the URL, which proxies
            # and access logs keep; and it runs for as long as it is open.
            return graphql_error(
                405,
                ErrorCode.BAD_REQUEST,
                "subscriptions over GET are not served; send them with POST or over WebSocket",
                headers={"Allow": "POST"},
                media=media,
            )
        if is_get_query and not self.allow_get_queries:
            return graphql_error(
                405,
                ErrorCode.BAD_REQUEST,
                "queries over GET are off on this server (--no-allow-get-queries); send them "
                "with POST",
                headers={"Allow": "POST"},
                media=media,
            )
        media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if request.method == "POST" and media_type != "application/json":
            return graphql_error(
                415,
                ErrorCode.BAD_REQUEST,
                'send the query as JSON, `Content-Type: application/json`, body {"query": "..."}',
                media=media,
            )
        if is_get_query:
            # The document and its variables are in the URL: the same cap as a body.
            limit = document_size_limit(self.settings)
            if len(request.scope["query_string"]) > limit:
                return graphql_error(
                    414,
                    ErrorCode.BAD_REQUEST,
                    f"{too_large('query string', limit)}; send the query with POST",
                    media=media,
                )
            try:
                check_operation_name(request.query_params.get("operationName"), self.settings)
            except HTTPException as error:
                return graphql_error(
                    error.status_code, ErrorCode.BAD_REQUEST, error.reason, media=media
                )
        services: Services = request.app.state.services
        if (request.method == "POST" or is_get_query) and services.authenticator.requires_token():
            authorization = request.headers.get("authorization")
            if authorization is None:
                return unauthenticated(MISSING_CREDENTIALS, rejected=False, media=media)
            if bearer_token(authorization) is None:
                # Anything but `Bearer <one token>`: refused here, without a TokenReview.
                return unauthenticated(
                    MALFORMED_CREDENTIALS, rejected=True, malformed=True, media=media
                )
        return None


def uncached(send: Send) -> Send:
    """`send` with `Cache-Control: private, no-store` added to the response head."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", []) if h[0].lower() != b"cache-control"]
            message = {**message, "headers": [*headers, GET_CACHE_CONTROL]}
        await send(message)

    return sending
