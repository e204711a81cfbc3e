"""Lookups answered by reading from the API server for every request, as the caller.

This is the `impersonate` read mode (and the CLI's): the service holds no object data, and the
API server enforces RBAC on every read. Filters Kueue cannot select on server-side (status,
queue) are applied to the listed objects here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import aclosing

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.paging import Page, PageCollector, PageRequest, page_of
from kueue_graphql.kube.reads import RequestReads
from kueue_graphql.kube.resources import (
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    OWNER_KINDS,
    POD,
    WORKLOAD,
    Resource,
    canonical_kind,
)
from kueue_graphql.kueue.objects import JOB_UID_LABEL, metadata, spec
from kueue_graphql.lookups.reader import NO_OWNER_READS, OwnerReads
from kueue_graphql.lookups.selection import (
    CONTROLLER_UID_LABEL,
    admitted_cluster_queue,
    cluster_queue_name_of,
    flavor_names,
    owners_workload,
    pod_group_workload,
    read_owner,
    workload_matches,
)

Select = Callable[[list[JsonObject]], Awaitable[list[JsonObject]]]


async def _keep_all(items: list[JsonObject]) -> list[JsonObject]:
    return items


class ApiServerReader(RequestReads):
    """`KueueReader` over per-request, impersonated API reads (see RequestReads)."""

    def cache_report(self) -> JsonObject | None:
        return None  # every answer is read from the API server for this request

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        return await self._page(
            resource,
            namespace,
            page,
            _keep_all,
            label_selector=label_selector,
            field_selector=field_selector,
        )

    async def _page(
        self,
        resource: Resource,
        namespace: str | None,
        page: PageRequest | None,
        select: Select,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Page:
        """A page of the list, filtered by `select` chunk by chunk. Without `totalCount`, the
        list is read only until the page is full."""
        if page is None or page.count_all:
            # Everything is needed: one whole list, shared with other fields of the request.
            items = await self.list_objects(
                resource, namespace, label_selector=label_selector, field_selector=field_selector
            )
            return page_of(await select(items), page)
        collector = PageCollector(page)
        chunks = self.list_chunks(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            # Twice the page: a filter that keeps half the objects fills it in one call.
            first_chunk=2 * (page.first + 1),
        )
        async with aclosing(chunks):
            async for chunk in chunks:
                collector.observe(chunk)
                if collector.add(await select(chunk)):
                    return collector.page(complete=False)
        return collector.page(complete=True)

    async def job_pods(self, job: JsonObject) -> list[JsonObject]:
        meta = metadata(job)
        selector = f"{CONTROLLER_UID_LABEL}={meta.get('uid')}"
        return await self.list_objects(POD, meta.get("namespace"), label_selector=selector)

    async def workload_for_owner(
        self, namespace: str, kind: str, name: str, next_reads: OwnerReads = NO_OWNER_READS
    ) -> JsonObject:
        # The Workload is found by the owner's uid: nothing can start before the owner's read.
        kind = canonical_kind(kind)
        owner = await read_owner(self, OWNER_KINDS.get(kind), namespace, name)
        if kind == "Pod" and (grouped := await pod_group_workload(self, owner, namespace, name)):
            return grouped
        uid = str(metadata(owner).get("uid") or "") or None if owner is not None else None
        selector = f"{JOB_UID_LABEL}={uid}" if uid else None
        candidates = await self.list_objects(WORKLOAD, namespace, label_selector=selector)
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
        async def select(items: list[JsonObject]) -> list[JsonObject]:
            kept = [w for w in items if workload_matches(w, status, local_queue)]
            if cluster_queue is None:
                return kept
            return await self._in_cluster_queue(cluster_queue, kept)

        return await self._page(WORKLOAD, namespace, page, select)

    async def _in_cluster_queue(
        self, cluster_queue: str, workloads: list[JsonObject]
    ) -> list[JsonObject]:
        """Workloads admitted to `cluster_queue`, or pending in one of its LocalQueues.

        Pending Workloads carry no ClusterQueue name, so each one's LocalQueue is looked up (one
        read per distinct LocalQueue, batched by the request's loader).
        """
        queue_keys = sorted(
            {
                (str(metadata(w).get("namespace")), str(spec(w).get("queueName")))
                for w in workloads
                if not admitted_cluster_queue(w) and spec(w).get("queueName")
            }
        )
        found = await asyncio.gather(
            *(self.find(LOCAL_QUEUE, ns, name) for ns, name in queue_keys), return_exceptions=True
        )
        queue_target = {
            key: spec(lq).get("clusterQueue") if isinstance(lq, dict) else None
            for key, lq in zip(queue_keys, found, strict=True)
        }
        result = []
        for workload in workloads:
            admitted_in = admitted_cluster_queue(workload)
            key = (str(metadata(workload).get("namespace")), str(spec(workload).get("queueName")))
            if admitted_in == cluster_queue or (
                not admitted_in and queue_target.get(key) == cluster_queue
            ):
                result.append(workload)
        return result

    async def cluster_queue_name_of(self, workload: JsonObject) -> str | None:
        return await cluster_queue_name_of(self, workload)

    async def local_queues(
        self,
        namespace: str | None = None,
        *,
        cluster_queue: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        async def select(items: list[JsonObject]) -> list[JsonObject]:
            return [
                q
                for q in items
                if cluster_queue is None or spec(q).get("clusterQueue") == cluster_queue
            ]

        return await self._page(LOCAL_QUEUE, namespace, page, select)

    async def cluster_queues(
        self,
        *,
        cohort: str | None = None,
        flavor: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        async def select(items: list[JsonObject]) -> list[JsonObject]:
            return [
                q
                for q in items
                if (cohort is None or spec(q).get("cohortName") == cohort)
                and (flavor is None or flavor in flavor_names(q))
            ]

        return await self._page(CLUSTER_QUEUE, None, page, select)

    async def child_cohorts(self, cohort: str) -> list[JsonObject]:
        return [c for c in await self.list_objects(COHORT) if spec(c).get("parentName") == cohort]

    async def cohort_names(self) -> list[str]:
        names = set()
        for cohort in await self.list_objects(COHORT):
            names.add(str(metadata(cohort).get("name")))
            if spec(cohort).get("parentName"):
                names.add(str(spec(cohort)["parentName"]))
        for queue in await self.list_objects(CLUSTER_QUEUE):
            if spec(queue).get("cohortName"):
                names.add(str(spec(queue)["cohortName"]))
        return sorted(names)
