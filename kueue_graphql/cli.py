"""`kueue-graphql serve` and `kueue-graphql schema`.

Every `serve` flag can also be set by an environment variable KUEUE_GRAPHQL_<FLAG> (upper case,
dashes as underscores); a flag given on the command line wins.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kueue_graphql.context import RequestLimits
from kueue_graphql.graph.schema import QueryLimits, schema_sdl
from kueue_graphql.http import AuthMode, ServerSettings, build_app
from kueue_graphql.http.graphiql import GraphiQLAssetsError
from kueue_graphql.lookups.disclosure import QuotaDisclosure

ENV_PREFIX = "KUEUE_GRAPHQL_"


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(ENV_PREFIX + name.upper().replace("-", "_"), default)


def _env_bool(name: str) -> bool:
    return (_env(name) or "").lower() in ("1", "true", "yes", "on")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kueue-graphql", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the GraphQL server")
    serve.add_argument("--kubeconfig", default=_env("kubeconfig", os.environ.get("KUBECONFIG")))
    serve.add_argument("--context", default=_env("context"))
    serve.add_argument("--in-cluster", action="store_true", default=_env_bool("in_cluster"))
    serve.add_argument("--host", default=_env("host", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(_env("port", "8080") or 8080))
    serve.add_argument(
        "--auth-mode",
        choices=[m.value for m in AuthMode],
        default=_env("auth_mode", AuthMode.TOKEN_REVIEW.value),
        help="token-review: identify callers by bearer token and impersonate them; "
        "local: read as the kubeconfig identity (loopback only)",
    )
    serve.add_argument(
        "--allow-get-queries", action="store_true", default=_env_bool("allow_get_queries")
    )
    serve.add_argument("--no-graphiql", action="store_true", default=_env_bool("no_graphiql"))
    serve.add_argument(
        "--graphiql-assets",
        metavar="DIR",
        type=Path,
        default=_env("graphiql_assets") or None,
        help="serve GraphiQL's JavaScript and CSS from DIR (fetched by `make graphiql-assets`) "
        "instead of loading them from unpkg.com",
    )
    serve.add_argument(
        "--max-body-bytes", type=int, default=int(_env("max_body_bytes", "65536") or 0)
    )
    serve.add_argument(
        "--request-timeout", type=float, default=float(_env("request_timeout", "20") or 0)
    )
    serve.add_argument("--max-depth", type=int, default=int(_env("max_depth", "12") or 0))
    serve.add_argument("--max-aliases", type=int, default=int(_env("max_aliases", "30") or 0))
    serve.add_argument("--max-tokens", type=int, default=int(_env("max_tokens", "2000") or 0))
    serve.add_argument(
        "--api-call-budget", type=int, default=int(_env("api_call_budget", "200") or 0)
    )
    serve.add_argument("--max-page-size", type=int, default=int(_env("max_page_size", "100") or 0))
    serve.add_argument(
        "--authz-cache-ttl", type=float, default=float(_env("authz_cache_ttl", "10") or 0)
    )
    serve.add_argument(
        "--quota-disclosure",
        choices=[level.value for level in QuotaDisclosure],
        default=_env("quota_disclosure", QuotaDisclosure.NONE.value),
        help="none (default): ClusterQueue figures only for callers who may read the "
        "ClusterQueue; verdict: whatIf verdicts for callers who may get one of its LocalQueues; "
        "quota: also its quota, usage and headroom (read under the service's own identity)",
    )
    serve.add_argument("--log-level", default=_env("log_level", "info"))

    commands.add_parser("schema", help="print the GraphQL schema (SDL)")

    why = commands.add_parser(
        "why",
        help="why is my job waiting? (read as the kubeconfig's identity)",
        description="Diagnose <namespace>/<name> (a Job unless --kind says otherwise) with "
        "the identity of your kubeconfig, as the `diagnose` GraphQL field does.",
    )
    why.add_argument("target", help="<namespace>/<name>")
    why.add_argument("--kind", default="Job", help='owner kind, or "Workload" (default: Job)')
    why.add_argument("--json", action="store_true", help="print the GraphQL result as JSON")
    why.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    why.add_argument("--context", default=None)
    return parser


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


def settings_from(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings(
        kubeconfig=args.kubeconfig,
        kube_context=args.context,
        in_cluster=args.in_cluster,
        auth_mode=AuthMode(args.auth_mode),
        allow_get_queries=args.allow_get_queries,
        graphiql=not args.no_graphiql,
        graphiql_assets=args.graphiql_assets,
        max_body_bytes=args.max_body_bytes,
        authz_cache_ttl_seconds=args.authz_cache_ttl,
        query_limits=QueryLimits(
            max_depth=args.max_depth, max_aliases=args.max_aliases, max_tokens=args.max_tokens
        ),
        request_limits=RequestLimits(
            api_call_budget=args.api_call_budget,
            deadline_seconds=args.request_timeout,
            max_page_size=args.max_page_size,
        ),
        quota_disclosure=QuotaDisclosure(args.quota_disclosure),
    )


async def _why(args: argparse.Namespace) -> int:
    """Run the `diagnose` query in-process, reading as the kubeconfig's identity (no server)."""
    import json

    from kueue_graphql.context import RequestContext
    from kueue_graphql.graph.diagnosis import WHY_QUERY, render_text
    from kueue_graphql.graph.schema import build_schema
    from kueue_graphql.http.app import build_services
    from kueue_graphql.kube.client import ApiCallMeter, KubeClient
    from kueue_graphql.kube.transport import build_api_client, close_api_client

    namespace, _, name = args.target.partition("/")
    if not namespace or not name:
        print("usage: kueue-graphql why <namespace>/<name>", file=sys.stderr)
        return 2
    settings = ServerSettings(
        kubeconfig=args.kubeconfig, kube_context=args.context, auth_mode=AuthMode.LOCAL
    )
    client = KubeClient(await build_api_client(args.kubeconfig, args.context, False))
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
            WHY_QUERY,
            variable_values={"namespace": namespace, "kind": args.kind, "name": name},
            context_value=context,
        )
    finally:
        package_logger.setLevel(previous_level)
        await close_api_client(client.api_client)
    if args.json:
        body: dict[str, Any] = {"data": result.data}
        if result.errors:
            body["errors"] = [e.formatted for e in result.errors]
        print(json.dumps(body, indent=2))
    elif result.data and result.data.get("diagnose"):
        sys.stdout.write(render_text(result.data["diagnose"]))
    for error in result.errors or []:
        print(f"error: {error.message}", file=sys.stderr)
    return 1 if result.errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "schema":
        sys.stdout.write(schema_sdl())
        return 0
    if args.command == "why":
        import asyncio

        return asyncio.run(_why(args))

    import uvicorn

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = settings_from(args)
    if settings.auth_mode is AuthMode.LOCAL and not is_loopback(args.host):
        # Local mode lends the kubeconfig's identity to anyone who can connect.
        print("--auth-mode local binds to a loopback address only", file=sys.stderr)
        return 2
    try:
        app = build_app(settings)
    except GraphiQLAssetsError as error:
        print(error, file=sys.stderr)
        return 2
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level.lower(),
        # The request line is logged, headers are not: tokens stay out of the log.
        access_log=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
