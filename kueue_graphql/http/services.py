"""The process-wide services the app is wired from: the Kubernetes clients, the
authenticator, the authorization cache, the live-subscription registry and, in the `cache`
read mode, the shared informers; and what wakes a subscription."""

from __future__ import annotations

from dataclasses import dataclass, field

from kueue_graphql.auth import (
    Authenticator,
    LocalAuthenticator,
    TokenReviewAuthenticator,
)
from kueue_graphql.context import LiveRegistry
from kueue_graphql.core.modes import AuthMode
from kueue_graphql.http.memory import FreeMemoryReturner, glibc_malloc_trim
from kueue_graphql.http.settings import ServerSettings
from kueue_graphql.kube.authz import Authorizer
from kueue_graphql.kube.cache_changes import CacheChanges
from kueue_graphql.kube.changes import ChangeSources, WatchSources
from kueue_graphql.kube.client import KubeClient
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.lookups.cache_indexes import local_queue_of_posting


@dataclass
class Services:
    """Process-wide: the one ApiClient (inside KubeClient), the authorization cache, and the
    token-review cache. Nothing here holds object data."""

    kube: KubeClient
    authenticator: Authenticator
    authorizer: Authorizer
    live: LiveRegistry
    # Subscriptions' watches: a client of its own, so long-running watches never take the
    # connections reads need.
    watch_kube: KubeClient
    # Why the service's own identity cannot serve callers (empty: it can); /readyz reports it.
    identity_problems: list[str] = field(default_factory=list)
    # `cache` read mode only: the watch-fed stores of the Kueue kinds.
    cache: SharedInformerFactory | None = None
    # `cache` read mode only: the one source of wake-ups from those stores (`change_sources`).
    cache_changes: CacheChanges | None = None


def build_services(
    kube: KubeClient, settings: ServerSettings, watch_kube: KubeClient | None = None
) -> Services:
    authenticator: Authenticator
    if settings.auth_mode is AuthMode.LOCAL:
        authenticator = LocalAuthenticator(kube)
    else:
        authenticator = TokenReviewAuthenticator(
            kube,
            ttl_seconds=settings.token_cache_ttl_seconds,
            audiences=settings.token_audiences,
        )
    authorizer = Authorizer(
        kube,
        self_review=not authenticator.impersonates,
        ttl_seconds=settings.authz_cache_ttl_seconds,
        deny_ttl_seconds=settings.authz_deny_cache_ttl_seconds,
    )
    # Free memory a closed burst of subscriptions leaves with malloc goes back to the OS.
    memory_returner = FreeMemoryReturner(glibc_malloc_trim())
    return Services(
        kube=kube,
        authenticator=authenticator,
        authorizer=authorizer,
        live=LiveRegistry(
            settings.live_limits, on_closed=memory_returner.closed, authorizer=authorizer
        ),
        watch_kube=watch_kube or kube,
    )


def change_sources(services: Services) -> ChangeSources:
    """What wakes a subscription, over WebSocket and HTTP alike. Cache mode: changes to Kueue
    kinds wake from the informers (once the cache has them); Pods and Jobs are watched as the
    caller in both modes."""
    watches = WatchSources(services.watch_kube)
    if services.cache is None:
        return watches
    # One per process: its listeners on the stores and its indexes serve every connection
    # (one per connection would leave a listener per store behind for each connection ever).
    if services.cache_changes is None:
        services.cache_changes = CacheChanges(services.cache, watches, local_queue_of_posting)
    return services.cache_changes
