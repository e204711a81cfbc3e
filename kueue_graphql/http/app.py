"""The Starlette application: the routes, the middleware and the lifespan that builds the
services (http/services.py), starts the cache in its read mode and closes both clients."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from kueue_graphql.core.modes import AuthMode, ReadMode
from kueue_graphql.http.access_log import install_access_log_redaction
from kueue_graphql.http.document_size import document_size_limit
from kueue_graphql.http.gate import GraphQLGate
from kueue_graphql.http.graphiql import ASSETS_MOUNT, GraphiQLAssets, assets_directory
from kueue_graphql.http.map_assets import MAP_ROUTE, check_vendor_files, map_asset
from kueue_graphql.http.middleware import (
    BodySizeLimit,
    ConcurrencyLimit,
    Deadline,
    DropImpersonationHeaders,
)
from kueue_graphql.http.observe import REQUEST_ID_HEADER, RequestLog
from kueue_graphql.http.probes import healthz, readyz
from kueue_graphql.http.services import build_services
from kueue_graphql.http.settings import ServerSettings
from kueue_graphql.http.view import GraphQLView
from kueue_graphql.http.why_page import WHY_ROUTE, why_page
from kueue_graphql.http.ws_log import install_ws_task_log_filter
from kueue_graphql.kube.authz import service_identity_problems
from kueue_graphql.kube.client import KubeClient
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.kube.reflector_metrics import ReflectorCollector
from kueue_graphql.kube.transport import build_api_client, close_api_client
from kueue_graphql.lookups.cache_indexes import kueue_cache

log = logging.getLogger(__name__)

GIL_SWITCH_INTERVAL_SECONDS = 0.001


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
    if settings.graphiql:
        # The packaged files, or --graphiql-assets DIR's; refuses to start (GraphiQLAssetsError)
        # when a file is missing.
        assets = GraphiQLAssets(assets_directory(settings.graphiql_assets))
        routes.append(Mount(ASSETS_MOUNT, app=assets))
    if settings.admission_map:
        # Refuses to start (MapAssetsError) when the layout library is missing.
        check_vendor_files()
        routes.append(Route(MAP_ROUTE, map_asset, methods=["GET"]))
        routes.append(Route(WHY_ROUTE, why_page, methods=["GET"]))
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
