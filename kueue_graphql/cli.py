"""`kueue-graphql serve` and `kueue-graphql schema`.

Every `serve` flag can also be set by an environment variable KUEUE_GRAPHQL_<FLAG> (upper case,
dashes as underscores); a flag given on the command line wins.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kueue_graphql.context import LiveLimits, RequestLimits
from kueue_graphql.core.quantity import QUANTITY_SYNTAX, QuantityError, parse_quantity
from kueue_graphql.graph.schema import QueryLimits, schema_sdl
from kueue_graphql.http import AuthMode, ServerSettings, build_app
from kueue_graphql.http.graphiql import GraphiQLAssetsError
from kueue_graphql.http.settings import (
    MAX_READYZ_TIMEOUT_SECONDS,
    MAX_TOKEN_CACHE_TTL_SECONDS,
    MIN_ANALYSIS_BACKSTOP_SECONDS,
    ReadMode,
)
from kueue_graphql.kube.resources import canonical_kind
from kueue_graphql.kube.transport import KubeConfigError
from kueue_graphql.lookups.disclosure import QuotaDisclosure

if TYPE_CHECKING:
    from kueue_graphql.http.server import Listener

ENV_PREFIX = "KUEUE_GRAPHQL_"


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(ENV_PREFIX + name.upper().replace("-", "_"), default)


def _env_bool(name: str) -> bool:
    return (_env(name) or "").lower() in ("1", "true", "yes", "on")


def _version() -> str:
    try:
        return importlib.metadata.version("kueue-graphql")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _env_list(name: str) -> list[str]:
    """A repeatable flag's environment variable: a comma-separated list."""
    return [item.strip() for item in (_env(name) or "").split(",") if item.strip()]


def _origins(value: str | None) -> list[str]:
    return [o.strip() for o in (value or "").split(",") if o.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kueue-graphql", description=__doc__)
    parser.add_argument("--version", action="version", version=f"kueue-graphql {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the GraphQL server",
        description="Run the GraphQL server. Every flag can also be set by an environment "
        "variable KUEUE_GRAPHQL_<FLAG> (e.g. KUEUE_GRAPHQL_PORT=9090).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    serve.add_argument(
        "--kubeconfig",
        default=_env("kubeconfig", os.environ.get("KUBECONFIG")),
        help="kubeconfig of the service's own identity ($KUBECONFIG, else ~/.kube/config)",
    )
    serve.add_argument("--context", default=_env("context"), help="kubeconfig context to use")
    serve.add_argument(
        "--in-cluster",
        action="store_true",
        default=_env_bool("in_cluster"),
        help="use the pod's ServiceAccount (KUBERNETES_SERVICE_HOST/PORT and its mounted token)",
    )
    serve.add_argument("--host", default=_env("host", "127.0.0.1"), help="address to listen on")
    serve.add_argument(
        "--port", type=int, default=int(_env("port", "8080") or 8080), help="port to listen on"
    )
    serve.add_argument(
        "--metrics-host",
        default=_env("metrics_host"),
        help="address of the /metrics listener (default: --host)",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        default=int(_env("metrics_port", "9090") or 0),
        help="port of the /metrics listener, apart from the API's (0: no /metrics at all)",
    )
    serve.add_argument(
        "--auth-mode",
        choices=[m.value for m in AuthMode],
        default=_env("auth_mode", AuthMode.TOKEN_REVIEW.value),
        help="token-review: identify callers by bearer token and impersonate them; "
        "local: read as the kubeconfig identity (loopback only)",
    )
    serve.add_argument(
        "--allow-get-queries",
        action="store_true",
        default=_env_bool("allow_get_queries"),
        help="also accept queries over GET (?query=...)",
    )
    serve.add_argument(
        "--no-graphiql",
        action="store_true",
        default=_env_bool("no_graphiql"),
        help="do not serve the GraphiQL page on GET /graphql",
    )
    serve.add_argument(
        "--graphiql-assets",
        metavar="DIR",
        type=Path,
        default=_env("graphiql_assets") or None,
        help="serve GraphiQL's JavaScript and CSS from DIR (fetched by `make graphiql-assets`) "
        "instead of loading them from unpkg.com",
    )
    serve.add_argument(
        "--cors-allow-origin",
        metavar="ORIGIN",
        action="append",
        default=_origins(_env("cors_allow_origin")),
        help="a browser origin (https://host[:port]) allowed to call /graphql; repeatable "
        "(env: comma-separated); none by default",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=int(_env("max_body_bytes", "65536") or 0),
        help="largest request body accepted",
    )
    serve.add_argument(
        "--max-fields",
        type=int,
        default=int(_env("max_fields", "2000") or 0),
        help="most fields in one query, fragments expanded",
    )
    serve.add_argument(
        "--max-cost",
        type=int,
        default=int(_env("max_cost", "50000") or 0),
        help="highest estimated cost of one query (fields x the `first` of the lists around them)",
    )
    serve.add_argument(
        "--max-concurrent-requests",
        type=int,
        default=int(_env("max_concurrent_requests", "100") or 0),
        help="requests served at once; more get 503 UNAVAILABLE with Retry-After",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=float(_env("header_timeout", "10") or 0),
        help="seconds a connection may take to send its request headers (then 408)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=float(_env("body_timeout", "10") or 0),
        help="seconds a request may take to send its body (then 408)",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=float(_env("request_timeout", "20") or 0),
        help="seconds a request may take, API calls included",
    )
    serve.add_argument(
        "--max-depth",
        type=int,
        default=int(_env("max_depth", "12") or 0),
        help="deepest selection nesting accepted",
    )
    serve.add_argument(
        "--max-aliases",
        type=int,
        default=int(_env("max_aliases", "30") or 0),
        help="most aliases in one query",
    )
    serve.add_argument(
        "--max-tokens",
        type=int,
        default=int(_env("max_tokens", "2000") or 0),
        help="most lexical tokens in one query",
    )
    serve.add_argument(
        "--api-call-budget",
        type=int,
        default=int(_env("api_call_budget", "200") or 0),
        help="most Kubernetes API calls one request may make",
    )
    serve.add_argument(
        "--max-page-size",
        type=int,
        default=int(_env("max_page_size", "100") or 0),
        help="largest `first` of a list field",
    )
    serve.add_argument(
        "--authz-cache-ttl",
        type=float,
        default=float(_env("authz_cache_ttl", "10") or 0),
        help="seconds an access decision is reused for the same caller",
    )
    serve.add_argument(
        "--log-level",
        default=_env("log_level", "info"),
        choices=["debug", "info", "warning", "error"],
        help="log level",
    )
    serve.add_argument(
        "--log-format",
        default=_env("log_format", "text"),
        choices=["text", "json"],
        help="json: one JSON object per line, one line per GraphQL request (request id, "
        "operation, outcome, duration, apiCalls, username; never a token)",
    )
    serve.add_argument(
        "--token-cache-ttl",
        type=float,
        default=float(_env("token_cache_ttl", "30") or 0),
        help="seconds a TokenReview answer is reused for the same token",
    )
    serve.add_argument(
        "--token-audience",
        metavar="AUDIENCE",
        action="append",
        default=None,
        help="accept only bearer tokens minted for this audience (TokenReview spec.audiences, "
        "e.g. `kubectl create token SA --audience AUDIENCE`); repeatable (env: "
        "comma-separated, replaced by any flag); none: the API server's own audiences, which "
        "kubectl's and pods' default tokens carry",
    )
    serve.add_argument(
        "--max-subscriptions-per-connection",
        type=int,
        default=int(_env("max_subscriptions_per_connection", "20") or 0),
        help="most subscriptions open on one WebSocket connection",
    )
    serve.add_argument(
        "--max-subscriptions-per-identity",
        type=int,
        default=int(_env("max_subscriptions_per_identity", "100") or 0),
        help="most subscriptions open for one caller, over all connections",
    )
    serve.add_argument(
        "--max-subscriptions",
        type=int,
        default=int(_env("max_subscriptions", "1000") or 0),
        help="most subscriptions open in total",
    )
    serve.add_argument(
        "--subscription-coalesce-ms",
        type=float,
        default=float(_env("subscription_coalesce_ms", "250") or 0),
        help="milliseconds a burst of watch events is gathered into one recompute",
    )
    serve.add_argument(
        "--subscription-send-queue",
        type=int,
        default=int(_env("subscription_send_queue", "16") or 16),
        help="messages a subscription may have waiting for a client that is not reading; "
        "one more ends it with SLOW_CONSUMER",
    )
    serve.add_argument(
        "--subscription-send-timeout",
        type=float,
        default=float(_env("subscription_send_timeout", "10") or 10),
        help="seconds a WebSocket's sends may wait for a client that is not reading before "
        "the connection is closed with 4008 SLOW_CONSUMER",
    )
    serve.add_argument(
        "--authz-deny-cache-ttl",
        type=float,
        default=float(_env("authz_deny_cache_ttl", "2") or 0),
        help="how long a denied access decision is reused (at most --authz-cache-ttl)",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        type=int,
        default=int(_env("keep_alive_timeout", "5") or 0),
        help="seconds an idle kept-alive connection stays open between requests",
    )
    serve.add_argument(
        "--api-timeout",
        type=float,
        default=float(_env("api_timeout", "10") or 0),
        help="seconds one Kubernetes API call may take (then UNAVAILABLE)",
    )
    serve.add_argument(
        "--readyz-timeout",
        type=float,
        default=float(_env("readyz_timeout", "1.5") or 0),
        help="seconds /readyz waits for the API server before answering 503 (at most 2)",
    )
    serve.add_argument(
        "--max-json-depth",
        type=int,
        default=int(_env("max_json_depth", "32") or 0),
        help="deepest nesting of arrays and objects in a request body",
    )
    serve.add_argument(
        "--max-operation-name-length",
        type=int,
        default=int(_env("max_operation_name_length", "128") or 0),
        help="longest operationName accepted",
    )
    serve.add_argument(
        "--max-analysis-units",
        type=int,
        default=int(_env("max_analysis_units", "20000") or 0),
        help="work units analysing one new query may take (a field, fragment spread or argument "
        "value visited, each fragment once, and a field comparison: one unit each); the same "
        "decision on any machine at any load",
    )
    serve.add_argument(
        "--max-analysis-ms",
        type=float,
        default=float(_env("max_analysis_ms", "5000") or 0),
        help="wall-clock backstop, in milliseconds, for analysing one new query; at least "
        f"{MIN_ANALYSIS_BACKSTOP_SECONDS * 1000:g}, since queries are limited by "
        "--max-analysis-units",
    )
    serve.add_argument(
        "--max-comparisons",
        type=int,
        default=int(_env("max_comparisons", "10000") or 0),
        help="most field comparisons validating one query may need (repeated fields/fragments)",
    )
    serve.add_argument(
        "--max-number-length",
        type=int,
        default=int(_env("max_number_length", "40") or 0),
        help="longest number literal in a query, in characters",
    )
    serve.add_argument(
        "--quota-disclosure",
        choices=[level.value for level in QuotaDisclosure],
        default=_env("quota_disclosure", QuotaDisclosure.NONE.value),
        help="none (default): ClusterQueue figures only for callers who may read the "
        "ClusterQueue; verdict: whatIf verdicts for callers who may get one of its LocalQueues; "
        "quota: also its quota, usage and headroom (read under the service's own identity)",
    )

    serve.add_argument(
        "--read-mode",
        choices=[mode.value for mode in ReadMode],
        default=_env("read_mode", ReadMode.IMPERSONATE.value),
        help="impersonate (default): every read made as the caller; cache: Kueue objects from "
        "a watch-fed cache read under the service's identity (needs get/list/watch on them), "
        "each one authorized for the caller by SubjectAccessReview",
    )

    serve.add_argument(
        "--no-cache-gc-freeze",
        action="store_true",
        default=_env_bool("no_cache_gc_freeze"),
        help="cache read mode: do not freeze the cached objects out of the garbage collector "
        "once the informers have synced (frozen by default: full collections then skip them)",
    )

    commands.add_parser("schema", help="print the GraphQL schema (SDL)")

    why = commands.add_parser(
        "why",
        help="why is my job waiting? (read as the kubeconfig's identity)",
        description="Diagnose a Job (or another owner kind, or a Workload) with the identity of "
        "your kubeconfig, as the `diagnose` GraphQL field does. Targets as kubectl takes them: "
        "`-n team-a job/NAME`, `-n team-a NAME`, `team-a/NAME`, `workload/NAME`.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    why.add_argument("target", help="[KIND/]NAME with -n, or NAMESPACE/NAME")
    why.add_argument(
        "-n", "--namespace", default=None, help="namespace (default: the context's, else default)"
    )
    why.add_argument("--kind", default=None, help='owner kind, or "Workload" (default: Job)')
    why.add_argument("--json", action="store_true", help="print the GraphQL result as JSON")
    why.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig to read as"
    )
    why.add_argument("--context", default=None, help="kubeconfig context to use")
    why.add_argument(
        "--what-if",
        action="store_true",
        help="do not diagnose the Job: ask whether its pod template would fit now (whatIf "
        "fromJob), in its queue-name LocalQueue or --local-queue",
    )
    why.add_argument("--local-queue", default=None, help="with --what-if: another LocalQueue")
    _remote_arguments(why)

    fits = commands.add_parser(
        "fits",
        help="would these Pods fit this LocalQueue now? (nothing is created)",
        description="Kueue's flavor assignment and verdict for Pods not submitted yet, as the "
        "`whatIf` GraphQL field answers it (sbatch --test-only for Kueue). Exit status: 0 fits "
        "now, 3 must wait, 4 never fits, 5 queue inactive or unknown, 1 error, 2 bad usage.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    fits.add_argument("local_queue", metavar="LOCALQUEUE")
    fits.add_argument(
        "-n", "--namespace", default=None, help="namespace (default: the context's, else default)"
    )
    fits.add_argument("--pods", type=int, default=1, help="Pods that must run at once")
    fits.add_argument("--cpu", default=None, help="CPU per Pod, e.g. 1 or 500m")
    fits.add_argument("--memory", default=None, help="memory per Pod, e.g. 2Gi")
    fits.add_argument("--gpu", default=None, help="GPUs per Pod (resource --gpu-resource)")
    fits.add_argument("--gpu-resource", default="nvidia.com/gpu", help="the GPU resource name")
    fits.add_argument(
        "--request", action="append", default=[], metavar="RESOURCE=QUANTITY",
        help="any other resource per Pod; repeatable",
    )  # fmt: skip
    fits.add_argument(
        "--node-selector", action="append", default=[], metavar="KEY=VALUE", help="repeatable"
    )
    fits.add_argument(
        "--toleration", action="append", default=[], metavar="KEY[=VALUE][:EFFECT]",
        help="a toleration of the Pods; repeatable",
    )  # fmt: skip
    fits.add_argument(
        "--priority-class", default=None, metavar="NAME",
        help="a WorkloadPriorityClass (else PriorityClass) for the Workload: its priority decides "
        "preemption within the ClusterQueue",
    )  # fmt: skip
    fits.add_argument("--json", action="store_true", help="print the GraphQL result as JSON")
    fits.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig to read as"
    )
    fits.add_argument("--context", default=None, help="kubeconfig context to use")
    _remote_arguments(fits)
    return parser


def _remote_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--server",
        default=_env("server"),
        help="URL of a running kueue-graphql (e.g. https://kueue-graphql.example): ask it "
        "over HTTP instead of reading with the kubeconfig here",
    )
    command.add_argument(
        "--token", default=_env("token"), help="with --server: the bearer token to send"
    )


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


def render_what_if(w: dict[str, Any]) -> str:
    """The `whatIf` result (WHAT_IF_QUERY's shape) as text for a terminal."""
    out = [f"{w['verdict']}: {w['summary']}"]
    queue = (w.get("localQueue") or {}).get("name")
    out.append(
        f"  LocalQueue {queue}, ClusterQueue {w.get('clusterQueueName') or '-'}; figures from "
        f"{w['numbersFrom']}"
    )
    if w.get("priorityClass"):
        out.append(f"  priority {w.get('priority')} (class {w['priorityClass']})")
    if w.get("detail") and w["detail"] not in w["summary"]:
        out.append(f"  ({w['detail']})")
    for ps in w.get("podSets") or []:
        per_pod = ", ".join(f"{r['resource']}={r['quantity']}" for r in ps["requests"])
        out.append(f"Pod set {ps['name']}: {ps['count']} x ({per_pod})")
        for g in ps.get("resourceGroups") or []:
            extra = " borrowing" if g.get("borrows") else ""
            if g.get("preemptsFirstIn"):
                extra += f" (unless Kueue preempts in {g['preemptsFirstIn']} first)"
            if g.get("preempts"):
                extra += f" (preempting {g['preempts']} lower-priority Workload(s))"
            limited = f" ({g['limitedBy']})" if g.get("limitedBy") else ""
            out.append(
                f"  {', '.join(g['resources'])}: flavor {g.get('flavor') or '-'}, "
                f"{g['verdict']}{limited}{extra}"
            )
            for a in g.get("attempts") or []:
                for reason in a.get("reasons") or []:
                    out.append(f"    {a['flavor']}: {reason}")
    if w.get("quota"):
        out.append("Quota:")
        out.append(
            "  flavor/resource            requested  nominal  borrowLimit  reserved  max-ever  "
            "free-now  verdict"
        )
        for line in w["quota"]:
            fr = f"{line['flavor']}/{line['resource']}"
            limited = f" ({line['limitedBy']})" if line.get("limitedBy") else ""

            def q(value: dict[str, Any] | None) -> str:
                return value["quantity"] if value else "-"

            out.append(
                f"  {fr:<26} {q(line['requested']):>9}  {q(line['nominalQuota']):>7}  "
                f"{q(line['borrowingLimit']):>11}  {q(line['reserved']):>8}  "
                f"{q(line['maximumCapacity']):>8}  {q(line['availableNow']):>8}  "
                f"{line['verdict']}{limited}"
            )
    if w.get("kueueMessage"):
        out.append(f"Kueue would write: {w['kueueMessage']}")
    if w.get("nextSteps"):
        out.append("Next steps:")
        out.extend(f"  - {step}" for step in w["nextSteps"])
    return "\n".join(out) + "\n"


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
    given = args.token_audience if args.token_audience is not None else _env_list("token_audience")
    return tuple(dict.fromkeys(audience.strip() for audience in given))


def settings_problem(settings: ServerSettings) -> str | None:
    """Why these settings cannot be served, or None."""
    if not 0 <= settings.token_cache_ttl_seconds <= MAX_TOKEN_CACHE_TTL_SECONDS:
        return (
            f"--token-cache-ttl must be between 0 and {MAX_TOKEN_CACHE_TTL_SECONDS:g} s: a "
            "revoked token keeps working through the service for that long"
        )
    if not 0 <= settings.authz_deny_cache_ttl_seconds <= settings.authz_cache_ttl_seconds:
        return "--authz-deny-cache-ttl must be between 0 and --authz-cache-ttl"
    if "" in settings.token_audiences:
        return "--token-audience must not be empty: name the audience tokens must be minted for"
    if settings.max_concurrent_requests < 1:
        return "--max-concurrent-requests must be at least 1"
    if settings.query_limits.max_analysis_seconds < MIN_ANALYSIS_BACKSTOP_SECONDS:
        return (
            f"--max-analysis-ms must be at least {MIN_ANALYSIS_BACKSTOP_SECONDS * 1000:g}: it is "
            "only a wall-clock backstop, and a smaller one refuses legitimate queries when the "
            "machine is loaded; limit queries with --max-analysis-units"
        )
    if settings.query_limits.max_analysis_units < 1:
        return "--max-analysis-units must be at least 1"
    if not 0 < settings.readyz_timeout_seconds <= MAX_READYZ_TIMEOUT_SECONDS:
        return (
            f"--readyz-timeout must be above 0 and at most {MAX_READYZ_TIMEOUT_SECONDS:g} s "
            "(a probe's own timeout)"
        )
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
        authz_cache_ttl_seconds=args.authz_cache_ttl,
        token_cache_ttl_seconds=args.token_cache_ttl,
        token_audiences=token_audiences(args),
        live_limits=LiveLimits(
            per_connection=args.max_subscriptions_per_connection,
            per_identity=args.max_subscriptions_per_identity,
            total=args.max_subscriptions,
            coalesce_seconds=args.subscription_coalesce_ms / 1000,
            send_queue=max(1, args.subscription_send_queue),
            send_timeout_seconds=max(0.1, args.subscription_send_timeout),
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
    from kueue_graphql.http.app import build_services
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
    from kueue_graphql.graph.diagnosis import WHY_QUERY, render_text
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
    _print(args, data, errors, "diagnose", render_text)
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
    args = _parser().parse_args(argv)
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
    except GraphiQLAssetsError as error:
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


if __name__ == "__main__":
    sys.exit(main())
