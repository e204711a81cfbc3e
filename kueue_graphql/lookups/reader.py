"""The interface every read mode offers the resolvers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import ApiCallMeter, JsonObject
from kueue_graphql.kube.paging import Page, PageRequest
from kueue_graphql.kube.reads import PendingRead
from kueue_graphql.kube.resources import Resource


@dataclass(frozen=True)
class OwnerReads:
    """What a query reads next to an owner's Workload (`workloadFor { events job { pods } }`).

    A read mode that finds the Workload without waiting for the owner (the cache, by the owner's
    kind and name) may start these reads at once, beside the owner's own. A hint only: the
    answers are the same with or without it, and nothing is read that the query does not ask
    for."""

    events: bool = False
    """The Workload's Events."""
    job_pods: bool = False
    """The owning Job's Pods."""


NO_OWNER_READS = OwnerReads()


class KueueReader(Protocol):
    """Reads for one request, as one caller.

    Every method answers only what the caller may see: a refused read raises ForbiddenError
    (naming the verb kubectl would need), a missing object NotFoundError. Lists are in
    storage-key order (kube.paging); a `page` argument returns one page of a list.
    """

    meter: ApiCallMeter

    async def identity(self) -> Identity: ...

    async def may(self, access: Access) -> bool: ...

    def decisions(self) -> dict[Access, bool]:
        """Every access decision this request's answers depended on, so far."""
        ...

    def cache_report(self) -> JsonObject | None:
        """How fresh the cached data this request read is (None: nothing came from a cache),
        for the response's `extensions`."""
        ...

    # -- objects and lists, as `kubectl get` would show them ---------------------------------

    async def get(self, resource: Resource, namespace: str | None, name: str) -> JsonObject: ...

    async def find(
        self, resource: Resource, namespace: str | None, name: str
    ) -> JsonObject | None: ...

    async def list_objects(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[JsonObject]: ...

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        """One page of `list_objects` (page None: all of it)."""
        ...

    async def pending_read(
        self, namespace: str, local_queue: str, name: str, *, ahead: bool = False
    ) -> PendingRead:
        """Workload `name`'s entry in Kueue's pending list of its LocalQueue (`own`), as far as
        that entry, with what went wrong when something did. `items` holds at least the
        entries of its own namespace ahead of it when `ahead` is asked for."""
        ...

    async def events_for(self, obj: JsonObject) -> list[JsonObject]: ...

    async def job_pods(self, job: JsonObject) -> list[JsonObject]:
        """The Pods a Job created: those with its `batch.kubernetes.io/controller-uid`."""
        ...

    # -- lookups: what the graph's edges and filtered lists need ----------------------------

    async def workload_for_owner(
        self, namespace: str, kind: str, name: str, next_reads: OwnerReads = NO_OWNER_READS
    ) -> JsonObject:
        """The newest Workload an owner (e.g. a Job) made; NotFoundError when none.
        `next_reads`: what the query reads next (see OwnerReads)."""
        ...

    async def workloads(
        self,
        namespace: str | None = None,
        *,
        local_queue: str | None = None,
        cluster_queue: str | None = None,
        status: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        """Workloads filtered as `workloads(...)` is: `status` is kueuectl's status name."""
        ...

    async def cluster_queue_name_of(self, workload: JsonObject) -> str | None:
        """The ClusterQueue a Workload is (or would be) in, without reading the ClusterQueue."""
        ...

    async def local_queues(
        self,
        namespace: str | None = None,
        *,
        cluster_queue: str | None = None,
        page: PageRequest | None = None,
    ) -> Page: ...

    async def cluster_queues(
        self,
        *,
        cohort: str | None = None,
        flavor: str | None = None,
        page: PageRequest | None = None,
    ) -> Page:
        """ClusterQueues, optionally only the members of a cohort or those offering a flavor."""
        ...

    async def child_cohorts(self, cohort: str) -> list[JsonObject]: ...

    async def cohort_names(self) -> list[str]:
        """Explicit cohorts, their parents, and every cohortName a ClusterQueue uses."""
        ...
