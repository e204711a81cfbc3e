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

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import ForbiddenError, NotFoundError, UnavailableError
from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.diagnosis.ahead import AheadEntry, AheadInput, WhyAhead
from kueue_graphql.diagnosis.headroom import headroom
from kueue_graphql.diagnosis.start import (
    Holder,
    StartEstimate,
    holder_deadline,
    job_deadline,
    start_estimate,
)
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import JOB, VISIBILITY_LOCAL_QUEUE, WORKLOAD
from kueue_graphql.kueue.conditions import holds_quota_in
from kueue_graphql.kueue.exact import (
    ARITHMETIC,
    ZERO,
    QuantityError,
    exact_arithmetic,
    parse_quantity,
)
from kueue_graphql.kueue.objects import metadata, spec, status
from kueue_graphql.kueue.podsets import total_needs, workload_requests
from kueue_graphql.kueue.vocabulary import WorkloadCondition
from kueue_graphql.lookups.disclosure import DisclosurePolicy, quota_view
from kueue_graphql.lookups.queue_totals import needs
from kueue_graphql.lookups.reader import KueueReader

__all__ = ["load_ahead"]

NEEDS_CACHE = (
    "the total requests of Workloads ahead from other namespaces: their Workload objects are "
    "other tenants'; the service reads them only in the `cache` read mode"
)


def _entry(item: Mapping[str, Any]) -> AheadEntry:
    priority = item.get("priority")
    created = metadata(item).get("creationTimestamp")
    return AheadEntry(
        priority=priority if isinstance(priority, int) else 0,
        created=str(created) if created else None,
    )


@exact_arithmetic
def _sum(workloads: Sequence[JsonObject]) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for wl in workloads:
        for res, value in needs(wl).items():
            out[res] = out.get(res, ZERO) + value
    return out


def _held(cluster_queue: JsonObject) -> dict[tuple[str, str], Decimal]:
    out: dict[tuple[str, str], Decimal] = {}
    for flavor in status(cluster_queue).get("flavorsReservation") or []:
        for res in flavor.get("resources") or []:
            try:
                out[(str(flavor.get("name")), str(res.get("name")))] = parse_quantity(
                    str(res.get("total", "0"))
                )
            except QuantityError:
                continue
    return out


def _time(raw: object) -> datetime | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


def _owner_job(workload: JsonObject) -> str | None:
    for ref in metadata(workload).get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/"):
            return str(ref.get("name"))
    return None


async def _job_of(reader: KueueReader, workload: JsonObject) -> tuple[JsonObject | None, str]:
    """The Workload's owner Job as the caller may read it (her own identity, never the
    service's), or None and why."""
    job_name = _owner_job(workload)
    if job_name is None:
        return None, ""
    namespace = str(metadata(workload).get("namespace") or "")
    try:
        return await reader.get(JOB, namespace, job_name), ""
    except ForbiddenError:
        return None, f"you may not read Job {job_name}"
    except NotFoundError:
        return None, f"Job {job_name} is gone"


@exact_arithmetic
def _holder(workload: JsonObject, job: JsonObject | None = None, unknown: str = "") -> Holder:
    reserved: dict[tuple[str, str], Decimal] = {}
    admission = status(workload).get("admission") or {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for res, qty in (assignment.get("resourceUsage") or {}).items():
            flavor = flavors.get(res)
            if flavor is None:
                continue
            try:
                value = parse_quantity(str(qty))
            except QuantityError:
                continue
            key = (str(flavor), str(res))
            reserved[key] = reserved.get(key, ZERO) + value
    conditions = status(workload).get("conditions") or []
    admitted_at = next(
        (
            _time(c.get("lastTransitionTime"))
            for c in conditions
            if c.get("type") == "Admitted" and c.get("status") == "True"
        ),
        None,
    )
    limit = spec(workload).get("maximumExecutionTimeSeconds")
    past = status(workload).get("accumulatedPastExecutionTimeSeconds") or 0
    started, active_deadline = job_deadline(job)
    at, basis = holder_deadline(
        admitted_at,
        limit if isinstance(limit, int) else None,
        past if isinstance(past, int) else 0,
        job_started_at=started,
        active_deadline_seconds=active_deadline,
    )
    return Holder(
        reserved,
        at,
        f"one of yours: {basis}" if basis else "",
        "" if at else unknown,
        _still_holds_because(conditions, job),
    )


# Conditions that say a holder is on its way out; its quota is released once its Pods are gone.
_LEAVING_WORKLOAD = (WorkloadCondition.DEACTIVATION_TARGET, WorkloadCondition.EVICTED)
_LEAVING_JOB = ("FailureTarget", "Failed")  # batch/v1 JobConditionType


def _still_holds_because(
    workload_conditions: Sequence[Mapping[str, Any]], job: JsonObject | None
) -> str:
    """Why a holder past its deadline may still hold quota, from its own conditions."""
    job_conditions = ((job or {}).get("status") or {}).get("conditions") or []
    for kind, conditions, leaving in (
        ("its Job", job_conditions, _LEAVING_JOB),
        ("Kueue", workload_conditions, _LEAVING_WORKLOAD),
    ):
        for condition in conditions:
            if condition.get("type") in leaving and condition.get("status") == "True":
                reason = condition.get("reason") or condition.get("type")
                return (
                    f"{kind} set {condition.get('type')} ({reason}) at "
                    f"{condition.get('lastTransitionTime')}: its Pods have not all terminated"
                )
    return "neither its Job nor Kueue has acted on the deadline yet"


async def _start(
    reader: KueueReader,
    namespace: str,
    workload: JsonObject,
    cluster_queue: JsonObject,
    view_members: object,
    view_cohorts: object,
    ahead: int | None,
) -> StartEstimate:
    """Shortfall per (flavor, resource) against the ClusterQueue's headroom now, and the
    admitted Workloads the caller may read in her namespace as the holders."""
    needs = total_needs(workload_requests(workload))
    members = None if isinstance(view_members, dx.Forbidden | dx.Absent) else view_members
    cohorts = None if isinstance(view_cohorts, dx.Forbidden | dx.Absent) else view_cohorts
    lines = headroom(cluster_queue, members, cohorts).lines  # type: ignore[arg-type]
    available = {(line.flavor, line.resource): line.available_now for line in lines}
    groups: list[list[str]] = []
    missing: dict[tuple[str, str], Decimal] = {}
    for group in spec(cluster_queue).get("resourceGroups") or []:
        covered = [r for r in group.get("coveredResources") or [] if r in needs]
        if not covered:
            continue
        flavors = [str(f.get("name")) for f in group.get("flavors") or []]
        groups.append(flavors)
        for flavor in flavors:
            for res in covered:
                free = available.get((flavor, res))
                if free is None:
                    return StartEstimate(None, "no estimate: what the cohort can lend is unknown")
                missing[(flavor, res)] = max(ZERO, ARITHMETIC.subtract(needs[res], free))
    reserving = status(cluster_queue).get("reservingWorkloads")
    cq_name = str(metadata(cluster_queue).get("name"))
    try:
        # Only the namespace's Workloads holding quota (the cache's status index; one list of
        # the namespace, filtered, in `impersonate` mode), not its pending crowd.
        pages = await asyncio.gather(
            *(reader.workloads(namespace, status=held) for held in ("quotareserved", "admitted"))
        )
        own = [w for page in pages for w in page.items if holds_quota_in(w, cq_name)]
    except ForbiddenError:
        own = []
    jobs = await asyncio.gather(*(_job_of(reader, w) for w in own))
    holders = [_holder(w, job, why) for w, (job, why) in zip(own, jobs, strict=True)]
    counted = reserving if isinstance(reserving, int) else 0
    if counted < len(holders):
        # Kueue writes the ClusterQueue's status apart from the Workloads' admission: for a
        # moment after an admission its usage leaves out Workloads that hold quota, and the
        # headroom above would be too large.
        return StartEstimate(
            None,
            f"no estimate yet: ClusterQueue {cq_name}'s status counts {counted} Workload(s) "
            f"holding quota while {len(holders)} of yours are admitted in it (Kueue updates it "
            "shortly); ask again",
        )
    others = counted - len(holders)
    return start_estimate(
        groups,
        missing,
        holders,
        holders_complete=others <= 0,
        incomplete_because=f"{others} admitted Workload(s) of other namespaces hold quota in "
        f"ClusterQueue {cq_name}; their run-time limits need the `cache` read mode",
        ahead=ahead,
        now=datetime.now(UTC),
    )


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
    name = str(metadata(workload).get("name") or "")
    me_priority = spec(workload).get("priority")
    priority = me_priority if isinstance(me_priority, int) else 0
    created = metadata(workload).get("creationTimestamp")
    access = Access("get", VISIBILITY_LOCAL_QUEUE, namespace, local_queue, "pendingworkloads")
    if not await reader.may(access):
        raise ForbiddenError(
            "get", VISIBILITY_LOCAL_QUEUE.group, "localqueues/pendingworkloads", namespace,
            local_queue,
        )  # fmt: skip
    read = await reader.pending_read(namespace, local_queue, name, ahead=True)
    if read.forbidden:
        raise ForbiddenError(
            "get", VISIBILITY_LOCAL_QUEUE.group, "localqueues/pendingworkloads", namespace,
            local_queue,
        )  # fmt: skip
    if read.absent or read.failure is not None:
        raise UnavailableError(read.failure or "Kueue's visibility API is not served")
    found = read.own
    if found is None:
        return None
    counted = read.ahead  # the `cache` read mode: counted and summed from its stores
    own_ahead = (
        []
        if counted is not None
        else [
            item
            for item in read.items[: read.items.index(found.item)]
            if metadata(item).get("namespace") in (None, namespace)
        ]
    )
    position = found.item.get("positionInClusterQueue")
    in_cq = position if isinstance(position, int) else None
    # Her own namespace's Workloads ahead: read as her, summed.
    local_requests: dict[str, Decimal] | None
    try:
        if counted is not None:
            if not await reader.may(Access("list", WORKLOAD, namespace)):
                raise ForbiddenError("list", WORKLOAD.group, WORKLOAD.plural, namespace)
            local_requests = dict(counted.local_requests)
        elif own_ahead:
            page = await reader.workloads(namespace, local_queue=local_queue, status="pending")
            by_name = {str(metadata(w).get("name")): w for w in page.items}
            ahead_names = (str(metadata(i).get("name")) for i in own_ahead)
            local_requests = _sum([by_name[n] for n in ahead_names if n in by_name])
        elif await reader.may(Access("list", WORKLOAD, namespace)):
            local_requests = {}  # nothing ahead: no list to read
        else:
            raise ForbiddenError("list", WORKLOAD.group, WORKLOAD.plural, namespace)
    except ForbiddenError:
        local_requests = None
        unavailable.append(
            "the requests of Workloads ahead in your LocalQueue: you may not list them"
        )
    cluster_entries: list[AheadEntry] | None = None
    why_cluster: WhyAhead | None = None
    held: dict[tuple[str, str], Decimal] | None = None
    strategy: str | None = None
    start: StartEstimate | None = StartEstimate(
        None, "no estimate: the ClusterQueue's quota may not be read (nor disclosed)"
    )
    if cluster_queue:
        view = await quota_view(reader, policy, cluster_queue)
        cq = view.cluster_queue
        if not isinstance(cq, dx.Forbidden | dx.Absent):
            strategy = spec(cq).get("queueingStrategy")
            if view.show_numbers:
                held = _held(cq)
                start = await _start(
                    reader, namespace, workload, cq, view.cluster_queues, view.cohorts, in_cq
                )
        if held is None:
            unavailable.append(
                "the quota admitted Workloads hold: you may not read the ClusterQueue and the "
                "quota disclosure policy is not at `quota`"
            )
        if policy.enabled and counted is not None:
            why_cluster = counted.cluster
        elif policy.enabled and policy.source is not None and in_cq is not None:
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
        local_entries=None if counted is not None else [_entry(i) for i in own_ahead],
        cluster_entries=cluster_entries,
        why_local=None if counted is None else counted.local,
        why_cluster=why_cluster,
        local_requests=local_requests,
        cluster_requests=None,
        held=held,
        queueing_strategy=strategy,
        unavailable=unavailable,
        start=start,
    )
