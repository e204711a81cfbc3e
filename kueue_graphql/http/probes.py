"""The endpoints operators and the kubelet ask: /healthz, /readyz and, on the metrics
listener, /metrics."""

from __future__ import annotations

import asyncio

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from kueue_graphql.core.errors import ServiceError
from kueue_graphql.http.services import Services
from kueue_graphql.http.settings import ServerSettings
from kueue_graphql.kube.authz import service_identity_problems
from kueue_graphql.kube.client import ApiCallMeter
from kueue_graphql.observe.metrics import REGISTRY


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
