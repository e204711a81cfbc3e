"""Changes relevant to one subscription: the event source behind live answers.

`ChangeSource` is the small interface a subscription waits on ("something it depends on may have
changed"). `WatchChanges` is the `impersonate` read mode's source: it opens Kubernetes watches AS
THE CALLER (impersonation headers), so the API server enforces RBAC on the stream itself. A
shared-informer (`cache` read mode) source implements the same interface (cache_changes.py).

Pending changes are one flag, not a queue: a burst of watch events while the subscriber is busy
(or slow to read) is one wake-up, so memory per subscription is bounded whatever the event rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import aiohttp

from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.client import KubeClient, impersonation_headers
from kueue_graphql.kube.dependencies import Dependency, touched_by, touches_any
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kueue.objects import metadata

log = logging.getLogger(__name__)

# A watch is re-opened after this long (the API server closes it anyway at some point).
_WATCH_SECONDS = 300
# Wait before re-opening a watch that failed (403, network), so a refused one costs little.
_RETRY_SECONDS = 5.0


class ChangeSource(Protocol):
    async def wait(self, quiet_seconds: float) -> bool:
        """True when something changed since the last call, False after `quiet_seconds` of quiet."""
        ...

    def touched(self) -> set[Dependency] | None:
        """The dependencies the changes since the last call touched (those `wait` reported),
        or None when that is not known (anything may have changed): a subscription may read
        just those again and recompute nothing when they read the same."""
        ...

    def depend_on(self, dependencies: Collection[Dependency]) -> set[Dependency]:
        """From now on, wake only for a change that touches one of `dependencies` (until
        called, every change of the targets wakes). Returns those of them this source does not
        see: the subscription reads them again at its periodic re-check."""
        ...

    async def close(self) -> None: ...


class ChangeSources(Protocol):
    """Opens the ChangeSource of one subscription. The `impersonate` read mode's is
    `WatchSources` (watches as the caller); a shared-cache read mode gives one that wakes
    subscriptions from its informers' events, and nothing above this interface changes."""

    def open(self, identity: Identity | None, targets: Sequence[WatchTarget]) -> ChangeSource: ...


@dataclass(frozen=True)
class WatchTarget:
    resource: Resource
    namespace: str | None
    field_selector: str | None = None


class WatchSources:
    """ChangeSources of watches on `client` (its own connection pool, apart from reads)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def open(self, identity: Identity | None, targets: Sequence[WatchTarget]) -> ChangeSource:
        return WatchChanges(self._client, identity, targets)


def _covers(target: WatchTarget, key: Dependency) -> bool:
    if str(target.resource) != key.resource:
        return False
    if target.namespace is not None and target.namespace != key.namespace:
        return False
    return target.field_selector is None or target.field_selector == f"metadata.name={key.name}"


class WatchChanges:
    """Watches as the caller; an event that touches a dependency (every event, until
    `depend_on` is called) sets the pending flag."""

    def __init__(
        self, client: KubeClient, identity: Identity | None, targets: Sequence[WatchTarget]
    ) -> None:
        self._client = client
        self._identity = identity
        self._targets = tuple(targets)
        self._changed = asyncio.Event()
        self._dependencies: frozenset[Dependency] | None = None
        self.events_seen = 0
        # Each watch in an empty context: its connection and timers (a read timeout of
        # _WATCH_SECONDS + 30 s stays scheduled after the watch is cancelled) would otherwise
        # keep the opening subscription's context, and its first reads, alive after it closed.
        self._tasks = [
            asyncio.get_running_loop().create_task(
                self._watch(target), context=contextvars.Context()
            )
            for target in targets
        ]

    async def wait(self, quiet_seconds: float) -> bool:
        if not self._changed.is_set() and quiet_seconds > 0:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the event and drops
            # a cancellation that arrives in the same loop iteration, and the closed
            # subscription would go on recomputing with its watches open.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(quiet_seconds):
                    await self._changed.wait()
        changed = self._changed.is_set()
        self._changed.clear()
        return changed

    def touched(self) -> set[Dependency] | None:
        # Not tracked: a watch event as the caller is answered by a recompute (reading the
        # touched objects again would cost the same API calls as the recompute's).
        return None

    def depend_on(self, dependencies: Collection[Dependency]) -> set[Dependency]:
        self._dependencies = frozenset(dependencies)
        return {d for d in dependencies if not any(_covers(t, d) for t in self._targets)}

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _watch(self, target: WatchTarget) -> None:
        resource_version: str | None = None
        while True:
            try:
                resource_version = await self._stream(target, resource_version)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.debug("watch of %s failed: %s", target.resource, type(error).__name__)
                resource_version = None
                await asyncio.sleep(_RETRY_SECONDS)

    async def _stream(self, target: WatchTarget, resource_version: str | None) -> str | None:
        query: list[tuple[str, str]] = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(_WATCH_SECONDS)),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if target.field_selector:
            query.append(("fieldSelector", target.field_selector))
        headers: dict[str, str | list[str]] = {"Accept": "application/json"}
        if self._identity is not None:
            headers.update(impersonation_headers(self._identity))
        response = await self._client.api_client.call_api(
            target.resource.path(target.namespace),
            "GET",
            query_params=query,
            header_params=headers,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=aiohttp.ClientTimeout(total=None, sock_read=_WATCH_SECONDS + 30),
        )
        try:
            if response.status != 200:
                raise RuntimeError(f"watch answered {response.status}")
            # Without a resourceVersion the watch starts with ADDED for every existing object;
            # that costs one recompute, and nothing is pushed unless the verdict differs.
            async for line in response.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("type")
                obj = event.get("object") or {}
                version = metadata(obj).get("resourceVersion")
                if kind == "ERROR":
                    return None  # e.g. 410 Gone: re-list from now
                if version:
                    resource_version = str(version)
                if kind == "BOOKMARK":
                    continue
                self.events_seen += 1
                dependencies = self._dependencies
                if dependencies is None or touches_any(
                    touched_by(target.resource, obj), dependencies
                ):
                    self._changed.set()
        finally:
            # close, not release: an unfinished watch stream cannot go back into the pool.
            response.close()
        return resource_version
