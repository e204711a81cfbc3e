"""Prometheus metrics of the process, served on /metrics.

No label carries a user name, a token, a namespace or an object name: labels are operation types,
outcome codes, HTTP verbs, resource names (`pods`, `workloads`, `localqueues/pendingworkloads`)
and status codes, so their number stays small whatever callers send.
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

REQUESTS = Counter(
    "kueue_graphql_requests",
    "GraphQL requests by operation type (query, mutation, subscription, none) and outcome "
    "(OK or the first error's extensions.code).",
    ["operation_type", "outcome"],
    registry=REGISTRY,
)
REQUEST_SECONDS = Histogram(
    "kueue_graphql_request_duration_seconds",
    "Time from the request's arrival to the end of its response.",
    ["operation_type"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20),
    registry=REGISTRY,
)
API_CALLS = Counter(
    "kueue_graphql_api_calls",
    "Calls to the Kubernetes API server by verb, resource and HTTP status (`error`: no answer).",
    ["verb", "resource", "status"],
    registry=REGISTRY,
)
API_RESPONSE_BYTES = Counter(
    "kueue_graphql_api_response_bytes",
    "Bytes of response bodies read from the Kubernetes API server, by verb and resource.",
    ["verb", "resource"],
    registry=REGISTRY,
)
API_CALL_SECONDS = Histogram(
    "kueue_graphql_api_call_duration_seconds",
    "Latency of calls to the Kubernetes API server.",
    ["verb", "resource"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
    registry=REGISTRY,
)
TOKEN_REVIEWS = Counter(
    "kueue_graphql_token_reviews",
    "Caller tokens checked: cache_hit (answered from the token-review cache), accepted or "
    "rejected (by a TokenReview).",
    ["result"],
    registry=REGISTRY,
)
ACCESS_DECISIONS = Counter(
    "kueue_graphql_access_decisions",
    "Access decisions: cache_hit, shared (joined a review already in flight) or reviewed "
    "(a SubjectAccessReview was sent).",
    ["result"],
    registry=REGISTRY,
)


def api_verb(method: str, path: str) -> str:
    """The Kubernetes verb of a request, as far as its method and path tell."""
    if method == "GET":
        resource, named = _resource_and_name(path)
        return "get" if named or resource.startswith("/") else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def api_resource(path: str) -> str:
    """`pods`, `workloads`, `localqueues/pendingworkloads`, or the path of a non-resource URL
    (`/version`), without namespace or object names."""
    return _resource_and_name(path)[0]


def _resource_and_name(path: str) -> tuple[str, bool]:
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        rest = parts[3:]
    else:
        return "/" + "/".join(parts), False
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    if not rest:
        return "discovery", False
    resource = rest[0]
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource += "/" + rest[2]
    return resource, named


SUBSCRIPTIONS_OPEN = Gauge(
    "kueue_graphql_subscriptions_open",
    "Subscriptions open now (each holds a slot under the per-connection/identity/total caps).",
    registry=REGISTRY,
)
SUBSCRIPTION_MESSAGES = Counter(
    "kueue_graphql_subscription_messages",
    "Messages pushed to subscribers, by subscription field (diagnosis, workload, ...).",
    ["field"],
    registry=REGISTRY,
)
SUBSCRIPTION_RECOMPUTES = Counter(
    "kueue_graphql_subscription_recomputes",
    "Answers a subscription computed again, by cause: change (a change touched one of the "
    "answer's dependencies), access (the periodic re-check found the caller's identity or an "
    "access decision changed) or inputs (the re-check read an input no watch sees, e.g. a "
    "queue position, and it had changed). A re-check that finds nothing changed recomputes "
    "nothing. By subscription field (diagnosis, workload, ...).",
    ["field", "cause"],
    registry=REGISTRY,
)
SUBSCRIPTION_WAKES = Counter(
    "kueue_graphql_subscription_wakes",
    "Subscriptions woken by a change, by outcome: unchanged (what the change touched was read "
    "again, e.g. a queue position, and read the same: nothing recomputed) or recomputed.",
    ["outcome"],
    registry=REGISTRY,
)
SUBSCRIPTION_RECHECKS = Counter(
    "kueue_graphql_subscription_rechecks",
    "Periodic re-checks of quiet subscriptions, by outcome: unchanged (nothing recomputed) or "
    "changed (the answer is computed again).",
    ["outcome"],
    registry=REGISTRY,
)
SUBSCRIPTIONS_ENDED = Counter(
    "kueue_graphql_subscriptions_ended",
    "Subscriptions ended, by reason: closed (the client completed or went away), completed "
    "(the stream ended, e.g. its object was deleted), or the final error's extensions.code "
    "(FORBIDDEN, UNAUTHENTICATED, SLOW_CONSUMER, BAD_REQUEST, ...).",
    ["reason"],
    registry=REGISTRY,
)


def _running_tasks() -> int:
    try:
        return len(asyncio.all_tasks())
    except RuntimeError:  # scraped outside the event loop's thread
        return 0


ASYNCIO_TASKS = Gauge(
    "kueue_graphql_asyncio_tasks",
    "asyncio tasks alive in the server process (requests, subscriptions, their watches).",
    registry=REGISTRY,
)
ASYNCIO_TASKS.set_function(_running_tasks)
