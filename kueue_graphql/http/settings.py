"""Everything the server can be configured with (the CLI fills it from flags and env vars)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kueue_graphql.context import LiveLimits, RequestLimits
from kueue_graphql.core.modes import (
    AuthMode,
    QuotaDisclosure,
    ReadMode,
)
from kueue_graphql.core.workers import WorkerKubeconfig
from kueue_graphql.graph.schema import QueryLimits


@dataclass(frozen=True)
class ServerSettings:
    kubeconfig: str | None = None
    kube_context: str | None = None
    in_cluster: bool = False
    auth_mode: AuthMode = AuthMode.TOKEN_REVIEW
    # Queries over GET (the API has no mutations; credentials come only from the
    # Authorization header); subscriptions never.
    allow_get_queries: bool = True
    graphiql: bool = True
    # GraphiQL's JavaScript and CSS from this directory (None: the copies packaged in the wheel).
    graphiql_assets: Path | None = None
    # The admission map: GET /why/<namespace>/<kind>/<name> and its files under /admission-map/.
    admission_map: bool = True
    max_body_bytes: int = 64 * 1024
    # Apollo's automatic persisted queries: bytes of documents kept by hash (0: off).
    persisted_queries_max_bytes: int = 8 * 1024 * 1024
    # Only these documents run (a JSON map {sha256 hex: document}); None: any document.
    trusted_documents: Path | None = None
    api_request_timeout_seconds: float = 10.0
    # Granted decisions; denied ones for a shorter time, so a new RoleBinding applies quickly.
    authz_cache_ttl_seconds: float = 10.0
    authz_deny_cache_ttl_seconds: float = 2.0
    token_cache_ttl_seconds: float = 30.0
    # TokenReview spec.audiences: accept only tokens minted for one of these (empty: the API
    # server's own audiences).
    token_audiences: tuple[str, ...] = ()
    # Browser origins (scheme://host[:port]) allowed to call /graphql (CORS); none by default.
    cors_allow_origins: tuple[str, ...] = ()
    # Connections and requests: see docs/service.md, "Limits".
    max_concurrent_requests: int = 100
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 10.0
    keep_alive_timeout_seconds: int = 5
    # uvicorn's WebSocket keep-alive: a ping this often, the connection closed (1011) when its
    # pong has not come within the timeout and nothing waits to be sent (else 4008
    # SLOW_CONSUMER, http/ws_protocol.py). None: no pings (tests that must not race them).
    ws_ping_interval_seconds: float | None = 20.0
    ws_ping_timeout_seconds: float | None = 20.0
    readyz_timeout_seconds: float = 1.5
    max_json_depth: int = 32
    max_operation_name_length: int = 128
    query_limits: QueryLimits = field(default_factory=QueryLimits)
    request_limits: RequestLimits = field(default_factory=RequestLimits)
    # Off by default: see kueue_graphql/lookups/disclosure.py and docs/service.md.
    quota_disclosure: QuotaDisclosure = QuotaDisclosure.NONE
    live_limits: LiveLimits = field(default_factory=LiveLimits)
    read_mode: ReadMode = ReadMode.IMPERSONATE
    # Cache mode: once every informer has synced, freeze what exists (the cached objects) out
    # of the garbage collector, so its full collections stop walking them.
    cache_gc_freeze: bool = True
    # MultiKueue workers: the service's own read-only kubeconfig for each (--worker-kubeconfig).
    worker_kubeconfigs: tuple[WorkerKubeconfig, ...] = ()
