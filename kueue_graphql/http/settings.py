"""Everything the server can be configured with (the CLI fills it from flags and env vars)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from kueue_graphql.context import LiveLimits, RequestLimits
from kueue_graphql.graph.schema import QueryLimits
from kueue_graphql.lookups.disclosure import QuotaDisclosure


class AuthMode(StrEnum):
    TOKEN_REVIEW = "token-review"  # noqa: S105 -- a mode name, not a secret
    LOCAL = "local"


@dataclass(frozen=True)
class ServerSettings:
    kubeconfig: str | None = None
    kube_context: str | None = None
    in_cluster: bool = False
    auth_mode: AuthMode = AuthMode.TOKEN_REVIEW
    allow_get_queries: bool = False
    graphiql: bool = True
    # GraphiQL's JavaScript and CSS from this directory instead of unpkg.com (None: unpkg.com).
    graphiql_assets: Path | None = None
    max_body_bytes: int = 64 * 1024
    api_request_timeout_seconds: float = 10.0
    authz_cache_ttl_seconds: float = 10.0
    token_cache_ttl_seconds: float = 30.0
    # Browser origins (scheme://host[:port]) allowed to call /graphql (CORS); none by default.
    cors_allow_origins: tuple[str, ...] = ()
    query_limits: QueryLimits = field(default_factory=QueryLimits)
    request_limits: RequestLimits = field(default_factory=RequestLimits)
    # Off by default: see kueue_graphql/lookups/disclosure.py and docs/service.md.
    quota_disclosure: QuotaDisclosure = QuotaDisclosure.NONE
    live_limits: LiveLimits = field(default_factory=LiveLimits)
