"""How the service runs: its authentication mode, read mode and quota disclosure level, and the
bounds its settings are checked against. Plain values with no imports of the service, so the
CLI can check flags and print `--help` without loading the Kubernetes client or the schema."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "MAX_READYZ_TIMEOUT_SECONDS",
    "MAX_TOKEN_CACHE_TTL_SECONDS",
    "MIN_ANALYSIS_BACKSTOP_SECONDS",
    "AuthMode",
    "QuotaDisclosure",
    "ReadMode",
]


class AuthMode(StrEnum):
    TOKEN_REVIEW = "token-review"  # noqa: S105 -- a mode name, not a secret
    LOCAL = "local"


class ReadMode(StrEnum):
    # Every read made for the request, as the caller: the API server enforces RBAC.
    IMPERSONATE = "impersonate"
    # Kueue kinds from a watch-fed cache (read as the service), each read authorized for the
    # caller by SubjectAccessReview; Jobs, Pods, Events, Nodes still read as the caller.
    CACHE = "cache"


class QuotaDisclosure(StrEnum):
    """What a tenant may learn of a ClusterQueue she may not read (lookups/disclosure.py)."""

    NONE = "none"
    VERDICT = "verdict"
    QUOTA = "quota"


# A deleted ServiceAccount or revoked token keeps working through the service for as long as
# its TokenReview answer is cached: never longer than this.
MAX_TOKEN_CACHE_TTL_SECONDS = 300.0
# The analysis backstop is wall-clock: below this it refuses legitimate queries on a loaded
# machine (a query is limited by its analysis units; the backstop only protects the service).
MIN_ANALYSIS_BACKSTOP_SECONDS = 1.0
# /readyz answers within this even when the API server does not (issue 8: within 2 s).
MAX_READYZ_TIMEOUT_SECONDS = 2.0
