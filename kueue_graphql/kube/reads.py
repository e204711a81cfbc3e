"""Typed, authorized, batched reads for one GraphQL request.

One `RequestReads` lives exactly as long as one request, so its DataLoaders dedupe within the
request and never across callers. Each read first asks whether the caller may (verb, resource,
namespace, name), then reads impersonating the caller: the API server's RBAC is enforced twice,
and the answer to "may I?" is what names the verb and resource in a FORBIDDEN error.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from strawberry.dataloader import DataLoader

from kueue_graphql.core.errors import ForbiddenError, NotFoundError, ServiceError
from kueue_graphql.core.identity import Identity
from kueue_graphql.core.names import check_name, check_namespace
from kueue_graphql.kube.authz import Access, Authorizer
from kueue_graphql.kube.client import (
    ApiCallMeter,
    ApiStatusError,
    JsonObject,
    KubeClient,
    read_error,
)
from kueue_graphql.kube.pending_pages import pending_pages
from kueue_graphql.kube.resources import EVENT, VISIBILITY_LOCAL_QUEUE, Resource
from kueue_graphql.kueue.objects import metadata
from kueue_graphql.kueue.pending_entry import OwnEntry, own_entry
from kueue_graphql.kueue.queue_order import WhyAhead

# Kubernetes paginates big lists; this page size keeps single responses bounded.
_LIST_PAGE = 500
# Above this many objects in one namespace wanting events, one namespace-wide list is cheaper
# than one filtered list per object.
_EVENTS_PER_NAMESPACE_BATCH = 3


@dataclass(frozen=True)
class QueueAhead:
    """What is ahead of a Workload, counted and summed where the whole queue is at hand (the
    `cache` read mode's ordered stores): no entry ahead needs to be read for it."""

    local_requests: tuple[tuple[str, Decimal], ...]
    """Total requests of its LocalQueue's Workloads ahead (its own namespace's), per resource."""
    local: WhyAhead
    cluster: WhyAhead
    """Over the whole ClusterQueue, every namespace (counts only: no name, no request)."""


@dataclass(frozen=True)
class PendingRead:
    """What the visibility API answered for one Workload's entry in its LocalQueue's pending
    list (kube/pending_pages.py: read only as far as that entry)."""

    items: tuple[JsonObject, ...]
    """The entries read, in queue order, up to and including the Workload's own."""
    own: OwnEntry | None = None
    """The Workload's own entry, None when it was not found (see `beyond`)."""
    forbidden: bool = False
    absent: bool = False
    """The visibility API is not served (404)."""
    failure: str | None = None
    """The API answered with an error (e.g. Kueue's visibility server failed, HTTP 500)."""
    beyond: int | None = None
    """Not among the first `beyond` entries (the bound read; the list goes on)."""
    ahead: QueueAhead | None = None
    """Counts and sums of what is ahead, when `ahead` was asked of a read mode that has them
    (then `items` holds only the Workload's own entry)."""


@dataclass(frozen=True)
class ObjectKey:
    resource: Resource
    namespace: str | None
    name: str


@dataclass(frozen=True)
class ListKey:
    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None


class RequestReads:
    def __init__(
        self,
        client: KubeClient,
        authorizer: Authorizer,
        identity: Callable[[], Awaitable[Identity]],
        *,
        impersonate: bool,
        meter: ApiCallMeter,
        from_watch_cache: bool = False,
    ) -> None:
        self.client = client
        self.authorizer = authorizer
        self._identity = identity
        # The identity without a wait once this request has it (LazyIdentity.known), else None.
        self._known_identity: Callable[[], Identity | None] = getattr(
            identity, "known", lambda: None
        )
        self.impersonate = impersonate
        self.meter = meter
        # resourceVersion=0 on gets and first list pages: the API server answers from its own
        # watch cache (as fresh as its watch of etcd, the freshness of the `cache` read mode's
        # informers) instead of a quorum read from etcd. RBAC is enforced the same way; only
        # where the API server reads the object from changes. Resources it does not cache
        # (Events, by default) are still read from etcd.
        self._version_query: tuple[tuple[str, str], ...] = (
            (("resourceVersion", "0"),) if from_watch_cache else ()
        )
        self._access = DataLoader[Access, bool](load_fn=self._load_access)
        # Every access decision this request's reads depended on (a subscription's periodic
        # re-check asks exactly these again).
        self._decisions: dict[Access, bool] = {}
        self._objects = DataLoader[ObjectKey, JsonObject](load_fn=self._load_objects)
        self._lists = DataLoader[ListKey, list[JsonObject]](load_fn=self._load_lists)
        self._pending = DataLoader[tuple[str, str, str], PendingRead](load_fn=self._load_pending)
        self._events = DataLoader[tuple[str | None, str], list[JsonObject]](
            load_fn=self._load_events
        )

    async def identity(self) -> Identity:
        return await self._identity()

    async def _as(self) -> Identity | None:
        identity = await self._identity()
        return identity if self.impersonate else None

    # -- authorization -------------------------------------------------------------------------

    async def _load_access(self, accesses: list[Access]) -> list[bool | BaseException]:
        identity = await self._identity()
        results = await asyncio.gather(
            *(self.authorizer.allowed(identity, access, self.meter) for access in accesses),
            return_exceptions=True,
        )
        for access, result in zip(accesses, results, strict=True):
            if isinstance(result, bool):
                self._decisions[access] = result
        return list(results)

    async def may(self, access: Access) -> bool:
        # A decision this request or the shared cache already holds is answered at once: the
        # loader's batch would answer the same, a loop round and a Task later.
        known = self._decisions.get(access)
        if known is None:
            identity = self._known_identity()
            if identity is not None:
                known = self.authorizer.cached(identity, access)
                if known is not None:
                    self._decisions[access] = known
        if known is not None:
            return known
        return await self._access.load(access)

    def decisions(self) -> dict[Access, bool]:
        """Every access decision this request's reads depended on, so far."""
        return dict(self._decisions)

    async def require(self, access: Access) -> None:
        if not await self.may(access):
            raise ForbiddenError(
                access.verb,
                access.resource.group,
                access.resource.plural,
                access.namespace,
                access.name,
                namespaced=access.resource.namespaced,
            )

    # -- single objects ------------------------------------------------------------------------

    async def get(self, resource: Resource, namespace: str | None, name: str) -> JsonObject:
        """The object, or NotFoundError / ForbiddenError (BadRequestError for a name or
        namespace no object can have, before any API call)."""
        namespace = namespace if resource.namespaced else None
        if namespace is not None:
            check_namespace(namespace)
        check_name(name)
        await self.require(Access("get", resource, namespace, name))
        return await self._objects.load(ObjectKey(resource, namespace, name))

    async def find(self, resource: Resource, namespace: str | None, name: str) -> JsonObject | None:
        """Like get, but None when the object does not exist."""
        try:
            return await self.get(resource, namespace, name)
        except NotFoundError:
            return None

    async def _load_objects(self, keys: list[ObjectKey]) -> list[JsonObject | BaseException]:
        results = await asyncio.gather(*(self._fetch(key) for key in keys), return_exceptions=True)
        return list(results)

    async def _fetch(self, key: ObjectKey) -> JsonObject:
        try:
            return await self.client.request_json(
                "GET",
                key.resource.path(key.namespace, key.name),
                meter=self.meter,
                query=self._version_query,
                as_identity=await self._as(),
            )
        except ApiStatusError as error:
            raise read_error(error, "get", key.resource, key.namespace, key.name) from error

    # -- lists ---------------------------------------------------------------------------------

    async def list_objects(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[JsonObject]:
        """All matching objects (namespace None: every namespace, or cluster-scoped)."""
        namespace = namespace if resource.namespaced else None
        if namespace is not None:
            check_namespace(namespace)
        await self.require(Access("list", resource, namespace))
        return await self._lists.load(ListKey(resource, namespace, label_selector, field_selector))

    def start_list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> None:
        """Send a list read now, without a loader round: a later `list_objects` of the same list
        (which still checks the caller's access first) awaits this read instead of sending its
        own. For a read the query will make once an earlier field resolves; the caller of this
        has already decided the access (`may`), so a refused read is never sent. Its outcome,
        an error too, is what that `list_objects` gets; unawaited, it is dropped with the
        request."""
        namespace = namespace if resource.namespaced else None
        key = ListKey(resource, namespace, label_selector, field_selector)
        if self._lists.cache_map.get(key) is not None:
            return
        started = asyncio.ensure_future(self._list(key))
        started.add_done_callback(_retrieved)
        self._lists.cache_map.set(key, started)

    async def _load_lists(self, keys: list[ListKey]) -> list[list[JsonObject] | BaseException]:
        results = await asyncio.gather(*(self._list(key) for key in keys), return_exceptions=True)
        return list(results)

    async def _list(self, key: ListKey) -> list[JsonObject]:
        items: list[JsonObject] = []
        async for chunk in self._chunks(key, _LIST_PAGE):
            items.extend(chunk)
        return items

    async def list_chunks(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        first_chunk: int = _LIST_PAGE,
    ) -> AsyncGenerator[list[JsonObject]]:
        """The list in the API server's order, one API page at a time, for a caller that may
        stop reading early. Pages start at `first_chunk` objects and double up to the usual
        page size, so a small page of a big list reads little."""
        namespace = namespace if resource.namespaced else None
        if namespace is not None:
            check_namespace(namespace)
        await self.require(Access("list", resource, namespace))
        key = ListKey(resource, namespace, label_selector, field_selector)
        async for chunk in self._chunks(key, max(1, min(first_chunk, _LIST_PAGE))):
            yield chunk

    async def _chunks(self, key: ListKey, limit: int) -> AsyncIterator[list[JsonObject]]:
        continue_token: str | None = None
        while True:
            query: list[tuple[str, str]] = [("limit", str(limit))]
            if key.label_selector:
                query.append(("labelSelector", key.label_selector))
            if key.field_selector:
                query.append(("fieldSelector", key.field_selector))
            if continue_token:
                query.append(("continue", continue_token))
            else:
                # A continue token carries its own resourceVersion; the API server refuses both.
                query.extend(self._version_query)
            try:
                page = await self.client.request_json(
                    "GET",
                    key.resource.path(key.namespace),
                    meter=self.meter,
                    query=query,
                    as_identity=await self._as(),
                )
            except ApiStatusError as error:
                raise read_error(error, "list", key.resource, key.namespace) from error
            items: list[JsonObject] = page.get("items") or []
            for item in items:
                # List items come without apiVersion/kind; put them back so `raw` matches
                # what `kubectl get -o json` shows for the single object.
                item.setdefault("apiVersion", key.resource.api_version)
                item.setdefault("kind", key.resource.kind)
                # Later gets of a listed object reuse it instead of fetching it again (the
                # get permission is still checked on its own).
                meta = metadata(item)
                object_key = ObjectKey(key.resource, meta.get("namespace"), meta.get("name", ""))
                self._objects.prime(object_key, item)
            yield items
            continue_token = metadata(page).get("continue")
            if not continue_token:
                return
            limit = min(_LIST_PAGE, limit * 2)

    # -- queue order (visibility API) ----------------------------------------------------------

    async def pending_read(
        self, namespace: str, local_queue: str, name: str, *, ahead: bool = False
    ) -> PendingRead:
        """Workload `name`'s entry in Kueue's pending list of its LocalQueue, with the entries
        ahead of it (`ahead` is for the cache reader: these reads always have them)."""
        return await self._pending.load((namespace, local_queue, name))

    async def _load_pending(
        self, keys: list[tuple[str, str, str]]
    ) -> list[PendingRead | BaseException]:
        results = await asyncio.gather(*(self._fetch_pending(*key) for key in keys))
        return list(results)

    async def _fetch_pending(self, namespace: str, local_queue: str, name: str) -> PendingRead:
        """Pages (limit/offset, kube/pending_pages.py) until the entry of `name`, the end of
        the list or the bound."""
        access = Access("get", VISIBILITY_LOCAL_QUEUE, namespace, local_queue, "pendingworkloads")
        items: list[JsonObject] = []
        try:
            check_namespace(namespace)
            check_name(local_queue)
            if not await self.may(access):
                return PendingRead((), forbidden=True)
            for offset, limit in pending_pages():
                summary = await self.client.request_json(
                    "GET",
                    VISIBILITY_LOCAL_QUEUE.path(namespace, local_queue) + "/pendingworkloads",
                    meter=self.meter,
                    query=(("limit", str(limit)), ("offset", str(offset))),
                    as_identity=await self._as(),
                )
                batch = list(summary.get("items") or [])
                items.extend(batch)
                # The whole list is looked through (for the entries ahead) once the entry is in.
                found = None
                if own_entry(batch, namespace, name) is not None:
                    found = own_entry(items, namespace, name)
                if found is not None:
                    at = next(i for i, item in enumerate(items) if item is found.item)
                    return PendingRead(tuple(items[: at + 1]), own=found)
                if len(batch) < limit:
                    return PendingRead(tuple(items))
            return PendingRead(tuple(items), beyond=len(items))
        except ApiStatusError as error:
            if error.status == 403:
                return PendingRead((), forbidden=True)
            if error.status == 404:
                return PendingRead((), failure=None, absent=True)
            text = " ".join(str(error).split())
            return PendingRead(tuple(items), failure=f"HTTP {error.status}: {text}")
        except ServiceError as error:
            return PendingRead(tuple(items), failure=" ".join(str(error).split()))

    # -- events --------------------------------------------------------------------------------

    async def events_for(self, obj: JsonObject) -> list[JsonObject]:
        """core/v1 Events whose involvedObject is `obj`, oldest first."""
        meta = metadata(obj)
        uid = meta.get("uid")
        if not uid:
            return []
        return await self._events.load((meta.get("namespace"), uid))

    async def _load_events(
        self, keys: list[tuple[str | None, str]]
    ) -> list[list[JsonObject] | BaseException]:
        by_namespace: dict[str | None, list[str]] = defaultdict(list)
        for namespace, uid in keys:
            by_namespace[namespace].append(uid)

        async def for_namespace(namespace: str | None, uids: Sequence[str]) -> dict[str, object]:
            if len(uids) > _EVENTS_PER_NAMESPACE_BATCH and namespace is not None:
                try:
                    events = await self.list_objects(EVENT, namespace)
                except Exception as error:
                    return dict.fromkeys(uids, error)
                grouped: dict[str, object] = {uid: [] for uid in uids}
                for event in events:
                    uid = (event.get("involvedObject") or {}).get("uid")
                    bucket = grouped.get(uid) if uid else None
                    if isinstance(bucket, list):
                        bucket.append(event)
                return grouped
            lists = await asyncio.gather(
                *(
                    # Events about cluster-scoped objects land in some namespace
                    # (usually "default"), so those are looked up across namespaces.
                    self.list_objects(EVENT, namespace, field_selector=events_selector(uid))
                    for uid in uids
                ),
                return_exceptions=True,
            )
            return dict(zip(uids, lists, strict=True))

        answers: dict[tuple[str | None, str], object] = {}
        for namespace, answer in zip(
            by_namespace,
            await asyncio.gather(*(for_namespace(ns, uids) for ns, uids in by_namespace.items())),
            strict=True,
        ):
            for uid, value in answer.items():
                answers[(namespace, uid)] = value
        results: list[list[JsonObject] | BaseException] = []
        for key in keys:
            value = answers[key]
            if isinstance(value, BaseException):
                results.append(value)
            else:
                assert isinstance(value, list)
                results.append(sorted(value, key=_event_time))
        return results


def _retrieved(future: asyncio.Future[Any]) -> None:
    """A started read's error is retrieved here too, so one no field awaited is not reported
    as "never retrieved" (the field that awaits it gets the same error)."""
    if not future.cancelled():
        future.exception()


def events_selector(uid: str) -> str:
    """The field selector of the Events about the object with this uid."""
    return f"involvedObject.uid={uid}"


def _event_time(event: JsonObject) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or metadata(event).get("creationTimestamp")
        or ""
    )
