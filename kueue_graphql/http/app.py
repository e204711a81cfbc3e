"""The Starlette application."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from cross_web import HTTPException
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLHTTPResponse
from strawberry.subscriptions import (
    GRAPHQL_TRANSPORT_WS_PROTOCOL,
    GRAPHQL_WS_PROTOCOL,
    MULTIPART_SUBSCRIPTION_PROTOCOL,
)
from strawberry.types import ExecutionResult, SubscriptionExecutionResult
from strawberry.types.unset import UNSET, UnsetType

from kueue_graphql.auth import (
    Authenticator,
    LocalAuthenticator,
    TokenReviewAuthenticator,
    bearer_token,
)
from kueue_graphql.context import LiveRegistry, RequestContext
from kueue_graphql.core.errors import ErrorCode, ServiceError, UnauthenticatedError
from kueue_graphql.graph.schema import build_schema
from kueue_graphql.http.access_log import install_access_log_redaction
from kueue_graphql.http.document_size import document_size_limit, too_large
from kueue_graphql.http.graphiql import (
    ASSETS_MOUNT,
    GraphiQLAssets,
    headerless_page,
    local_asset_page,
)
from kueue_graphql.http.json_input import JsonInputError, decode_json
from kueue_graphql.http.memory import FreeMemoryReturner, glibc_malloc_trim
from kueue_graphql.http.middleware import (
    BodySizeLimit,
    ConcurrencyLimit,
    Deadline,
    DropImpersonationHeaders,
    is_subscription_stream,
)
from kueue_graphql.http.observe import REQUEST_ID_HEADER, RequestLog, request_record
from kueue_graphql.http.settings import AuthMode, ReadMode, ServerSettings
from kueue_graphql.http.websocket import (
    BoundedWebSocketAdapter,
    LegacyWSHandler,
    TransportWSHandler,
)
from kueue_graphql.http.ws_log import install_ws_task_log_filter
from kueue_graphql.http.ws_messages import MessageLimits
from kueue_graphql.kube.authz import Authorizer, service_identity_problems
from kueue_graphql.kube.cache_changes import CacheChanges
from kueue_graphql.kube.changes import ChangeSources, WatchSources
from kueue_graphql.kube.client import ApiCallMeter, KubeClient
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.kube.reflector_metrics import ReflectorCollector
from kueue_graphql.kube.transport import build_api_client, close_api_client
from kueue_graphql.lookups.cache_indexes import kueue_cache
from kueue_graphql.observe.metrics import REGISTRY

log = logging.getLogger(__name__)

GIL_SWITCH_INTERVAL_SECONDS = 0.001


@dataclass
class Services:
    """Process-wide: the one ApiClient (inside KubeClient), the authorization cache, and the
    token-review cache. Nothing here holds object data."""

    kube: KubeClient
    authenticator: Authenticator
    authorizer: Authorizer
    live: LiveRegistry
    # Subscriptions' watches: a client of its own, so long-running watches never take the
    # connections reads need.
    watch_kube: KubeClient
    # Why the service's own identity cannot serve callers (empty: it can); /readyz reports it.
    identity_problems: list[str] = field(default_factory=list)
    # `cache` read mode only: the watch-fed stores of the Kueue kinds.
    cache: SharedInformerFactory | None = None


def build_services(
    kube: KubeClient, settings: ServerSettings, watch_kube: KubeClient | None = None
) -> Services:
    authenticator: Authenticator
    if settings.auth_mode is AuthMode.LOCAL:
        authenticator = LocalAuthenticator(kube)
    else:
        authenticator = TokenReviewAuthenticator(
            kube,
            ttl_seconds=settings.token_cache_ttl_seconds,
            audiences=settings.token_audiences,
        )
    authorizer = Authorizer(
        kube,
        self_review=not authenticator.impersonates,
        ttl_seconds=settings.authz_cache_ttl_seconds,
        deny_ttl_seconds=settings.authz_deny_cache_ttl_seconds,
    )
    # Free memory a closed burst of subscriptions leaves with malloc goes back to the OS.
    memory_returner = FreeMemoryReturner(glibc_malloc_trim())
    return Services(
        kube=kube,
        authenticator=authenticator,
        authorizer=authorizer,
        live=LiveRegistry(settings.live_limits, on_closed=memory_returner.closed),
        watch_kube=watch_kube or kube,
    )


def change_sources(services: Services) -> ChangeSources:
    """What wakes a subscription, over WebSocket and HTTP alike. Cache mode: changes to Kueue
    kinds wake from the informers (once the cache has them); Pods and Jobs are watched as the
    caller in both modes."""
    watches = WatchSources(services.watch_kube)
    return watches if services.cache is None else CacheChanges(services.cache, watches)


def graphql_error(
    status: int, code: ErrorCode, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """A GraphQL-shaped error answer for requests refused outside of execution."""
    body = {"errors": [{"message": message, "extensions": {"code": code.value}}]}
    return JSONResponse(body, status_code=status, headers=headers)


MISSING_CREDENTIALS = "send `Authorization: Bearer <token>`"
MALFORMED_CREDENTIALS = "the Authorization header must be exactly `Bearer <token>` (one token)"


def unauthenticated(message: str, *, rejected: bool, malformed: bool = False) -> JSONResponse:
    # RFC 6750: a challenge, with error="invalid_token" when a token was sent but not accepted
    # and error="invalid_request" when the header is not `Bearer <token>`.
    if malformed:
        challenge = 'Bearer error="invalid_request"'
    elif rejected:
        challenge = 'Bearer error="invalid_token"'
    else:
        challenge = "Bearer"
    return graphql_error(
        401, ErrorCode.UNAUTHENTICATED, message, headers={"WWW-Authenticate": challenge}
    )


def check_operation_name(operation_name: object, settings: ServerSettings) -> None:
    """An over-long operationName is refused before GraphQL would echo it in an error."""
    limit = settings.max_operation_name_length
    if isinstance(operation_name, str) and len(operation_name) > limit:
        raise HTTPException(400, f"operationName is longer than {limit} characters")


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
        # WebSocket messages: the same size cap as an HTTP body, the same JSON depth and
        # operationName limits (http/websocket.py).
        self.message_limits = MessageLimits(
            max_bytes=document_size_limit(settings),
            max_json_depth=settings.max_json_depth,
            max_operation_name_length=settings.max_operation_name_length,
        )
        # GraphiQL would keep the Authorization header (a bearer token) in the browser's
        # localStorage; keep it only for the page's lifetime.
        html: str = headerless_page(super().graphql_ide_html)
        if settings.graphiql and settings.graphiql_assets is not None:
            # Its JavaScript and CSS from this server instead of unpkg.com.
            html = local_asset_page(html)
        self._graphiql_html = html

    @property
    def graphql_ide_html(self) -> str:
        return self._graphiql_html

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        response: Response
        try:
            response = await self.run(Request(scope, receive=receive))
        except HTTPException as error:
            # Strawberry's own refusals (no query, batching, a field of the wrong JSON type).
            response = graphql_error(error.status_code, ErrorCode.BAD_REQUEST, error.reason)
        except TokenRejectedError as rejected:
            response = unauthenticated(str(rejected), rejected=True)
        await response(scope, receive, send)

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
        return await super().process_result(request, result)

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


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def build_metrics_app(api: Starlette) -> Starlette:
    """`/metrics` (Prometheus text format) of the API app `api`, for the metrics listener
    (http/server.py): the process-wide series and, in cache mode, the informers of `api`."""

    async def metrics(request: Request) -> Response:
        body = generate_latest(REGISTRY)
        cache_metrics: CollectorRegistry | None = getattr(api.state, "cache_metrics", None)
        if cache_metrics is not None:
            body += generate_latest(cache_metrics)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/metrics", metrics, methods=["GET"])])


async def readyz(request: Request) -> Response:
    services: Services = request.app.state.services
    settings: ServerSettings = request.app.state.settings
    try:
        # A probe must answer within its own timeout (kubelet's default is 1 s, ours 2 s):
        # an API server that does not answer /version in time counts as down.
        async with asyncio.timeout(settings.readyz_timeout_seconds):
            await services.kube.request_json("GET", "/version", meter=ApiCallMeter(budget=1))
    except (ServiceError, TimeoutError):
        host = services.kube.api_client.configuration.host
        return PlainTextResponse(f"Kubernetes API server {host} unreachable", status_code=503)
    if services.cache is not None:
        # Not ready before every informer has synced, nor while a watch stays broken.
        cache_problems = services.cache.problems()
        if cache_problems:
            return PlainTextResponse("\n".join(cache_problems), status_code=503)
    if services.identity_problems:
        # Asked again, so that a ClusterRoleBinding added later makes the pod ready.
        services.identity_problems = await service_identity_problems(services.kube)
        if services.identity_problems:
            return PlainTextResponse("\n".join(services.identity_problems), status_code=503)
    return PlainTextResponse("ok")


async def freeze_when_synced(cache: SharedInformerFactory) -> None:
    """Once every informer has its first complete list: collect, then freeze what exists out of
    the garbage collector. The cached objects (some 1.5 million containers at 10,000 Workloads)
    live until a watch event replaces them; frozen, full collections no longer walk them.
    Objects that arrive later are collected as usual; a frozen one is still freed by its
    reference count when the store drops it (decoded JSON holds no reference cycles)."""
    await cache.settled()
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    log.info(
        "cache synced: %d objects frozen out of the garbage collector (%.0f ms)",
        gc.get_freeze_count(),
        (time.perf_counter() - started) * 1000,
    )


def build_app(settings: ServerSettings, *, kube: KubeClient | None = None) -> Starlette:
    """The ASGI app. With `kube` given (tests), that client is used and not closed."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owned = kube is None
        client = kube or KubeClient(
            await build_api_client(settings.kubeconfig, settings.kube_context, settings.in_cluster),
            request_timeout=settings.api_request_timeout_seconds,
        )
        watch_client = KubeClient(
            await build_api_client(
                settings.kubeconfig, settings.kube_context, settings.in_cluster, pool_size=0
            )
        )
        app.state.services = build_services(client, settings, watch_client)
        app.state.settings = settings
        if settings.auth_mode is AuthMode.LOCAL:
            log.warning(
                "auth mode LOCAL: no caller authentication; every request reads as the "
                "kubeconfig's identity. For development on a loopback address only."
            )
        else:
            log.info(
                "auth mode token-review: callers are identified by TokenReview and impersonated"
            )
            problems = await service_identity_problems(client)
            app.state.services.identity_problems = problems
            for problem in problems:
                log.error("not ready: %s", problem)
        # What exists now (modules, the schema, the clients: some 100,000 objects) lives as long
        # as the server. Frozen, the garbage collector's full collections skip it; otherwise
        # each one walks it all, 50-70 ms during which the event loop answers nothing.
        gc.collect()
        gc.freeze()
        # New documents are analysed on a thread of their own (graph/schema.py): the event
        # loop waits at most this long for the GIL each time it wakes, instead of 5 ms, so a
        # stream of bombs delays a /healthz by a few ms, not by a few 5 ms waits.
        switch_interval = sys.getswitchinterval()
        app.state.cache_metrics = None
        freezing: asyncio.Task[None] | None = None
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_SECONDS)
        if settings.read_mode is ReadMode.CACHE:
            # Informers read under the service's own identity, on the watch client's pool.
            cache = kueue_cache(watch_client)
            cache.start()
            app.state.services.cache = cache
            # A registry of this app's own: two apps in one process (tests) each report their
            # informers, and the process-wide REGISTRY would refuse the second's names.
            cache_metrics = CollectorRegistry(auto_describe=True)
            cache_metrics.register(ReflectorCollector(cache.reflectors.values()))
            app.state.cache_metrics = cache_metrics
            if settings.cache_gc_freeze:
                freezing = asyncio.create_task(freeze_when_synced(cache), name="cache gc freeze")
            log.info("read mode cache: Kueue kinds from watch-fed stores, authorized per caller")
        try:
            yield
        finally:
            sys.setswitchinterval(switch_interval)
            if freezing is not None:
                freezing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await freezing
            gc.unfreeze()
            if app.state.services.cache is not None:
                await app.state.services.cache.stop()
            await close_api_client(watch_client.api_client)
            if owned:
                await close_api_client(client.api_client)

    install_access_log_redaction()
    install_ws_task_log_filter()
    view = GraphQLView(settings)
    routes: list[BaseRoute] = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        # No /metrics here: it has a listener of its own (http/server.py, --metrics-port).
        Route(
            "/graphql",
            GraphQLGate(view, settings),
            methods=["GET", "POST"],
        ),
        # Subscriptions: graphql-transport-ws (and the legacy graphql-ws) on the same path.
        WebSocketRoute("/graphql", view),
    ]
    if settings.graphiql and settings.graphiql_assets is not None:
        # Refuses to start (GraphiQLAssetsError) when a file is missing.
        routes.append(Mount(ASSETS_MOUNT, app=GraphiQLAssets(settings.graphiql_assets)))
    return Starlette(
        routes=routes,
        middleware=[
            # First: a refusal when full must cost nothing else.
            Middleware(ConcurrencyLimit, max_requests=settings.max_concurrent_requests),
            Middleware(RequestLog),
            # Browser pages on the listed origins may call /graphql with their own bearer token
            # (no cookies: the token is sent explicitly, so credentials stay off).
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_allow_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", REQUEST_ID_HEADER],
                expose_headers=[REQUEST_ID_HEADER],
                max_age=600,
            ),
            Middleware(DropImpersonationHeaders),
            Middleware(
                BodySizeLimit,
                max_bytes=document_size_limit(settings),
                timeout_seconds=settings.body_timeout_seconds,
            ),
            # One second of grace so the API-call deadline (the precise one) fires first.
            Middleware(Deadline, seconds=settings.request_limits.deadline_seconds + 1.0),
        ],
        lifespan=lifespan,
    )
