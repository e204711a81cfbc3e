"""The `cache` read mode's change sources: a subscription on a cached kind is woken once the
store has applied a matching change (client-go's ResourceEventHandler on a shared informer,
tools/cache/shared_informer.go), so its recompute from the cache sees that change."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.changes import ChangeSource, ChangeSources, WatchTarget
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kueue.objects import metadata


class CacheChanges:
    """The `cache` read mode's ChangeSources: a subscription on a cached kind is woken once the
    store has applied a matching change, so its recompute (from the cache) sees that change;
    one on another kind (Pods, Jobs) from a watch as the caller, as in `impersonate` mode.

    A wake-up carries no data: what is pushed is recomputed through the caller's authorized
    reads, and pushed only when it differs."""

    def __init__(self, cache: SharedInformerFactory, fallback: ChangeSources) -> None:
        self.cache = cache
        self.fallback = fallback

    def open(self, identity: Identity | None, targets: Sequence[WatchTarget]) -> ChangeSource:
        cached = [t for t in targets if self._cached(t.resource)]
        other = [t for t in targets if not self._cached(t.resource)]
        return _CacheChange(
            self.cache, cached, self.fallback.open(identity, other) if other else None
        )

    def _cached(self, resource: Resource) -> bool:
        return self.cache.serves(resource)


class _CacheChange:
    def __init__(
        self,
        cache: SharedInformerFactory,
        targets: Sequence[WatchTarget],
        other: ChangeSource | None,
    ) -> None:
        self._changed = asyncio.Event()
        self._other = other
        self._undo: list[Callable[[], None]] = []
        for target in targets:
            name = None
            selector = target.field_selector or ""
            if selector.startswith("metadata.name="):
                name = selector.removeprefix("metadata.name=")
            namespace = target.namespace if target.resource.namespaced else None
            store = cache.stores[target.resource]
            self._undo.append(store.listen(namespace, self._matcher(name)))

    def _matcher(self, name: str | None) -> Callable[[JsonObject | None], None]:
        def changed(obj: JsonObject | None) -> None:
            if obj is None or name is None or metadata(obj).get("name") == name:
                self._changed.set()

        return changed

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
        for undo in self._undo:
            undo()
        self._undo = []
        if self._other is not None:
            await self._other.close()
