"""The `cache` read mode's change sources: a subscription on a cached kind is woken once the
store has applied a matching change (client-go's ResourceEventHandler on a shared informer,
tools/cache/shared_informer.go), so its recompute from the cache sees that change."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.changes import ChangeSource, ChangeSources, WatchTarget
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.dependencies import (
    CLUSTER_QUEUE_POSITIONS,
    POSITIONS,
    Dependency,
    cluster_queue_positions,
    list_key,
    object_key,
    position_key,
    touched_by,
)
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.kube.resources import LOCAL_QUEUE, WORKLOAD, Resource
from kueue_graphql.kueue.objects import metadata, spec, status

K = TypeVar("K")


class CacheChanges:
    """The `cache` read mode's ChangeSources: a subscription on a cached kind is woken once the
    store has applied a change that touches one of its dependencies, so its recompute (from the
    cache) sees that change; one on another kind (Pods, Jobs) from a watch as the caller, as in
    `impersonate` mode.

    One listener per store dispatches each change through an index from dependency key to the
    subscriptions that depend on it (no scan over subscriptions). A change of a Workload also
    touches every position in its ClusterQueue (`cluster_queue_positions`): the queue position
    of a subscription is moved by Workloads of other namespaces too.

    A wake-up carries no data: what is pushed is recomputed through the caller's authorized
    reads, and pushed only when it differs."""

    def __init__(self, cache: SharedInformerFactory, fallback: ChangeSources) -> None:
        self.cache = cache
        self.fallback = fallback
        self._index: dict[Dependency, set[_CacheChange]] = {}
        self._by_resource: dict[str, set[_CacheChange]] = {}
        self._listening = False
        self._kinds = {str(resource): resource for resource in cache.stores}

    def open(self, identity: Identity | None, targets: Sequence[WatchTarget]) -> ChangeSource:
        if not self._listening:
            self._listening = True
            for resource, store in self.cache.stores.items():
                store.listen(None, self._dispatcher(resource))
        cached = [t for t in targets if self._cached(t.resource)]
        other = [t for t in targets if not self._cached(t.resource)]
        return _CacheChange(self, cached, self.fallback.open(identity, other) if other else None)

    def _cached(self, resource: Resource) -> bool:
        return self.cache.serves(resource)

    def sees(self, kind: str) -> bool:
        """Whether the cache serves the kind named `kind` (a Dependency's resource)."""
        resource = self._kinds.get(kind)
        return resource is not None and self.cache.serves(resource)

    def subscribe(self, change: _CacheChange, keys: Collection[Dependency]) -> None:
        for key in keys:
            self._index.setdefault(key, set()).add(change)
            self._by_resource.setdefault(key.resource, set()).add(change)

    def unsubscribe(self, change: _CacheChange, keys: Collection[Dependency]) -> None:
        for key in keys:
            _drop(self._index, key, change)
            _drop(self._by_resource, key.resource, change)

    def indexed(self) -> int:
        """How many dependency keys some open subscription is waiting on."""
        return len(self._index)

    def cluster_queue_of_position(self, key: Dependency) -> str | None:
        """The ClusterQueue of a POSITIONS key's LocalQueue, from the LocalQueue store."""
        queue = self.cache.stores.get(LOCAL_QUEUE)
        found = queue.get(key.namespace, key.name or "") if queue is not None else None
        name = spec(found).get("clusterQueue")
        return str(name) if name else None

    def _cluster_queue_of(self, workload: JsonObject) -> str | None:
        admitted = (status(workload).get("admission") or {}).get("clusterQueue")
        if admitted:
            return str(admitted)
        queue = spec(workload).get("queueName")
        namespace = metadata(workload).get("namespace")
        if not queue or not namespace:
            return None
        return self.cluster_queue_of_position(position_key(str(namespace), str(queue)))

    def _dispatcher(self, resource: Resource) -> Callable[[JsonObject | None], None]:
        kind = str(resource)

        def dispatch(obj: JsonObject | None) -> None:
            if obj is None:  # a re-list swapped in: anything of the kind may have changed
                woken = set(self._by_resource.get(kind, ()))
                if resource == WORKLOAD:
                    woken.update(self._by_resource.get(CLUSTER_QUEUE_POSITIONS, ()))
            else:
                keys = touched_by(resource, obj)
                if resource == WORKLOAD:
                    cluster_queue = self._cluster_queue_of(obj)
                    if cluster_queue is not None:
                        keys.add(cluster_queue_positions(cluster_queue))
                woken = {change for key in keys for change in self._index.get(key, ())}
            for change in woken:
                change.wake()

        return dispatch


def _drop(index: dict[K, set[_CacheChange]], key: K, change: _CacheChange) -> None:
    waiting = index.get(key)
    if waiting is not None:
        waiting.discard(change)
        if not waiting:
            del index[key]


def _target_keys(targets: Sequence[WatchTarget]) -> set[Dependency]:
    """The keys a target's watch would wake on, before the first dependencies are known."""
    keys: set[Dependency] = set()
    for target in targets:
        selector = target.field_selector or ""
        namespace = target.namespace if target.resource.namespaced else None
        if selector.startswith("metadata.name="):
            keys.add(
                object_key(target.resource, namespace, selector.removeprefix("metadata.name="))
            )
        else:
            keys.add(list_key(target.resource, namespace))
    return keys


class _CacheChange:
    def __init__(
        self, source: CacheChanges, targets: Sequence[WatchTarget], other: ChangeSource | None
    ) -> None:
        self._source = source
        self._changed = asyncio.Event()
        self._other = other
        self._keys = _target_keys(targets)
        source.subscribe(self, self._keys)

    def wake(self) -> None:
        self._changed.set()

    def depend_on(self, dependencies: Collection[Dependency]) -> set[Dependency]:
        source = self._source
        keys: set[Dependency] = set()
        other: list[Dependency] = []
        unseen: set[Dependency] = set()
        for key in dependencies:
            if key.resource == POSITIONS:
                cluster_queue = source.cluster_queue_of_position(key)
                if cluster_queue is not None:
                    keys.add(cluster_queue_positions(cluster_queue))
                # Not read again at the re-check: in this mode positions come from the same
                # store whose change wakes the recompute (lookups/queue_positions.py).
            elif source.sees(key.resource):
                keys.add(key)
            else:
                other.append(key)
        source.unsubscribe(self, self._keys)
        self._keys = keys
        source.subscribe(self, keys)
        if self._other is not None:
            unseen |= self._other.depend_on(other)
        else:
            unseen.update(other)
        return unseen

    async def wait(self, quiet_seconds: float) -> bool:
        own = asyncio.ensure_future(self._changed.wait())
        waits: set[asyncio.Future[Any]] = {own}
        if self._other is not None:
            waits.add(asyncio.ensure_future(self._other.wait(quiet_seconds)))
        try:
            done, _ = await asyncio.wait(
                waits, timeout=quiet_seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiting in waits:
                waiting.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
        changed = self._changed.is_set() or any(
            f is not own and not f.cancelled() and f.exception() is None and f.result() is True
            for f in done
        )
        self._changed.clear()
        return changed

    async def close(self) -> None:
        self._source.unsubscribe(self, self._keys)
        self._keys = set()
        if self._other is not None:
            await self._other.close()
