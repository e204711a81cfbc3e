"""The object every resolver receives as `info.context`.

A new one is made for every HTTP request, so nothing in it (loaders, memoized identity, API-call
meter) can outlive the request or be seen by another caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kueue_graphql.context.live import LiveRegistry
from kueue_graphql.core.identity import Identity
from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.kube.authz import Authorizer
from kueue_graphql.kube.changes import ChangeSources
from kueue_graphql.kube.client import ApiCallMeter, KubeClient
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.lookups import ApiServerReader, KueueReader
from kueue_graphql.lookups.cached import CachedQuotaReads, CacheReader
from kueue_graphql.lookups.disclosure import DisclosurePolicy, ServiceQuotaReads


@dataclass(frozen=True)
class RequestLimits:
    api_call_budget: int = 200
    deadline_seconds: float = 20.0
    max_page_size: int = 100


class LazyIdentity:
    """Authenticates on first use, once per request.

    Deferring the TokenReview until a resolver needs the identity means a query that fails
    validation (too deep, too many aliases, malformed) is refused before any API call.
    """

    def __init__(self, authenticate: Callable[[], Awaitable[Identity]]) -> None:
        self._authenticate = authenticate
        self._task: asyncio.Task[Identity] | None = None

    def known(self) -> Identity | None:
        """The identity, if this request has already authenticated successfully."""
        task = self._task
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    async def __call__(self) -> Identity:
        if self._task is None:
            self._task = asyncio.ensure_future(self._authenticate())
        return await asyncio.shield(self._task)


@dataclass
class Operation:
    """What the request turned out to be, filled in during execution, read by the access log."""

    name: str | None = None
    type: str = "none"  # query, mutation, subscription; none: refused before parsing


@dataclass
class RequestContext:
    reads: KueueReader
    meter: ApiCallMeter
    identity: LazyIdentity
    limits: RequestLimits
    disclosure: DisclosurePolicy = field(default_factory=DisclosurePolicy)
    operation: Operation = field(default_factory=Operation)
    # WebSocket connections only: strawberry puts connection_init's payload here, `renew` makes
    # the fresh per-message context of a subscription, `live` holds the subscription caps.
    connection_params: dict[str, Any] | None = None
    renew: Callable[[], RequestContext] | None = None
    live: LiveRegistry | None = None
    # Where a subscription's "something changed" wake-ups come from (read-mode specific).
    changes: ChangeSources | None = None
    # Whether reads (and a subscription's watches) are made as the caller.
    impersonate: bool = True

    @classmethod
    def create(
        cls,
        *,
        client: KubeClient,
        authorizer: Authorizer,
        authenticate: Callable[[ApiCallMeter], Awaitable[Identity]],
        impersonate: bool,
        limits: RequestLimits,
        quota_disclosure: QuotaDisclosure = QuotaDisclosure.NONE,
        cache: SharedInformerFactory | None = None,
    ) -> RequestContext:
        meter = ApiCallMeter(
            budget=limits.api_call_budget, deadline=time.monotonic() + limits.deadline_seconds
        )
        identity = LazyIdentity(lambda: authenticate(meter))
        # In the `cache` read mode the Jobs, Pods and Events read as the caller come from the API
        # server's watch cache too (resourceVersion=0): as fresh as the informers' Kueue objects
        # they are shown with, at a fraction of a quorum read's cost to the control plane.
        direct = ApiServerReader(
            client,
            authorizer,
            identity,
            impersonate=impersonate,
            meter=meter,
            from_watch_cache=cache is not None,
        )
        # `cache` read mode: Kueue kinds from the shared cache, authorized per caller; the rest
        # read as the caller. The resolvers see a KueueReader either way.
        reads: KueueReader = direct if cache is None else CacheReader(direct, cache)
        # The service reads as itself only when an admin turned the disclosure policy on.
        # In the `cache` read mode its ClusterQueue, Cohort, ResourceFlavor and
        # WorkloadPriorityClass reads come from the cache's stores (no API call).
        service_reads = ServiceQuotaReads(client, meter)
        disclosure = (
            DisclosurePolicy(
                quota_disclosure,
                service_reads if cache is None else CachedQuotaReads(cache, service_reads),
            )
            if quota_disclosure is not QuotaDisclosure.NONE
            else DisclosurePolicy()
        )
        return cls(
            reads=reads,
            meter=meter,
            identity=identity,
            limits=limits,
            impersonate=impersonate,
            disclosure=disclosure,
        )
