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
    POSITIONS,
    Dependency,
    list_key,
    object_key,
    touched_by,
)
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.kube.paging import OrderKey, order_key
from kueue_graphql.kube.position_watches import PositionWatches
from kueue_graphql.kube.resources import LOCAL_QUEUE, WORKLOAD, Resource
from kueue_graphql.kube.store import Indexer, OrderedEntry, PostingKey
from kueue_graphql.kueue.objects import metadata, spec

K = TypeVar("K")
_NOWHERE: OrderedEntry = ((), ("", ""))


class CacheChanges:
    """The `cache` read mode's ChangeSources: a subscription on a cached kind is woken once the
    store has applied a change that touches one of its dependencies, so its recompute (from the
    cache) sees that change; one on another kind (Pods, Jobs) from a watch as the caller, as in
    `impersonate` mode.

    One listener per store dispatches each change through an index from dependency key to the
    subscriptions that depend on it (no scan over subscriptions). A queue position is woken
    through its own index (kube/position_watches.py): only when a change of a Workload of the
    same ClusterQueue (any namespace) adds, removes or moves a pending entry at or before the
    watched Workload's own entry, never by a status write that leaves the order as it was.
    Each wake-up says which dependency keys it was for (`touched`): a subscription woken for a
    position only may read the position again first and recompute nothing when it is the same
    (graph/subscription.py).

    A wake-up carries no data: what is pushed is recomputed through the caller's authorized
    reads, and pushed only when it differs."""

    def __init__(
        self,
        cache: SharedInformerFactory,
        fallback: ChangeSources,
        local_queue_of: Callable[[PostingKey], tuple[str, str] | None],
    ) -> None:
        self.cache = cache
        self.fallback = fallback
        # (namespace, LocalQueue) of an ordered posting of the Workload store (a LocalQueue's
        # queue, lookups/cache_indexes.py), None for another posting.
        self.local_queue_of = local_queue_of
        self._index: dict[Dependency, set[_CacheChange]] = {}
        self._by_resource: dict[str, set[_CacheChange]] = {}
        self.positions: PositionWatches[_CacheChange] = PositionWatches()
        # The ClusterQueue each LocalQueue named when last seen: a LocalQueue that starts or
        # stops feeding a ClusterQueue moves every position in it.
        self._feeds: dict[tuple[str, str], str] = {}
        self._listening = False
        self._kinds = {str(resource): resource for resource in cache.stores}

    def open(self, identity: Identity | None, targets: Sequence[WatchTarget]) -> ChangeSource:
        if not self._listening:
            self._listening = True
            for resource, store in self.cache.stores.items():
                store.listen(None, self._dispatcher(resource))
            self._remember_feeds()
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
        """How many dependency keys (and watched positions) some open subscription waits on."""
        return len(self._index) + len(self.positions)

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        """The ClusterQueue a LocalQueue feeds, from the LocalQueue store."""
        queue = self.cache.stores.get(LOCAL_QUEUE)
        found = queue.get(namespace, local_queue) if queue is not None else None
        name = spec(found).get("clusterQueue")
        return str(name) if name else None

    def entry_in(self, cluster_queue: str, workload: OrderKey) -> OrderedEntry | None:
        """`workload`'s entry in `cluster_queue`'s pending order now, if it has one."""
        store = self.cache.stores.get(WORKLOAD)
        if store is None or not store.synced:
            return None
        for posting, entry in store.placed(workload[0][:-1] or None, workload[1]).items():
            queue = self.local_queue_of(posting)
            if queue is not None and self.cluster_queue_of(*queue) == cluster_queue:
                return entry
        return None

    def watch_position(self, change: _CacheChange, key: Dependency) -> tuple[str, OrderKey] | None:
        """Index `change` under the position `key` (POSITIONS: namespace, LocalQueue, Workload)."""
        if key.namespace is None or key.name is None or key.selector is None:
            return None
        cluster_queue = self.cluster_queue_of(key.namespace, key.name)
        if cluster_queue is None:
            return None
        workload = order_key(key.namespace, key.selector)
        self.positions.watch(
            cluster_queue, workload, self.entry_in(cluster_queue, workload), change
        )
        return cluster_queue, workload

    def _remember_feeds(self) -> None:
        queues = self.cache.stores.get(LOCAL_QUEUE)
        if queues is None or not queues.synced:
            return
        self._feeds = {}
        for queue in queues.state().objects.values():
            self._remember_feed(queue)

    def _remember_feed(self, queue: JsonObject) -> set[str]:
        """Records which ClusterQueue the LocalQueue feeds now; the ClusterQueues whose
        order that changed (the one it fed before and the one it feeds now)."""
        meta = metadata(queue)
        at = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        before = self._feeds.pop(at, None)
        now = self.cluster_queue_of(*at)
        if now is not None:
            self._feeds[at] = now
        return {q for q in (before, now) if q is not None} if before != now else set()

    def _positions_moved(self, store: Indexer) -> set[_CacheChange]:
        """The position watchers the change `store` is telling about can move."""
        woken: set[_CacheChange] = set()
        for posting, before, after in store.moves:
            queue = self.local_queue_of(posting)
            cluster_queue = self.cluster_queue_of(*queue) if queue is not None else None
            workload = (before if before is not None else after or _NOWHERE)[1]
            for watched_in in self.positions.queues_watching(workload):
                self.positions.rekey(watched_in, workload, self.entry_in(watched_in, workload))
            if cluster_queue is not None:
                woken |= self.positions.moved(cluster_queue, before, after)
        return woken

    def _dispatcher(self, resource: Resource) -> Callable[[JsonObject | None], None]:
        kind = str(resource)
        store = self.cache.stores[resource]

        def dispatch(obj: JsonObject | None) -> None:
            if obj is None:  # a re-list swapped in: anything of the kind may have changed
                for change in self._by_resource.get(kind, ()):
                    change.wake(None)
                if resource in (WORKLOAD, LOCAL_QUEUE):
                    self._rekey_all()
                    if resource == LOCAL_QUEUE:
                        self._remember_feeds()
                    for change in self.positions.everyone():
                        change.wake(None)
                return
            keys = touched_by(resource, obj)
            for key in keys:
                for change in self._index.get(key, ()):
                    change.wake(key)
            if resource == WORKLOAD:
                for change in self._positions_moved(store):
                    change.wake_position()
            elif resource == LOCAL_QUEUE:
                for cluster_queue in self._remember_feed(obj):
                    for change in self.positions.everyone(cluster_queue):
                        change.wake_position()

        return dispatch

    def _rekey_all(self) -> None:
        for cluster_queue, workload in self.positions.watched():
            self.positions.rekey(cluster_queue, workload, self.entry_in(cluster_queue, workload))


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
        # The dependency keys the changes since the last `touched()` touched (None: unknown).
        self._touched: set[Dependency] | None = set()
        # The position keys (POSITIONS) depended on, and where each is watched.
        self._positions: dict[tuple[str, OrderKey], Dependency] = {}
        source.subscribe(self, self._keys)

    def wake(self, key: Dependency | None) -> None:
        """A change touched `key` (None: anything of a kind may have changed)."""
        if key is None:
            self._touched = None
        elif self._touched is not None:
            self._touched.add(key)
        self._changed.set()

    def wake_position(self) -> None:
        """A change of the pending order may have moved one of the positions depended on."""
        if self._touched is not None:
            self._touched.update(self._positions.values())
        self._changed.set()

    def touched(self) -> set[Dependency] | None:
        touched, self._touched = self._touched, set()
        return touched

    def depend_on(self, dependencies: Collection[Dependency]) -> set[Dependency]:
        source = self._source
        keys: set[Dependency] = set()
        other: list[Dependency] = []
        unseen: set[Dependency] = set()
        positions: dict[tuple[str, OrderKey], Dependency] = {}
        for key in dependencies:
            if key.resource == POSITIONS:
                # Not read again at the re-check: in this mode positions come from the same
                # store whose change wakes the recompute (lookups/queue_positions.py). The
                # Workload's own change and its LocalQueue's wake it directly.
                if key.namespace is not None and key.name is not None:
                    keys.add(object_key(LOCAL_QUEUE, key.namespace, key.name))
                    if key.selector is not None:
                        keys.add(object_key(WORKLOAD, key.namespace, key.selector))
                watched = source.watch_position(self, key)
                if watched is not None:
                    positions[watched] = key
            elif source.sees(key.resource):
                keys.add(key)
            else:
                other.append(key)
        self._unwatch_positions(keep=positions)
        self._positions = positions
        source.unsubscribe(self, self._keys - keys)
        source.subscribe(self, keys - self._keys)
        self._keys = keys
        if self._other is not None:
            unseen |= self._other.depend_on(other)
        else:
            unseen.update(other)
        return unseen

    def _unwatch_positions(self, keep: Collection[tuple[str, OrderKey]] = ()) -> None:
        for cluster_queue, workload in self._positions.keys() - set(keep):
            self._source.positions.unwatch(cluster_queue, workload, self)

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
        other_changed = any(
            f is not own and not f.cancelled() and f.exception() is None and f.result() is True
            for f in done
        )
        if other_changed:
            self._touched = None  # a watch as the caller does not say what it touched
        changed = self._changed.is_set() or other_changed
        self._changed.clear()
        return changed

    async def close(self) -> None:
        self._source.unsubscribe(self, self._keys)
        self._keys = set()
        self._unwatch_positions()
        self._positions = {}
        if self._other is not None:
            await self._other.close()
