"""The gate in front of the GraphQL view: refusals before any GraphQL work or API call."""

from __future__ import annotations

from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from kueue_graphql.auth import (
    bearer_token,
)
from kueue_graphql.core.errors import ErrorCode
from kueue_graphql.http.document_size import document_size_limit, too_large
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


class GraphQLGate:
    """Refusals before any GraphQL work or API call, as GraphQL-shaped errors: queries over GET
    when they are off (405), a POST body that is not JSON (415), and in token-review mode a
    query without a bearer token (401; one whose token TokenReview rejects gets the same 401
    from GraphQLView). The GraphiQL page itself (GET, HTML) needs no token."""

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self.allow_get_queries = settings.allow_get_queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(Request(scope))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, request: Request) -> Response | None:
        is_get_query = request.method == "GET" and "query" in request.query_params
        if is_get_query and not self.allow_get_queries:
            # A multipart subscription over GET follows the same switch: its document and
            # variables would be in the URL, which proxies and access logs keep.
            what = "subscriptions" if is_subscription_stream(request.scope) else "queries"
            return graphql_error(
                405,
                ErrorCode.BAD_REQUEST,
                f"{what} over GET are off on this server (--allow-get-queries); send them "
                "with POST",
                headers={"Allow": "POST"},
            )
        media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if request.method == "POST" and media_type != "application/json":
            return graphql_error(
                415,
                ErrorCode.BAD_REQUEST,
                'send the query as JSON, `Content-Type: application/json`, body {"query": "..."}',
            )
        if is_get_query:
            # The document and its variables are in the URL: the same cap as a body.
            limit = document_size_limit(self.settings)
            if len(request.scope["query_string"]) > limit:
                return graphql_error(
                    414,
                    ErrorCode.BAD_REQUEST,
                    f"{too_large('query string', limit)}; send the query with POST",
                )
            try:
                check_operation_name(request.query_params.get("operationName"), self.settings)
            except HTTPException as error:
                return graphql_error(error.status_code, ErrorCode.BAD_REQUEST, error.reason)
        services: Services = request.app.state.services
        if (request.method == "POST" or is_get_query) and services.authenticator.requires_token():
            authorization = request.headers.get("authorization")
            if authorization is None:
                return unauthenticated(MISSING_CREDENTIALS, rejected=False)
            if bearer_token(authorization) is None:
                # Anything but `Bearer <one token>`: refused here, without a TokenReview.
                return unauthenticated(MALFORMED_CREDENTIALS, rejected=True, malformed=True)
        return None
