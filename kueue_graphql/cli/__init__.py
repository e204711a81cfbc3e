"""`kueue-graphql serve`, `schema`, `why` and `fits` (flags: arguments.py, from the settings
model in settings.py; every KUEUE_GRAPHQL_* variable is checked before any command runs)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kueue_graphql.cli.arguments import _parser
from kueue_graphql.cli.render import WHY_QUERY, render_diagnosis, render_what_if
from kueue_graphql.cli.settings import SettingError, unknown_variable
from kueue_graphql.context import LiveLimits, RequestLimits
from kueue_graphql.graph.schema import QueryLimits, schema_sdl
from kueue_graphql.http import AuthMode, ServerSettings, build_app
from kueue_graphql.http.graphiql import GraphiQLAssetsError
from kueue_graphql.http.persisted import TrustedDocumentsError
from kueue_graphql.http.settings import ReadMode
from kueue_graphql.kube.resources import canonical_kind
from kueue_graphql.kube.transport import KubeConfigError
from kueue_graphql.kueue.quantity import QUANTITY_SYNTAX, QuantityError, parse_quantity
from kueue_graphql.lookups.disclosure import QuotaDisclosure

if TYPE_CHECKING:
    from kueue_graphql.http.server import Listener


def _quantity(flag: str, text: str) -> str:
    """The flag's quantity as given, once the server's own parser admits it (so a typo exits 2
    here, before any call)."""
    try:
        parse_quantity(text)
    except QuantityError as error:
        raise ValueError(f"{flag}: {error}; {QUANTITY_SYNTAX}") from error
    return text


def what_if_pod_set(args: argparse.Namespace) -> dict[str, Any]:
    """`fits`' flags as one WhatIfPodSetInput; ValueError on a malformed flag."""
    requests: list[dict[str, str]] = []
    for flag, resource, value in (
        ("--cpu", "cpu", args.cpu),
        ("--memory", "memory", args.memory),
        ("--gpu", args.gpu_resource, args.gpu),
    ):
        if value is not None:
            requests.append({"resource": resource, "quantity": _quantity(flag, str(value))})
    for raw in args.request:
        resource, sep, quantity = raw.partition("=")
        if not sep or not resource or not quantity:
            raise ValueError(f"--request {raw[:80]!r}: give RESOURCE=QUANTITY")
        requests.append(
            {"resource": resource, "quantity": _quantity(f"--request {resource}", quantity)}
        )
    if not requests:
        raise ValueError("give what each Pod requests: --cpu, --memory, --gpu or --request")
    selector = []
    for raw in args.node_selector:
        key, sep, value = raw.partition("=")
        if not sep or not key:
            raise ValueError(f"--node-selector {raw!r}: give KEY=VALUE")
        selector.append({"key": key, "value": value})
    tolerations = []
    for raw in args.toleration:
        key_value, _, effect = raw.partition(":")
        key, sep, value = key_value.partition("=")
        if not key:
            raise ValueError(f"--toleration {raw!r}: give KEY[=VALUE][:EFFECT]")
        toleration = {"key": key, "operator": "Equal" if sep else "Exists"}
        if sep:
            toleration["value"] = value
        if effect:
            toleration["effect"] = effect
        tolerations.append(toleration)
    pod_set: dict[str, Any] = {
        "name": "main",
        "count": args.pods,
        "requests": requests,
        "nodeSelector": selector,
        "tolerations": tolerations,
    }
    if getattr(args, "priority_class", None):
        pod_set["priorityClass"] = args.priority_class
    return pod_set


VERDICT_EXIT = {"FITS_NOW": 0, "MUST_WAIT": 3, "NEVER_FITS": 4, "QUEUE_INACTIVE": 5, "UNKNOWN": 5}


def parse_target(
    target: str, namespace: str | None, kind: str | None, default_namespace: str
) -> tuple[str, str, str]:
    """(namespace, kind, name) from what a kubectl user types; ValueError when ambiguous."""
    parts = target.split("/")
    if len(parts) == 1:
        return namespace or default_namespace, canonical_kind(kind or "Job"), parts[0]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"cannot read {target!r}: give [KIND/]NAME with -n NS, or NS/NAME")
    first, name = parts
    first_kind = canonical_kind(first)
    if namespace is not None or first_kind in ("Job", "Workload"):
        # kubectl's TYPE/NAME form (job/NAME, workload/NAME, Job/NAME).
        if kind is not None and canonical_kind(kind) != canonical_kind(first):
            raise ValueError(f"--kind {kind} contradicts {target!r}")
        return namespace or default_namespace, canonical_kind(first), name
    return first, canonical_kind(kind or "Job"), name


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
    )


async def _execute(
    args: argparse.Namespace, query: str, variables: dict[str, Any]
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The query in-process, reading as the kubeconfig's identity (no server), or over HTTP
    against `--server` with `--token`: (data, errors as GraphQL formats them)."""
    if args.server:
        import aiohttp

        headers = {"Content-Type": "application/json"}
        if args.token:
            headers["Authorization"] = f"Bearer {args.token}"
        url = args.server.rstrip("/") + "/graphql"
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json={"query": query, "variables": variables}, headers=headers) as r,
        ):
            body = await r.json(content_type=None)
        return body.get("data"), list(body.get("errors") or [])

    from kueue_graphql.context import RequestContext
    from kueue_graphql.graph.schema import build_schema
    from kueue_graphql.http.services import build_services
    from kueue_graphql.kube.client import ApiCallMeter, KubeClient
    from kueue_graphql.kube.transport import build_api_client, close_api_client

    api_client = await build_api_client(args.kubeconfig, args.context, False)
    settings = ServerSettings(
        kubeconfig=args.kubeconfig, kube_context=args.context, auth_mode=AuthMode.LOCAL
    )
    client = KubeClient(api_client)
    # The local-auth warning is meant for a server operator, not for this one-shot reader; the
    # level is restored so that an embedding process (or a test run) keeps its own logging.
    package_logger = logging.getLogger("kueue_graphql")
    previous_level = package_logger.level
    package_logger.setLevel(logging.ERROR)
    try:
        services = build_services(client, settings)

        async def authenticate(meter: ApiCallMeter) -> Any:
            return await services.authenticator.authenticate(None, meter)

        context = RequestContext.create(
            client=client,
            authorizer=services.authorizer,
            authenticate=authenticate,
            impersonate=services.authenticator.impersonates,
            limits=settings.request_limits,
        )
        result = await build_schema(settings.query_limits).execute(
            query, variable_values=variables, context_value=context
        )
    finally:
        package_logger.setLevel(previous_level)
        await close_api_client(client.api_client)
    return result.data, [dict(e.formatted) for e in result.errors or []]


def _print(
    args: argparse.Namespace,
    data: dict[str, Any] | None,
    errors: list[dict[str, Any]],
    key: str,
    render: Any,
) -> None:
    import json

    if args.json:
        body: dict[str, Any] = {"data": data}
        if errors:
            body["errors"] = errors
        print(json.dumps(body, indent=2))
    elif data and data.get(key):
        sys.stdout.write(render(data[key]))
    for error in errors:
        print(f"error: {error.get('message')}", file=sys.stderr)


async def _why(args: argparse.Namespace) -> int:
    """`diagnose` (or with --what-if, `whatIf(fromJob:)`) for one target."""
    from kueue_graphql.graph.whatif import WHAT_IF_QUERY

    try:
        namespace, kind, name = parse_target(
            args.target,
            args.namespace,
            args.kind,
            _context_namespace(args.kubeconfig, args.context),
        )
        if args.what_if and kind != "Job":
            raise ValueError("--what-if takes a Job (its pod template is what would be submitted)")
        if args.what_if:
            query = WHAT_IF_QUERY
            variables: dict[str, Any] = {
                "namespace": namespace,
                "localQueue": args.local_queue,
                "fromJob": {"namespace": namespace, "name": name},
            }
        else:
            query, variables = WHY_QUERY, {"namespace": namespace, "kind": kind, "name": name}
        data, errors = await _execute(args, query, variables)
    except (KubeConfigError, ValueError) as refused:
        print(f"kueue-graphql why: {refused}", file=sys.stderr)
        return 2
    if args.what_if:
        _print(args, data, errors, "whatIf", render_what_if)
        verdict = ((data or {}).get("whatIf") or {}).get("verdict")
        return 1 if errors or verdict is None else VERDICT_EXIT.get(verdict, 5)
    _print(args, data, errors, "diagnose", render_diagnosis)
    return 1 if errors else 0


async def _fits(args: argparse.Namespace) -> int:
    from kueue_graphql.graph.whatif import WHAT_IF_QUERY

    try:
        if args.pods < 1:
            raise ValueError("--pods must be at least 1")
        pod_set = what_if_pod_set(args)
        namespace = args.namespace or _context_namespace(args.kubeconfig, args.context)
        data, errors = await _execute(
            args,
            WHAT_IF_QUERY,
            {"namespace": namespace, "localQueue": args.local_queue, "podSets": [pod_set]},
        )
    except (KubeConfigError, ValueError) as refused:
        print(f"kueue-graphql fits: {refused}", file=sys.stderr)
        return 2
    _print(args, data, errors, "whatIf", render_what_if)
    verdict = ((data or {}).get("whatIf") or {}).get("verdict")
    return 1 if errors or verdict is None else VERDICT_EXIT.get(verdict, 5)


def _context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig context, as kubectl defaults to it."""
    import yaml

    path = Path((kubeconfig or "~/.kube/config").split(os.pathsep)[0]).expanduser()
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "default"
    wanted = context or loaded.get("current-context")
    for entry in loaded.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == wanted:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


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


def main(argv: Sequence[str] | None = None) -> int:
    try:
        problem = unknown_variable(os.environ)
        if problem is not None:
            raise SettingError(problem)
        parser = _parser()
    except SettingError as refused:
        print(f"kueue-graphql: {refused}", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as ended:  # --help, --version, or a usage error already printed
        return ended.code if isinstance(ended.code, int) else 2
    if args.command == "schema":
        sys.stdout.write(schema_sdl())
        return 0
    if args.command == "why":
        import asyncio

        return asyncio.run(_why(args))
    if args.command == "fits":
        import asyncio

        return asyncio.run(_fits(args))

    from kueue_graphql.http.observe import configure_logging
    from kueue_graphql.http.server import Listener, listener_problem, listening_server

    configure_logging(args.log_format, args.log_level)
    settings = settings_from(args)
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
    except (GraphiQLAssetsError, TrustedDocumentsError) as error:
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
