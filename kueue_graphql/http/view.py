"""The GraphQL view: strawberry's ASGI GraphQL over HTTP, multipart and WebSocket, with this
service's limits, its per-request context (authentication, reads, subscriptions' change
sources), a rejected token answered 401, and GraphiQL without stored credentials."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from cross_web import HTTPException
from graphql import GraphQLError, GraphQLSchema, parse, validate
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.subscriptions import (
    GRAPHQL_TRANSPORT_WS_PROTOCOL,
    GRAPHQL_WS_PROTOCOL,
    MULTIPART_SUBSCRIPTION_PROTOCOL,
)
from strawberry.types import ExecutionResult, SubscriptionExecutionResult
from strawberry.types.unset import UNSET, UnsetType

from kueue_graphql.auth import (
    bearer_token,
)
from kueue_graphql.context import RequestContext
from kueue_graphql.core.errors import ErrorCode, ServiceError, UnauthenticatedError
from kueue_graphql.graph.schema import build_schema
from kueue_graphql.http.document_size import document_size_limit
from kueue_graphql.http.graphiql import content_security_policy, graphiql_page
from kueue_graphql.http.json_input import JsonInputError, decode_json
from kueue_graphql.http.media import ResponseMedia, negotiate
from kueue_graphql.http.middleware import (
    is_subscription_stream,
)
from kueue_graphql.http.observe import request_record
from kueue_graphql.http.persisted import (
    AutomaticPersistedQueries,
    PersistedQueryError,
    TrustedDocuments,
    TrustedDocumentsError,
    load_trusted_documents,
)
from kueue_graphql.http.refusals import (
    check_operation_name,
    graphql_error,
    unauthenticated,
)
from kueue_graphql.http.services import Services, change_sources
from kueue_graphql.http.settings import ServerSettings
from kueue_graphql.http.websocket import (
    BoundedWebSocketAdapter,
    LegacyWSHandler,
    TransportWSHandler,
)
from kueue_graphql.http.ws_messages import MessageLimits
from kueue_graphql.kube.client import ApiCallMeter


class TokenRejectedError(Exception):
    """The caller's token was not accepted: the whole request answers 401, not a 200 with an
    error next to null fields."""


def rejected_token(result: object) -> str | None:
    """The message of a result that says the caller's token was not accepted, else None."""
    if not isinstance(result, ExecutionResult) or result.data is not None:
        return None
    for error in result.errors or []:
        if (error.extensions or {}).get("code") == ErrorCode.UNAUTHENTICATED.value:
            return error.message
    return None


async def first_checked(results: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
    """`results` with its first message computed now: TokenRejectedError when that message
    says the token was not accepted (the stream is closed; nothing was read as anyone)."""
    try:
        first = await anext(results)
    except StopAsyncIteration:
        first = None
    except BaseException:
        await results.aclose()
        raise
    rejected = rejected_token(first)
    if rejected is not None:
        await results.aclose()
        raise TokenRejectedError(rejected)

    async def replayed() -> AsyncGenerator[Any, None]:
        try:
            if first is not None:
                yield first
                async for result in results:
                    yield result
        finally:
            await results.aclose()

    return replayed()


def is_request_error(result: ExecutionResult) -> bool:
    """The result of a request that was not executed: a document that does not parse or
    validate, an operation that cannot be chosen, variables that do not coerce, a limit
    refused before execution. Execution errors have a path; these do not, and no data."""
    errors = result.errors or []
    return result.data is None and bool(errors) and all(not error.path for error in errors)


class NegotiatedResponse(Response):
    """The sub-response of one HTTP request, with the media type its answer is written in."""

    media: ResponseMedia | None = None


class GraphQLView(GraphQL[RequestContext, None]):
    websocket_adapter_class = BoundedWebSocketAdapter
    graphql_transport_ws_handler_class = TransportWSHandler
    graphql_ws_handler_class = LegacyWSHandler

    def __init__(self, settings: ServerSettings) -> None:
        super().__init__(
            build_schema(settings.query_limits, send_queue=settings.live_limits.send_queue),
            graphql_ide="graphiql" if settings.graphiql else None,
            allow_queries_via_get=settings.allow_get_queries,
            # WebSocket (graphql-transport-ws, legacy graphql-ws) and, for clients without
            # WebSockets, HTTP multipart subscriptions (GraphiQL's and Apollo's fetchers).
            subscription_protocols=(
                GRAPHQL_TRANSPORT_WS_PROTOCOL,
                GRAPHQL_WS_PROTOCOL,
                MULTIPART_SUBSCRIPTION_PROTOCOL,
            ),
        )
        self.settings = settings
        self.persisted: AutomaticPersistedQueries | TrustedDocuments
        trusted: TrustedDocuments | None = None
        if settings.trusted_documents is not None:
            trusted = TrustedDocuments(self._checked_trusted_documents(settings.trusted_documents))
            self.persisted = trusted
        else:
            self.persisted = AutomaticPersistedQueries(settings.persisted_queries_max_bytes)
        # WebSocket messages: the same size cap as an HTTP body, the same JSON depth and
        # operationName limits, the same trusted documents (http/websocket.py).
        self.message_limits = MessageLimits(
            max_bytes=document_size_limit(settings),
            max_json_depth=settings.max_json_depth,
            max_operation_name_length=settings.max_operation_name_length,
            trusted=trusted,
        )
        # GraphiQL's files from this server (never unpkg.com), no header (a bearer token) kept in
        # the browser's localStorage, the schema fetched with the pasted headers.
        html: str = graphiql_page(super().graphql_ide_html)
        self._graphiql_csp = content_security_policy(html)
        self._graphiql_html = html

    def _checked_trusted_documents(self, path: Path) -> dict[str, str]:
        """The operator's documents, each parsed and validated against the schema at start:
        TrustedDocumentsError naming the first that would fail for every caller."""
        documents = load_trusted_documents(path, document_size_limit(self.settings))
        schema: GraphQLSchema = self.schema._schema  # type: ignore[attr-defined]
        for sha, document in documents.items():
            try:
                errors = validate(schema, parse(document))
            except GraphQLError as error:
                errors = [error]
            if errors:
                raise TrustedDocumentsError(
                    f"--trusted-documents {path}: entry {sha}: {errors[0].message}"
                )
        return documents

    @property
    def graphql_ide_html(self) -> str:
        return self._graphiql_html

    async def render_graphql_ide(self, request: Request) -> Response:
        return HTMLResponse(
            self._graphiql_html,
            headers={
                "Content-Security-Policy": self._graphiql_csp,
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )

    def should_render_graphql_ide(self, request: Any) -> bool:
        # A GET with only a persisted query's hash is a query, not a request for the page.
        return "extensions" not in request.query_params and bool(
            super().should_render_graphql_ide(request)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope, receive=receive)
        media = negotiate(request.headers.get("accept"))
        response: Response
        try:
            response = await self.run(request)
        except HTTPException as error:
            # Strawberry's own refusals (no query, batching, a field of the wrong JSON type).
            response = graphql_error(
                error.status_code, ErrorCode.BAD_REQUEST, error.reason, media=media
            )
        except PersistedQueryError as refused:
            response = graphql_error(refused.status, refused.code, refused.message, media=media)
        except TokenRejectedError as rejected:
            response = unauthenticated(str(rejected), rejected=True, media=media)
        await response(scope, receive, send)

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        sub_response = NegotiatedResponse()
        sub_response.status_code = None  # type: ignore[assignment]
        del sub_response.headers["content-length"]
        sub_response.media = negotiate(request.headers.get("accept"))
        return sub_response

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        response = super().create_response(response_data, sub_response)
        media = getattr(sub_response, "media", None)
        if media is ResponseMedia.GRAPHQL_RESPONSE:
            response.headers["content-type"] = media.content_type
            if isinstance(response_data, dict) and "data" not in response_data:
                # Not executed (a parse or validation error, a refused document): GraphQL
                # over HTTP's 400.
                response.status_code = 400
        return response

    async def parse_http_body(self, request: Any) -> Any:
        parsed = await super().parse_http_body(request)
        if isinstance(parsed, GraphQLRequestData):
            # A persisted query's hash becomes its document (or a PersistedQueryError),
            # before anything parses it.
            parsed.query = self.persisted.document(parsed.query, parsed.extensions)
        return parsed

    async def execute_operation(
        self,
        request: Request,
        request_adapter: Any,
        request_data: Any,
        context: RequestContext,
        root_value: Any,
        sub_response: Any,
    ) -> Any:
        result = await super().execute_operation(
            request, request_adapter, request_data, context, root_value, sub_response
        )
        if isinstance(result, SubscriptionExecutionResult) and is_subscription_stream(
            request.scope
        ):
            # An HTTP stream's head waits for its first message, so a token TokenReview
            # rejects is a 401 like a query's, not an error part after a 200.
            return await first_checked(cast(AsyncGenerator[Any, None], result))
        return result

    def parse_json(self, data: str | bytes) -> Any:
        # Strawberry lets a body that is not UTF-8, or JSON but not an object, through as a 500;
        # Python's parser fails on deep nesting and huge integers (http/json_input.py).
        try:
            parsed = decode_json(data, self.settings.max_json_depth, "the request body")
        except JsonInputError as error:
            raise HTTPException(400, str(error)) from error
        if not isinstance(parsed, dict | list):
            raise HTTPException(
                400, 'the request body must be a JSON object: {"query": "...", "variables": {}}'
            )
        if isinstance(parsed, dict) and "query" in parsed:
            check_operation_name(parsed.get("operationName"), self.settings)
        return parsed

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        # The identity is resolved lazily, so a rejected token surfaces as a field error;
        # any such error means nothing in this request was read as anyone.
        streaming = is_subscription_stream(request.scope)
        for error in result.errors or []:
            code = (error.extensions or {}).get("code")
            # A stream's parts follow its 200 head: there the error is the last part.
            if code == ErrorCode.UNAUTHENTICATED.value and not streaming:
                raise TokenRejectedError(error.message)
        record = request_record(request.scope)
        if record is not None:
            codes = [(e.extensions or {}).get("code") for e in result.errors or []]
            record.outcome = str(codes[0] or ErrorCode.INTERNAL.value) if codes else "OK"
        processed = await super().process_result(request, result)
        if (
            not streaming
            and is_request_error(result)
            and negotiate(request.headers.get("accept")) is ResponseMedia.GRAPHQL_RESPONSE
        ):
            # Nothing was executed: application/graphql-response+json has no `data` then.
            processed.pop("data", None)
        return processed

    async def get_context(self, request: Request | WebSocket, response: Any) -> RequestContext:
        services: Services = request.app.state.services
        header_token = bearer_token(request.headers.get("authorization"))
        authenticator = services.authenticator
        if not isinstance(request, WebSocket):

            async def authenticate(meter: ApiCallMeter) -> Any:
                return await authenticator.authenticate(header_token, meter)

            context = self._context(services, authenticate)
            record = request_record(request.scope)
            if record is not None:
                record.context = context
            if is_subscription_stream(request.scope):
                # A multipart subscription: each message gets a fresh context as the same
                # caller (the header's token, re-reviewed), as over WebSocket.
                context.renew = lambda: self._context(services, authenticate)
                context.live = services.live
                context.changes = change_sources(services)
            return context

        # A WebSocket connection: the token comes from connection_init's payload
        # (`Authorization`), else from the upgrade request's header; it is read when used, as
        # connection_init arrives after this context is made.
        connection: RequestContext

        async def authenticate_connection(meter: ApiCallMeter) -> Any:
            params = connection.connection_params or {}
            sent = params.get("Authorization") or params.get("authorization")
            token = bearer_token(sent) if isinstance(sent, str) else None
            return await authenticator.authenticate(token or header_token, meter)

        def renew() -> RequestContext:
            return self._context(services, authenticate_connection)

        connection = self._context(services, authenticate_connection)
        connection.renew = renew
        connection.live = services.live
        connection.changes = change_sources(services)
        return connection

    def _context(
        self, services: Services, authenticate: Callable[[ApiCallMeter], Awaitable[Any]]
    ) -> RequestContext:
        return RequestContext.create(
            client=services.kube,
            authorizer=services.authorizer,
            authenticate=authenticate,
            impersonate=services.authenticator.impersonates,
            limits=self.settings.request_limits,
            quota_disclosure=self.settings.quota_disclosure,
            cache=services.cache,
        )

    async def on_ws_connect(self, context: RequestContext) -> UnsetType | None | dict[str, object]:
        # The token is reviewed at connect: a connection without a valid one is closed (4403)
        # before any operation runs.
        try:
            await context.identity()
        except UnauthenticatedError as error:
            raise ConnectionRejectionError({"code": ErrorCode.UNAUTHENTICATED.value}) from error
        except ServiceError as error:
            raise ConnectionRejectionError({"code": error.code.value}) from error
        unset: UnsetType = UNSET
        return unset
