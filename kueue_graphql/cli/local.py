"""Local runs: `why` and `fits` run one GraphQL query (diagnose, or whatIf) in this process,
reading as the kubeconfig's identity (no server), or over HTTP against `--server` with
`--token`, and print it rendered for a terminal (render.py) or as JSON (--json)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from kueue_graphql.cli.render import WHAT_IF_QUERY, WHY_QUERY, render_diagnosis, render_what_if
from kueue_graphql.kube.kubeconfig_error import KubeConfigError
from kueue_graphql.kube.resources import TARGET_KINDS, WHAT_IF_KINDS, canonical_kind
from kueue_graphql.kueue.quantity import QUANTITY_SYNTAX, QuantityError, parse_quantity

__all__ = ["VERDICT_EXIT", "fits", "parse_target", "what_if_pod_set", "why"]


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
    if namespace is not None or first_kind in {r.kind for r in TARGET_KINDS}:
        # kubectl's TYPE/NAME form (job/NAME, jobset/NAME, sts/NAME, workload/NAME, Job/NAME).
        if kind is not None and canonical_kind(kind) != canonical_kind(first):
            raise ValueError(f"--kind {kind} contradicts {target!r}")
        return namespace or default_namespace, canonical_kind(first), name
    return first, canonical_kind(kind or "Job"), name


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
    from kueue_graphql.core.modes import AuthMode
    from kueue_graphql.http.settings import ServerSettings

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


async def why(args: argparse.Namespace) -> int:
    """`diagnose` (or with --what-if, `whatIf(fromJob:)`) for one target."""
    try:
        namespace, kind, name = parse_target(
            args.target,
            args.namespace,
            args.kind,
            _context_namespace(args.kubeconfig, args.context),
        )
        if args.what_if and kind not in WHAT_IF_KINDS:
            raise ValueError(
                f"--what-if takes a {', '.join(WHAT_IF_KINDS)} (its pod templates are what "
                "would be submitted)"
            )
        if args.what_if:
            query = WHAT_IF_QUERY
            variables: dict[str, Any] = {
                "namespace": namespace,
                "localQueue": args.local_queue,
                "fromJob": {"namespace": namespace, "name": name, "kind": kind},
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


async def fits(args: argparse.Namespace) -> int:
    """`whatIf(podSets:)` for the pod set the flags describe."""
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
