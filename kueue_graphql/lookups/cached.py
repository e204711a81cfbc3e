"""The `cache` read mode: Kueue objects from shared, watch-fed stores, authorized per caller.

The cache is process-wide (kube/informer_factory.py, built by lookups/cache_indexes.py): one
reflector per Kueue kind, reading under the SERVICE's own identity, each feeding an indexed
store. `CacheReader` is per request and implements `KueueReader`:

- Every answer from a store is first authorized for the caller with a SubjectAccessReview of the
  verb the equivalent kubectl call needs: `get` (namespace, name) for one object, `list` in the
  namespace for a list, the cluster-wide `list` for a list across namespaces (`kubectl get -A`).
  Decisions come from the same per-identity cache as in `impersonate` mode (kube/authz.py).
  A user whose RBAC names only some objects (`resourceNames`) may get those, and no list: as
  with kubectl.
- Jobs, Pods, Events, Nodes, Namespaces, Deployments and Kueue's visibility API are read per
  request as the caller (the `impersonate` reader, `direct`), as is a Kueue kind whose CRD the API
  server does not serve.
- Before a kind's first complete list the cache answers UNAVAILABLE; after it, always from the
  last complete state (a re-list is swapped in whole).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kueue_graphql.core.errors import NotFoundError, ServiceError
from kueue_graphql.core.identity import Identity
from kueue_graphql.core.names import check_name, check_namespace
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import ApiCallMeter, JsonObject
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.kube.paging import Page, PageRequest
from kueue_graphql.kube.reads import PendingRead, events_selector
from kueue_graphql.kube.resources import (
    CLUSTER_QUEUE,
    COHORT,
    EVENT,
    JOB,
    LOCAL_QUEUE,
    OWNER_KINDS,
    POD,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
    Resource,
    canonical_kind,
)
from kueue_graphql.kube.store import ALL, ANY, Indexer, PostingKey, namespace_key
from kueue_graphql.kueue.objects import JOB_UID_LABEL, labels, metadata
from kueue_graphql.kueue.queue_order import queue_order
from kueue_graphql.lookups.apiserver import ApiServerReader
from kueue_graphql.lookups.disclosure import ServiceQuotaReads
from kueue_graphql.lookups.queue_positions import cached_pending_read, first_in_cluster_queue
from kueue_graphql.lookups.reader import NO_OWNER_READS, OwnerReads
from kueue_graphql.lookups.selection import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    MAX_LABEL_VALUE,
    cluster_queue_name_of,
    field_selector,
    label_selector,
    newest,
    owned_by,
    owners_workload,
    pod_group_workload,
    read_owner,
)


class CacheReader:
    """`KueueReader` over the cache for Kueue kinds, over `direct` (impersonated reads) for
    everything else. See the module docstring for what is authorized how."""

    def __init__(self, direct: ApiServerReader, cache: SharedInformerFactory) -> None:
        self.direct = direct
        self.cache = cache
        self.meter: ApiCallMeter = direct.meter
        self._used: dict[Resource, Indexer] = {}

    # -- identity and access (shared with the impersonated reads: one decision cache) ----------

    async def identity(self) -> Identity:
        return await self.direct.identity()

    async def may(self, access: Access) -> bool:
        return await self.direct.may(access)

    def decisions(self) -> dict[Access, bool]:
        return self.direct.decisions()

    async def _require(self, verb: str, resource: Resource, namespace: str | None) -> None:
        await self.direct.require(Access(verb, resource, namespace))

    def _store(self, resource: Resource) -> Indexer | None:
        store = self.cache.store_for(resource)
        if store is not None:
            self._used[resource] = store
        return store

    def cache_report(self) -> JsonObject | None:
        """For the response's `extensions`: how fresh the cached kinds this request read are."""
        if not self._used:
            return None
        now = time.monotonic()
        kinds: dict[str, JsonObject] = {}
        for resource, store in sorted(self._used.items(), key=lambda item: item[0].kind):
            age = store.age_seconds(now)
            kinds[resource.kind] = {
                "resourceVersion": store.resource_version,
                "ageSeconds": round(age, 3) if age is not None else None,
            }
        stalest = max(kinds.values(), key=lambda k: k["ageSeconds"] or 0.0)
        return {
            "resourceVersion": stalest["resourceVersion"],
            "ageSeconds": stalest["ageSeconds"],
            "kinds": kinds,
        }

    # -- objects and lists ---------------------------------------------------------------------

    async def get(self, resource: Resource, namespace: str | None, name: str) -> JsonObject:
        store = self._store(resource)
        if store is None:
            return await self.direct.get(resource, namespace, name)
        namespace = namespace if resource.namespaced else None
        if namespace is not None:
            check_namespace(namespace)
        check_name(name)
        await self.direct.require(Access("get", resource, namespace, name))
        found = store.get(namespace, name)
        if found is None:
            raise NotFoundError(resource.kind, name, namespace)
        return found

    async def find(self, resource: Resource, namespace: str | None, name: str) -> JsonObject | None:
        try:
            return await self.get(resource, namespace, name)
        except NotFoundError:
            return None

    def _selection(
        self, label: str | None, field: str | None
    ) -> tuple[bool, Callable[[JsonObject], bool] | None]:
        """(understood, predicate or None for "everything")."""
        if not label and not field:
            return True, None
        by_label = label_selector(label) if label else (lambda obj: True)
        by_field = field_selector(field) if field else (lambda obj: True)
        if by_label is None or by_field is None:
            return False, None
        return True, lambda obj: by_label(obj) and by_field(obj)

    async def list_objects(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[JsonObject]:
        page = await self.list_page(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )
        return page.items

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        store = self._store(resource)
        understood, keep = self._selection(label_selector, field_selector)
        if store is None or not understood:
            return await self.direct.list_page(
                resource,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                page=page,
            )
        namespace = namespace if resource.namespaced else None
        if namespace is not None:
            check_namespace(namespace)
        await self._require("list", resource, namespace)
        return store.page([namespace_key(namespace) if namespace else ALL], page, keep)

    # -- per request, as the caller ------------------------------------------------------------

    async def pending_read(
        self, namespace: str, local_queue: str, name: str, *, ahead: bool = False
    ) -> PendingRead:
        """From the stores' Kueue order (lookups/queue_positions.py), under the access the
        visibility API needs: O(log n), however long the queue, and no API call."""
        workloads, queues = self._store(WORKLOAD), self._store(LOCAL_QUEUE)
        if workloads is None or queues is None:
            return await self.direct.pending_read(namespace, local_queue, name, ahead=ahead)
        check_namespace(namespace)
        check_name(local_queue)
        check_name(name)
        access = Access("get", VISIBILITY_LOCAL_QUEUE, namespace, local_queue, "pendingworkloads")
        if not await self.direct.may(access):
            return PendingRead((), forbidden=True)
        return cached_pending_read(workloads, queues, namespace, local_queue, name, ahead=ahead)

    async def events_for(self, obj: JsonObject) -> list[JsonObject]:
        return await self.direct.events_for(obj)

    async def job_pods(self, job: JsonObject) -> list[JsonObject]:
        # Listed by the Job's name, which is known before the Job is read (so the list can
        # start beside the Job's read, _start_owner_reads), then kept by the Job's uid: a Pod
        # of an older Job of the same name is not this Job's. The Job controller puts both
        # labels on every Pod it creates.
        meta = metadata(job)
        name, uid = str(meta.get("name") or ""), meta.get("uid")
        if not uid or len(name) > MAX_LABEL_VALUE:
            return await self.direct.job_pods(job)
        pods = await self._job_name_pods(meta.get("namespace"), name)
        return [p for p in pods if labels(p).get(CONTROLLER_UID_LABEL) == uid]

    async def _job_name_pods(self, namespace: str | None, name: str) -> list[JsonObject]:
        selector = f"{JOB_NAME_LABEL}={name}"
        return await self.direct.list_objects(POD, namespace, label_selector=selector)

    async def _start_owner_reads(
        self, store: Indexer, namespace: str, kind: str, name: str, next_reads: OwnerReads
    ) -> None:
        """Start the impersonated reads the query makes after the Workload (its Events, the
        Job's Pods) now, beside the owner's read, instead of after it: the cache finds the
        Workload by the owner's kind and name without the owner's uid.

        Started only when they will be read: the owner's Workload exists in the cache (else the
        answer is NOT_FOUND), the caller may list Workloads here (else FORBIDDEN), and for the
        Pods the caller may get the Job (else `job` answers FORBIDDEN before any Pod is
        listed). The Events are those of the Workload found by name, which is the answer unless
        an older owner of the same name left a newer Workload behind; then they are read again
        for the right one. The same loaders serve the later reads, so nothing is read twice."""
        try:
            check_namespace(namespace)
            check_name(name)
        except ServiceError:
            return  # refused below, as without this
        candidates = [
            w
            for w in store.items(("owner-name", namespace, kind.lower(), name))
            if owned_by(w, None, kind, name)
        ]
        if not candidates:
            return
        owner = OWNER_KINDS[kind]
        pods = next_reads.job_pods and owner is JOB and len(name) <= MAX_LABEL_VALUE
        # One round of access decisions (held ones answer at once), then both reads are sent
        # before the query goes on: the Events first, the slower read (the API server filters
        # the namespace's Events by field).
        allowed = await asyncio.gather(
            self.may(Access("list", WORKLOAD, namespace)),
            self.may(Access("get", owner, namespace, name)),
            self.may(Access("list", EVENT, namespace)),
            self.may(Access("list", POD, namespace)),
            return_exceptions=True,
        )
        may_list_workloads, may_get_owner, may_list_events, may_list_pods = (
            a is True for a in allowed
        )
        if not may_list_workloads:
            return
        uid = metadata(newest(candidates)).get("uid")
        if next_reads.events and may_list_events and uid:
            self.direct.start_list(EVENT, namespace, field_selector=events_selector(str(uid)))
        if pods and may_get_owner and may_list_pods:
            self.direct.start_list(POD, namespace, label_selector=f"{JOB_NAME_LABEL}={name}")

    # -- lookups from the indexes --------------------------------------------------------------

    async def workload_for_owner(
        self, namespace: str, kind: str, name: str, next_reads: OwnerReads = NO_OWNER_READS
    ) -> JsonObject:
        store = self._store(WORKLOAD)
        if store is None:
            return await self.direct.workload_for_owner(namespace, kind, name)
        kind = canonical_kind(kind)
        owner_resource = OWNER_KINDS.get(kind)
        if owner_resource is not None and next_reads != NO_OWNER_READS:
            await self._start_owner_reads(store, namespace, kind, name, next_reads)
        owner = await read_owner(self, owner_resource, namespace, name)
        if kind == "Pod" and (grouped := await pod_group_workload(self, owner, namespace, name)):
            return grouped
        uid = str(metadata(owner).get("uid") or "") or None if owner is not None else None
        check_namespace(namespace)
        await self._require("list", WORKLOAD, namespace)
        if uid:
            candidates = [
                w
                for w in store.items(("owner-uid", uid))
                if metadata(w).get("namespace") == namespace and labels(w).get(JOB_UID_LABEL) == uid
            ]
        else:
            candidates = store.items(("owner-name", namespace, kind.lower(), name))
        return owners_workload(candidates, uid, kind, name, namespace)

    async def workloads(
        self,
        namespace: str | None = None,
        *,
        local_queue: str | None = None,
        cluster_queue: str | None = None,
        status: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        store = self._store(WORKLOAD)
        queues = self._store(LOCAL_QUEUE) if cluster_queue is not None else None
        if store is None or (cluster_queue is not None and queues is None):
            return await self.direct.workloads(
                namespace,
                local_queue=local_queue,
                cluster_queue=cluster_queue,
                status=status,
                page=page,
            )
        if namespace is not None:
            check_namespace(namespace)
        await self._require("list", WORKLOAD, namespace)
        where = namespace or ANY
        if cluster_queue is None or queues is None:
            return store.page([("wl", where, local_queue, ANY, status)], page)
        # Admitted to the ClusterQueue, or pending in one of its LocalQueues that the caller may
        # read (the impersonated reads look each one up as the caller: same answer).
        keys: list[PostingKey] = [("wl", where, local_queue, cluster_queue, status)]
        pending = [
            (str(metadata(q).get("namespace")), str(metadata(q).get("name")))
            for q in queues.items(("lq", where, cluster_queue))
            if local_queue is None or metadata(q).get("name") == local_queue
        ]
        pending = [(ns, lq) for ns, lq in pending if store.count(("wl", ns, lq, "", status))]
        allowed = await asyncio.gather(
            *(self.may(Access("get", LOCAL_QUEUE, ns, lq)) for ns, lq in pending),
            return_exceptions=True,
        )
        keys += [
            ("wl", ns, lq, "", status)
            for (ns, lq), ok in zip(pending, allowed, strict=True)
            if ok is True
        ]
        return store.page(keys, page)

    async def cluster_queue_name_of(self, workload: JsonObject) -> str | None:
        return await cluster_queue_name_of(self, workload)

    async def local_queues(
        self,
        namespace: str | None = None,
        *,
        cluster_queue: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        store = self._store(LOCAL_QUEUE)
        if store is None:
            return await self.direct.local_queues(namespace, cluster_queue=cluster_queue, page=page)
        if namespace is not None:
            check_namespace(namespace)
        await self._require("list", LOCAL_QUEUE, namespace)
        return store.page([("lq", namespace or ANY, cluster_queue)], page)

    async def cluster_queues(
        self,
        *,
        cohort: str | None = None,
        flavor: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        store = self._store(CLUSTER_QUEUE)
        if store is None:
            return await self.direct.cluster_queues(cohort=cohort, flavor=flavor, page=page)
        await self._require("list", CLUSTER_QUEUE, None)
        return store.page([("cq", cohort, flavor)], page)

    async def child_cohorts(self, cohort: str) -> list[JsonObject]:
        store = self._store(COHORT)
        if store is None:
            return await self.direct.child_cohorts(cohort)
        await self._require("list", COHORT, None)
        return store.items(("cohort-parent", cohort))

    async def cohort_names(self) -> list[str]:
        cohorts, queues = self._store(COHORT), self._store(CLUSTER_QUEUE)
        if cohorts is None or queues is None:
            return await self.direct.cohort_names()
        await self._require("list", COHORT, None)
        await self._require("list", CLUSTER_QUEUE, None)
        names = {str(metadata(c).get("name")) for c in cohorts.items(ALL)}
        names |= {str(key[1]) for key in cohorts.keys_with("cohort-parent") if key[1]}
        names |= {str(key[1]) for key in queues.keys_with("cq") if key[1] and key[2] is ANY}
        return sorted(names)


class CachedQuotaReads:
    """The disclosure policy's QuotaSource in the `cache` read mode: ClusterQueues, Cohorts,
    ResourceFlavors and WorkloadPriorityClasses from the cache's watch-fed stores (read under
    the service's identity already, so no further API call), and a ClusterQueue's pending list
    from the Workload and LocalQueue stores in Kueue's queue order; what the cache does not
    hold (PriorityClasses, which are not a Kueue kind; a kind whose store is not served)
    through `fallback`, the per-request service reads."""

    def __init__(self, cache: SharedInformerFactory, fallback: ServiceQuotaReads) -> None:
        self._cache = cache
        self._fallback = fallback

    def _store(self, resource: Resource) -> Indexer | None:
        if resource not in self._fallback.KINDS:
            raise ValueError(f"the disclosure policy does not read {resource}")
        return self._cache.store_for(resource)

    async def cluster_queue(self, name: str) -> JsonObject:
        check_name(name)
        store = self._store(CLUSTER_QUEUE)
        if store is None:
            return await self._fallback.cluster_queue(name)
        obj = store.get(None, name)
        if obj is None:
            raise NotFoundError(CLUSTER_QUEUE.kind, name)
        return obj

    async def list_objects(self, resource: Resource) -> list[JsonObject]:
        store = self._store(resource)
        if store is None:
            return await self._fallback.list_objects(resource)
        return store.items(ALL)

    async def cluster_queue_pending(self, name: str, limit: int) -> list[JsonObject]:
        """The first `limit` of the ClusterQueue's pending Workloads (active, in one of its
        LocalQueues, no quota reserved) in Kueue's queue order, shaped as the visibility API's
        entries: priority, creationTimestamp, positionInClusterQueue (no name is passed on).
        O(limit log k) for k LocalQueues (the stores keep each LocalQueue's queue ordered)."""
        check_name(name)
        workloads, queues = self._cache.store_for(WORKLOAD), self._cache.store_for(LOCAL_QUEUE)
        if workloads is None or queues is None:
            return await self._fallback.cluster_queue_pending(name, limit)
        first = first_in_cluster_queue(workloads, queues, name, max(1, limit))
        return [
            {
                "metadata": {"creationTimestamp": metadata(w).get("creationTimestamp")},
                "priority": queue_order(w)[0] * -1,
                "positionInClusterQueue": position,
            }
            for position, w in enumerate(first)
        ]
