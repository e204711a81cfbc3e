"""The shared informer factory of the `cache` read mode: one Reflector (kube/reflector.py) per
cached kind, each feeding that kind's Indexer (kube/store.py), shared by every request
(process-wide).

Mirrors k8s.io/client-go@v0.36.3/informers/factory.go (`SharedInformerFactory`: informers
started together, `WaitForCacheSync`) over tools/cache/shared_informer.go (an informer is a
reflector feeding an indexer). Which kinds are cached and how each is indexed is the caller's
(Kueue's: lookups/cache_indexes.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from kueue_graphql.core.errors import UnavailableError
from kueue_graphql.kube.client import KubeClient
from kueue_graphql.kube.reflector import Reflector, ReflectorSettings
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kube.store import Indexer, IndexFunc, OrderFunc


class SharedInformerFactory:
    """The stores and their reflectors, one pair per kind of `indexes`."""

    def __init__(
        self,
        client: KubeClient | None,
        indexes: Mapping[Resource, IndexFunc | None],
        settings: ReflectorSettings | None = None,
        orders: Mapping[Resource, OrderFunc] | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.stores = {
            resource: Indexer(resource, index, (orders or {}).get(resource))
            for resource, index in indexes.items()
        }
        self.reflectors: dict[Resource, Reflector] = {}

    def start(self) -> None:
        assert self.client is not None, "a cache without a client is fed by hand (tests)"
        reflectors = [
            Reflector(self.client, resource, store, self.settings)
            for resource, store in self.stores.items()
        ]
        for reflector in reflectors:
            reflector.start()
        self.reflectors = {reflector.resource: reflector for reflector in reflectors}

    async def stop(self) -> None:
        await asyncio.gather(*(reflector.stop() for reflector in self.reflectors.values()))

    async def settled(self) -> None:
        """Return once every kind has its first complete list or is known not to be served
        (client-go's WaitForCacheSync)."""
        await asyncio.gather(*(reflector.settled() for reflector in self.reflectors.values()))

    def problems(self) -> list[str]:
        """Why the cache cannot serve yet (empty: it can): /readyz reports them."""
        now = time.monotonic()
        return [
            problem
            for reflector in self.reflectors.values()
            if (problem := reflector.problem(now)) is not None
        ]

    def serves(self, resource: Resource) -> bool:
        """Whether `resource` is cached: one of the factory's kinds, and its CRD served."""
        reflector = self.reflectors.get(resource)
        return resource in self.stores and not (reflector is not None and reflector.status.absent)

    def store_for(self, resource: Resource) -> Indexer | None:
        """The store serving `resource`; None when it is not cached (not a cached kind, or its
        CRD is not served); UnavailableError before its first complete list."""
        if not self.serves(resource):
            return None
        store = self.stores[resource]
        if not store.synced:
            raise UnavailableError(
                f"the service's cache of {resource} is not synced yet; try again shortly"
            )
        return store
