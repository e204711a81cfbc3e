"""`aheadOfMe`'s input: what may be read about the Workloads ahead of a pending one.

As the caller: her LocalQueue's pending list (visibility API, `localqueues/pendingworkloads`),
which gives her own position in the LocalQueue and the ClusterQueue, and the Workloads of her
own namespace ahead of her (their requests summed). Under the quota disclosure policy, as the
service: the ClusterQueue's pending list (`clusterqueues/pendingworkloads`; priorities and
creation times of the entries ahead, counted, never named) and the quota admitted Workloads
hold (`status.flavorsReservation`). The total requests of other namespaces' Workloads ahead need
their Workload objects, which in `impersonate` mode only a caller who may read them could
supply: that part needs the `cache` read mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import ForbiddenError, NotFoundError, UnavailableError
from kueue_graphql.diagnosis.ahead import AheadEntry, AheadInput
from kueue_graphql.diagnosis.position import own_entry
from kueue_graphql.diagnosis.quantity import QuantityError, parse_quantity
from kueue_graphql.diagnosis.requests import total_needs, workload_requests
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import VISIBILITY_LOCAL_QUEUE
from kueue_graphql.lookups.disclosure import DisclosurePolicy, QuotaDisclosure, quota_view
from kueue_graphql.lookups.reader import KueueReader

__all__ = ["load_ahead"]

NEEDS_CACHE = (
    "the total requests of Workloads ahead from other namespaces: their Workload objects are "
    "other tenants'; the service reads them only in the `cache` read mode"
)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _entry(item: Mapping[str, Any]) -> AheadEntry:
    priority = item.get("priority")
    created = _meta(item).get("creationTimestamp")
    return AheadEntry(
        priority=priority if isinstance(priority, int) else 0,
        created=str(created) if created else None,
    )


def _sum(workloads: Sequence[JsonObject]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for wl in workloads:
        for res, value in total_needs(workload_requests(wl)).items():
            out[res] = out.get(res, Fraction(0)) + value
    return out


def _held(cluster_queue: JsonObject) -> dict[tuple[str, str], Fraction]:
    out: dict[tuple[str, str], Fraction] = {}
    for flavor in (cluster_queue.get("status") or {}).get("flavorsReservation") or []:
        for res in flavor.get("resources") or []:
            try:
                out[(str(flavor.get("name")), str(res.get("name")))] = parse_quantity(
                    str(res.get("total", "0"))
                )
            except QuantityError:
                continue
    return out


async def load_ahead(
    reader: KueueReader,
    policy: DisclosurePolicy,
    namespace: str,
    workload: JsonObject,
    local_queue: str,
    cluster_queue: str | None,
) -> AheadInput | None:
    """None when the Workload is not in its LocalQueue's pending list (not pending)."""
    unavailable: list[str] = []
    name = str(_meta(workload).get("name") or "")
    me_priority = (workload.get("spec") or {}).get("priority")
    priority = me_priority if isinstance(me_priority, int) else 0
    created = _meta(workload).get("creationTimestamp")
    access = Access("get", VISIBILITY_LOCAL_QUEUE, namespace, local_queue, "pendingworkloads")
    if not await reader.may(access):
        raise ForbiddenError(
            "get", VISIBILITY_LOCAL_QUEUE.group, "localqueues/pendingworkloads", namespace,
            local_queue,
        )  # fmt: skip
    read = await reader.pending_read(namespace, local_queue)
    if read.forbidden:
        raise ForbiddenError(
            "get", VISIBILITY_LOCAL_QUEUE.group, "localqueues/pendingworkloads", namespace,
            local_queue,
        )  # fmt: skip
    if read.absent or read.failure is not None:
        raise UnavailableError(read.failure or "Kueue's visibility API is not served")
    found = own_entry(read.items, namespace, name)
    if found is None:
        return None
    own_ahead = [
        item
        for item in read.items[: read.items.index(found.item)]
        if _meta(item).get("namespace") in (None, namespace)
    ]
    position = found.item.get("positionInClusterQueue")
    in_cq = position if isinstance(position, int) else None
    # Her own namespace's Workloads ahead: read as her, summed.
    local_requests: dict[str, Fraction] | None
    try:
        page = await reader.workloads(namespace, local_queue=local_queue)
        by_name = {str(_meta(w).get("name")): w for w in page.items}
        local_requests = _sum(
            [by_name[n] for n in (str(_meta(i).get("name")) for i in own_ahead) if n in by_name]
        )
    except ForbiddenError:
        local_requests = None
        unavailable.append(
            "the requests of Workloads ahead in your LocalQueue: you may not list them"
        )
    cluster_entries: list[AheadEntry] | None = None
    held: dict[tuple[str, str], Fraction] | None = None
    strategy: str | None = None
    if cluster_queue:
        view = await quota_view(reader, policy, cluster_queue)
        cq = view.cluster_queue
        if not isinstance(cq, dx.Forbidden | dx.Absent):
            strategy = (cq.get("spec") or {}).get("queueingStrategy")
            if view.show_numbers:
                held = _held(cq)
        if held is None:
            unavailable.append(
                "the quota admitted Workloads hold: you may not read the ClusterQueue and the "
                "quota disclosure policy is not at `quota`"
            )
        if policy.enabled and policy.source is not None and in_cq is not None:
            try:
                items = await policy.source.cluster_queue_pending(cluster_queue, in_cq + 1)
                cluster_entries = [
                    _entry(i)
                    for i in items
                    if isinstance(i.get("positionInClusterQueue"), int)
                    and i["positionInClusterQueue"] < in_cq
                ]
            except (ForbiddenError, NotFoundError, UnavailableError) as error:
                unavailable.append(f"the ClusterQueue's pending list: {error}")
        elif policy.level is QuotaDisclosure.NONE:
            unavailable.append(
                "why the Workloads ahead in the ClusterQueue are ahead: the ClusterQueue's "
                "pending list is read only under the quota disclosure policy (or in `cache` mode)"
            )
    unavailable.append(NEEDS_CACHE)
    return AheadInput(
        priority=priority,
        created=str(created) if created else None,
        in_local_queue=found.position_in_local_queue,
        in_cluster_queue=in_cq,
        local_entries=[_entry(i) for i in own_ahead],
        cluster_entries=cluster_entries,
        local_requests=local_requests,
        cluster_requests=None,
        held=held,
        queueing_strategy=strategy,
        unavailable=unavailable,
    )
