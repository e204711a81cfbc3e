"""`kueue-graphql serve`: the settings the flags and variables give (settings_from), what
cannot be served together (settings_problem), what would fail at startup (preflight), then the
server on its listeners."""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import TYPE_CHECKING

from kueue_graphql.cli.settings import SettingError
from kueue_graphql.context import LiveLimits, RequestLimits
from kueue_graphql.core.modes import QuotaDisclosure, ReadMode
from kueue_graphql.core.workers import WorkerKubeconfig, parse_worker_kubeconfigs
from kueue_graphql.graph.schema import QueryLimits
from kueue_graphql.http import AuthMode, ServerSettings, build_app
from kueue_graphql.http.graphiql import GraphiQLAssetsError
from kueue_graphql.http.map_assets import MapAssetsError
from kueue_graphql.http.persisted import TrustedDocumentsError
from kueue_graphql.kube.kubeconfig_error import KubeConfigError

if TYPE_CHECKING:
    from kueue_graphql.http.server import Listener

__all__ = [
    "is_loopback",
    "run",
    "settings_from",
    "settings_problem",
    "token_audiences",
    "worker_kubeconfig_problem",
    "worker_kubeconfigs",
]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(
                ipaddress.ip_address(info[4][0]).is_loopback
                for info in socket.getaddrinfo(host, None)
            )
        except OSError:
            return False


def token_audiences(args: argparse.Namespace) -> tuple[str, ...]:
    """--token-audience flags, else KUEUE_GRAPHQL_TOKEN_AUDIENCE; each once, in order."""
    return tuple(dict.fromkeys(audience.strip() for audience in args.token_audience))


def worker_kubeconfigs(args: argparse.Namespace) -> tuple[WorkerKubeconfig, ...]:
    """--worker-kubeconfig flags, else KUEUE_GRAPHQL_WORKER_KUBECONFIG; SettingError (one line
    naming the flag) for a malformed entry or a worker given twice."""
    try:
        return parse_worker_kubeconfigs(args.worker_kubeconfig)
    except ValueError as error:
        raise SettingError(f"--worker-kubeconfig: {error}") from None


def settings_problem(settings: ServerSettings) -> str | None:
    """Why these settings cannot be served together, or None (each value alone is checked by
    the settings model as the flags are read)."""
    if not 0 <= settings.authz_deny_cache_ttl_seconds <= settings.authz_cache_ttl_seconds:
        return "--authz-deny-cache-ttl must be between 0 and --authz-cache-ttl"
    if "" in settings.token_audiences:
        return "--token-audience must not be empty: name the audience tokens must be minted for"
    return None


def settings_from(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings(
        kubeconfig=args.kubeconfig,
        kube_context=args.context,
        in_cluster=args.in_cluster,
        auth_mode=AuthMode(args.auth_mode),
        allow_get_queries=args.allow_get_queries,
        cors_allow_origins=tuple(args.cors_allow_origin or ()),
        graphiql=not args.no_graphiql,
        graphiql_assets=args.graphiql_assets,
        admission_map=not args.no_admission_map,
        max_body_bytes=args.max_body_bytes,
        persisted_queries_max_bytes=args.persisted_queries_max_bytes,
        trusted_documents=args.trusted_documents,
        authz_cache_ttl_seconds=args.authz_cache_ttl,
        token_cache_ttl_seconds=args.token_cache_ttl,
        token_audiences=token_audiences(args),
        live_limits=LiveLimits(
            per_connection=args.max_subscriptions_per_connection,
            per_identity=args.max_subscriptions_per_identity,
            total=args.max_subscriptions,
            coalesce_seconds=args.subscription_coalesce_ms / 1000,
            send_queue=args.subscription_send_queue,
            send_timeout_seconds=args.subscription_send_timeout,
            # Identity and access are re-checked as often as either cache forgets.
            recheck_seconds=min(args.token_cache_ttl, args.authz_cache_ttl),
        ),
        authz_deny_cache_ttl_seconds=args.authz_deny_cache_ttl,
        max_concurrent_requests=args.max_concurrent_requests,
        header_timeout_seconds=args.header_timeout,
        body_timeout_seconds=args.body_timeout,
        keep_alive_timeout_seconds=args.keep_alive_timeout,
        api_request_timeout_seconds=args.api_timeout,
        readyz_timeout_seconds=args.readyz_timeout,
        max_json_depth=args.max_json_depth,
        max_operation_name_length=args.max_operation_name_length,
        query_limits=QueryLimits(
            max_depth=args.max_depth,
            max_aliases=args.max_aliases,
            max_tokens=args.max_tokens,
            max_fields=args.max_fields,
            max_cost=args.max_cost,
            max_comparisons=args.max_comparisons,
            max_number_length=args.max_number_length,
            max_analysis_units=args.max_analysis_units,
            max_analysis_seconds=args.max_analysis_ms / 1000,
            # `first: $variable` is costed as the largest page a request may ask for.
            assumed_page_size=args.max_page_size,
        ),
        request_limits=RequestLimits(
            api_call_budget=args.api_call_budget,
            deadline_seconds=args.request_timeout,
            max_page_size=args.max_page_size,
        ),
        quota_disclosure=QuotaDisclosure(args.quota_disclosure),
        read_mode=ReadMode(args.read_mode),
        cache_gc_freeze=not args.no_cache_gc_freeze,
        worker_kubeconfigs=worker_kubeconfigs(args),
    )


def _preflight(settings: ServerSettings, api: Listener, metrics: Listener | None) -> str | None:
    """What would make `serve` fail at startup, as one sentence (None: nothing found)."""
    import asyncio

    from kueue_graphql.kube.transport import build_api_client, close_api_client

    async def configure() -> None:
        client = await build_api_client(
            settings.kubeconfig, settings.kube_context, settings.in_cluster
        )
        await close_api_client(client)

    try:
        asyncio.run(configure())
    except KubeConfigError as error:
        return str(error)
    for worker in settings.worker_kubeconfigs:
        problem = worker_kubeconfig_problem(worker)
        if problem is not None:
            return problem
    flags = [(api, "--port")] + ([(metrics, "--metrics-port (0: none)")] if metrics else [])
    for listener, flag in flags:
        try:
            with socket.create_server((listener.host, listener.port)):
                pass
        except OSError as bind_error:
            reason = os.strerror(bind_error.errno) if bind_error.errno else str(bind_error)
            return (
                f"cannot listen on {listener.host}:{listener.port} ({reason}); "
                f"pick another with {flag}"
            )
    return None


def worker_kubeconfig_problem(worker: WorkerKubeconfig) -> str | None:
    """Why the kubeconfig of a --worker-kubeconfig cannot be used (None: it can)."""
    import asyncio

    from kueue_graphql.kube.transport import build_api_client, close_api_client

    async def configure() -> None:
        await close_api_client(await build_api_client(str(worker.path), None, False))

    try:
        asyncio.run(configure())
    except KubeConfigError as error:
        return f"--worker-kubeconfig {worker.cluster}={worker.path}: {error}"
    return None


def run(args: argparse.Namespace) -> int:
    """Serve until stopped; 2 (with one line on stderr) when the settings cannot be served."""
    from kueue_graphql.http.observe import configure_logging
    from kueue_graphql.http.server import Listener, listener_problem, listening_server

    configure_logging(args.log_format, args.log_level)
    try:
        settings = settings_from(args)
    except SettingError as error:
        print(f"kueue-graphql serve: {error}", file=sys.stderr)
        return 2
    problem = settings_problem(settings)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    if settings.auth_mode is AuthMode.LOCAL and not is_loopback(args.host):
        # Local mode lends the kubeconfig's identity to anyone who can connect.
        print("--auth-mode local binds to a loopback address only", file=sys.stderr)
        return 2
    try:
        app = build_app(settings)
    except (GraphiQLAssetsError, MapAssetsError, TrustedDocumentsError) as error:
        print(f"kueue-graphql serve: {error}", file=sys.stderr)
        return 2
    api = Listener(args.host, args.port)
    metrics: Listener | None = None
    if args.metrics_port:
        metrics = Listener(args.metrics_host or args.host, args.metrics_port)
    problem = listener_problem(api, metrics) or _preflight(settings, api, metrics)
    if problem is not None:
        print(f"kueue-graphql serve: {problem}", file=sys.stderr)
        return 2
    server = listening_server(
        app,
        settings,
        api=api,
        metrics=metrics,
        log_level=args.log_level.lower(),
        # Logging is configured above (text or JSON); uvicorn's loggers propagate into it.
        log_config=None,
        # The request line is logged, headers are not: tokens stay out of the log. In JSON
        # format the one line per GraphQL request (kueue_graphql.access) replaces it.
        access_log=args.log_format == "text",
    )
    server.run()
    return 0
