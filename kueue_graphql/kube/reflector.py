"""A Reflector: LIST one kind once, then WATCH it from that resourceVersion, under the
SERVICE's own identity (the `cache` read mode; callers are authorized per request elsewhere).

Mirrors k8s.io/client-go@v0.36.3/tools/cache/reflector.go (`Reflector.ListAndWatch` into a
`ReflectorStore`); the store it feeds is kube/store.py's Indexer, and kube/informer_factory.py
starts one per cached kind.

- The list is read in pages (limit/continue) and handed to the store whole (`replace`), so the
  store can swap a complete state in at once.
- The watch is kubernetes-asyncio's `watch.Watch` with `allowWatchBookmarks`, re-opened from the
  last resourceVersion when the API server ends it (`timeoutSeconds`), and re-listed on 410 Gone
  (the version is too old: events were missed) or after repeated failures.
- Errors back off exponentially (with jitter) up to `max_backoff_seconds`; `problem()` says when
  the kind is not synced yet or its watch has been broken for longer than that.
- A kind whose CRD the API server does not serve (LIST answers 404) is skipped, logged, and
  looked for again every `absent_recheck_seconds`.

The store holds the data; this module only moves it. kube/reflector_metrics.py reports every
reflector on /metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import watch as k8s_watch
from kubernetes_asyncio.client.exceptions import ApiException

from kueue_graphql.kube.client import ApiCallMeter, ApiStatusError, JsonObject, KubeClient
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kueue.objects import metadata

log = logging.getLogger(__name__)


class ReflectorStore(Protocol):
    def replace(self, objects: list[JsonObject], resource_version: str) -> None: ...

    def apply(self, event_type: str, obj: JsonObject, resource_version: str | None) -> None: ...

    def touch(self) -> None: ...

    def size(self) -> int: ...


class GoneError(Exception):
    """410 Gone: the resourceVersion is too old (or a continue token expired): re-list."""


@dataclass(frozen=True)
class ReflectorSettings:
    list_page: int = 500
    # The API server ends each watch after this long; it is re-opened from the last version.
    watch_seconds: int = 60
    initial_backoff_seconds: float = 0.5
    max_backoff_seconds: float = 30.0
    # Failed watches in a row before the kind is listed again.
    relist_after_failures: int = 3
    absent_recheck_seconds: float = 60.0


@dataclass
class ReflectorStatus:
    synced: bool = False
    absent: bool = False
    # time.monotonic() of the first failure since the last success.
    broken_since: float | None = None
    last_error: str | None = None
    # Complete lists (the first one included); re-lists after a 410 Gone among them.
    lists: int = 0
    gone: int = 0
    # Watch streams opened (every one after the first is a restart) and events received.
    watches: int = 0
    events: int = 0
    # Failed lists or watches (connection errors, 5xx, timeouts; not 410 Gone).
    failures: int = 0
    # time.monotonic() of the last word from the API server: a list, an event, a bookmark or
    # a watch (re)opened; and the resourceVersion the reflector is at.
    heard_at: float | None = None
    resource_version: str = ""


class Reflector:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        store: ReflectorStore,
        settings: ReflectorSettings | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.store = store
        self.settings = settings or ReflectorSettings()
        self.status = ReflectorStatus()
        self._task: asyncio.Task[None] | None = None
        self._resource_version: str | None = None
        # Set once the kind is synced (its first complete list) or found not served.
        self._settled = asyncio.Event()

    async def settled(self) -> None:
        """Return once the kind has its first complete list, or is known not to be served."""
        await self._settled.wait()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"reflector {self.resource}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def problem(self, now: float | None = None) -> str | None:
        """Why this kind cannot be served from the cache right now (None: it can)."""
        status = self.status
        if status.absent:
            return None
        if not status.synced:
            reason = f": {status.last_error}" if status.last_error else ""
            return f"the cache of {self.resource} is not synced yet{reason}"
        if status.broken_since is not None:
            broken = (time.monotonic() if now is None else now) - status.broken_since
            if broken > self.settings.max_backoff_seconds:
                return (
                    f"the watch of {self.resource} has been broken for {broken:.0f} s: "
                    f"{status.last_error}"
                )
        return None

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.settings.initial_backoff_seconds
        failures = 0
        while True:
            try:
                relist = failures >= self.settings.relist_after_failures
                if self._resource_version is None or relist:
                    if not await self._list():
                        # Not served: look again later.
                        await asyncio.sleep(self.settings.absent_recheck_seconds)
                        continue
                    failures = 0
                await self._watch()
                backoff = self.settings.initial_backoff_seconds
                failures = 0
            except asyncio.CancelledError:
                raise
            except GoneError:
                log.info("watch of %s: 410 Gone, listing again", self.resource)
                self.status.gone += 1
                self._resource_version = None
            except Exception as error:  # every other failure: back off, then try again
                failures += 1
                self._failed(error)
                delay = backoff * random.uniform(0.5, 1.0)  # noqa: S311 -- jitter, not crypto
                backoff = min(backoff * 2, self.settings.max_backoff_seconds)
                await asyncio.sleep(delay)

    def _failed(self, error: BaseException) -> None:
        self.status.failures += 1
        text = " ".join(str(error).split())[:300] or type(error).__name__
        if self.status.broken_since is None:
            self.status.broken_since = time.monotonic()
            log.warning("reflector of %s failed: %s: %s", self.resource, type(error).__name__, text)
        self.status.last_error = text

    def _healthy(self) -> None:
        self.status.broken_since = None
        self.status.last_error = None

    async def _list(self) -> bool:
        """One complete list, handed over whole; False when the kind is not served."""
        items: list[JsonObject] = []
        continue_token: str | None = None
        resource_version = ""
        while True:
            query: list[tuple[str, str]] = [("limit", str(self.settings.list_page))]
            if continue_token:
                query.append(("continue", continue_token))
            try:
                page = await self.client.request_json(
                    "GET", self.resource.path(), meter=ApiCallMeter(budget=1), query=query
                )
            except ApiStatusError as error:
                if error.status == 404 and not continue_token:
                    if not self.status.absent:
                        log.info(
                            "%s is not served by this API server (no CRD): not cached; reads "
                            "of it go to the API server",
                            self.resource,
                        )
                    self.status.absent = True
                    self._settled.set()
                    return False
                if error.status == 410:
                    raise GoneError(error.message) from error
                raise
            items.extend(page.get("items") or [])
            meta = metadata(page)
            resource_version = str(meta.get("resourceVersion") or resource_version)
            continue_token = meta.get("continue")
            if not continue_token:
                break
        if self.status.absent:
            log.info("%s is served now: caching it", self.resource)
        self.status.absent = False
        self.store.replace(items, resource_version)
        self._resource_version = resource_version
        self.status.synced = True
        self._settled.set()
        self.status.lists += 1
        self.status.resource_version = resource_version
        self.status.heard_at = time.monotonic()
        self._healthy()
        log.debug("listed %d %s at %s", len(items), self.resource, resource_version)
        return True

    async def _watch(self) -> None:
        """Watch from the last version until the API server ends the watch."""
        api = k8s_client.CustomObjectsApi(self.client.api_client)
        resource = self.resource

        async def open_stream(*args: Any, **kwargs: Any) -> Any:
            response = await api.list_cluster_custom_object(*args, **kwargs)
            if getattr(response, "status", None) == 200:
                # Connected: the API server answers again.
                self.status.watches += 1
                self.status.heard_at = time.monotonic()
                self._healthy()
                self.store.touch()
            return response

        watcher = k8s_watch.Watch()
        try:
            stream = watcher.stream(
                open_stream,
                resource.group,
                resource.version,
                resource.plural,
                resource_version=self._resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=self.settings.watch_seconds,
                _request_timeout=(10, self.settings.watch_seconds + 15),
            )
            # The events' objects stay plain JSON (no round trip through a model class).
            watcher.return_type = None  # type: ignore[assignment]
            async for event in stream:
                event_type = str(event.get("type", ""))
                obj = event.get("raw_object") or {}
                version = watcher.resource_version
                self.store.apply(event_type, obj, str(version) if version else None)
                if version:
                    self._resource_version = str(version)
                    self.status.resource_version = str(version)
                self.status.events += 1
                self.status.heard_at = time.monotonic()
        except ApiException as error:
            if error.status == 410:
                raise GoneError(str(error.reason)) from error
            raise
        finally:
            response = watcher.resp
            if response is not None:
                # close, not release: an unfinished watch stream cannot go back into the pool.
                response.close()
                watcher.resp = None
            await watcher.close()
