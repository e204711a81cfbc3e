"""The diagnosis' input, loaded as the caller.

A read the API server (or the access check) refuses becomes a Forbidden marker, a missing
object an Absent marker, and the pure `kueue_graphql.diagnosis` turns what the caller could
read into the verdict. Nothing here decides anything; it only loads.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import BadRequestError, ForbiddenError, NotFoundError
from kueue_graphql.diagnosis.evidence import preemptor_uid
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    DEPLOYMENT,
    LOCAL_QUEUE,
    NODE,
    OWNER_KINDS,
    POD,
    RESOURCE_FLAVOR,
    TOPOLOGY,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
    Resource,
)
from kueue_graphql.kueue.model import known
from kueue_graphql.kueue.objects import dig, metadata, spec, status
from kueue_graphql.kueue.owners import controller_reference
from kueue_graphql.kueue.pending_entry import (
    FOREIGN_ENTRIES_KEY,
    HEAD_OF_CLUSTER_QUEUE_KEY,
    POSITION_BEYOND_KEY,
)
from kueue_graphql.lookups.observed import observe
from kueue_graphql.lookups.owner_pods import owner_pods
from kueue_graphql.lookups.reader import KueueReader
from kueue_graphql.lookups.recording import ObjectFingerprint, ignoring_status

T = TypeVar("T")
_TAS_NOT_FIT = re.compile(r'topology "[^"]+" (?:doesn\'t allow|allows only|allows to fit only)')


ObservedObject = JsonObject | dx.Forbidden | dx.Absent
ObservedList = list[JsonObject] | dx.Forbidden | dx.Absent

# What a live diagnosis compares the queues it read by: everything but the pending counts
# Kueue writes to a ClusterQueue and a LocalQueue after each change of their pending Workloads,
# which no diagnosis reads (tests/unit/test_live_diagnosis_inputs.py): such a write wakes a
# subscription, and it recomputes nothing.
DIAGNOSIS_FINGERPRINTS: Mapping[Resource, ObjectFingerprint] = {
    CLUSTER_QUEUE: ignoring_status("pendingWorkloads"),
    LOCAL_QUEUE: ignoring_status("pendingWorkloads"),
}


def _ready(value: T) -> asyncio.Future[T]:
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def _start(read: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
    """A task whose read (a coroutine) is made only once the task runs. A task cancelled before
    its first step (a subscription closed in the middle of a diagnosis) then leaves no
    coroutine behind that was never awaited."""

    async def run() -> T:
        return await read()

    return asyncio.ensure_future(run())


async def _all(*reads: asyncio.Future[Any]) -> None:
    """Wait for every read; when one fails or the caller is cancelled, the others are cancelled
    and waited for too (asyncio.gather leaves them running), so none outlives the diagnosis."""
    try:
        await asyncio.gather(*reads)
    finally:
        pending = [read for read in reads if not read.done()]
        for read in pending:
            read.cancel()
        if pending:
            await asyncio.wait(pending)


async def _events(
    reader: KueueReader, objects: Sequence[JsonObject]
) -> list[JsonObject] | dx.Forbidden | dx.Absent:
    try:
        lists = await asyncio.gather(*(reader.events_for(o) for o in objects))
    except ForbiddenError as error:
        return dx.Forbidden(str(error))
    return [e for events in lists for e in events]


async def _queue_position(
    reader: KueueReader, namespace: str, workload: JsonObject
) -> JsonObject | dx.Forbidden | dx.Absent | dx.Failed:
    queue = spec(workload).get("queueName")
    reserved = any(
        c.get("type") == "QuotaReserved" and c.get("status") == "True"
        for c in status(workload).get("conditions") or []
    )
    if not queue or reserved:
        return dx.Absent("not pending")
    access = Access("get", VISIBILITY_LOCAL_QUEUE, namespace, queue, "pendingworkloads")
    if not await reader.may(access):
        return dx.Forbidden(f"may not get localqueues/pendingworkloads {namespace}/{queue}")
    name = str(metadata(workload).get("name") or "")
    read = await reader.pending_read(namespace, queue, name)
    if read.forbidden:
        return dx.Forbidden(f"may not get localqueues/pendingworkloads {namespace}/{queue}")
    if read.absent:
        return dx.Absent("Kueue's visibility API is not served")
    found = read.own
    if found is None and read.failure is not None:
        return dx.Failed(read.failure)
    if found is None and read.beyond is not None:
        # Pending (no quota reserved), just further back than the entries read.
        return {POSITION_BEYOND_KEY: read.beyond}
    if found is None:
        return dx.Absent("not in the LocalQueue's pending list")
    entry = dict(found.item)
    if found.head_of_cluster_queue:
        entry[HEAD_OF_CLUSTER_QUEUE_KEY] = found.head_of_cluster_queue
    if found.foreign_entries_before:
        entry["positionInLocalQueue"] = found.position_in_local_queue
        entry[FOREIGN_ENTRIES_KEY] = found.foreign_entries_before
    return entry


async def _find_preemptor(
    reader: KueueReader, namespace: str, workload: JsonObject | None
) -> ObservedObject:
    """The Workload Kueue's Preempted condition names by UID: in the same namespace first,
    then cluster-wide, each only as far as the caller may list Workloads."""
    wanted = preemptor_uid(workload)
    if wanted is None:
        return dx.Absent("not preempted")
    forbidden = False
    for where in (namespace, None):
        try:
            listed = await reader.list_objects(WORKLOAD, where)
        except ForbiddenError:
            forbidden = True
            continue
        for candidate in listed:
            if metadata(candidate).get("uid") == wanted:
                return candidate
    if forbidden:
        return dx.Forbidden("may not list the Workloads where the preemptor may be")
    return dx.Absent(f"no Workload with UID {wanted} (it may have finished)")


def _names_admission_check(cluster_queue: JsonObject) -> bool:
    return any(
        c.get("type") == "Active"
        and c.get("status") == "False"
        and "AdmissionCheck" in str(c.get("message") or "")
        for c in status(cluster_queue).get("conditions") or []
    )


def _quota_message(workload: JsonObject | None) -> str:
    for c in status(workload).get("conditions") or []:
        if c.get("type") == "QuotaReserved" and c.get("status") != "True":
            return str(c.get("message") or "")
    return ""


async def load_input(
    reader: KueueReader,
    namespace: str,
    owner: ObservedObject,
    workload: ObservedObject,
) -> dx.DiagnosisInput:
    """Everything the diagnosis looks at, read as the caller.

    Three rounds, each started at once so the request's DataLoaders batch them: the queue,
    Pods, queue position and Events; then the ClusterQueue and, for Pods kube-scheduler has not
    placed, their Events and the Nodes; then, only for a ClusterQueue in a cohort, the other
    ClusterQueues and Cohorts. ResourceFlavors and AdmissionChecks only when a reason names one.
    What the diagnosis cannot use is not read.
    """
    owner_obj, workload_obj = known(owner), known(workload)
    queue = spec(workload_obj).get("queueName") or (
        (metadata(owner_obj).get("labels") or {}).get("kueue.x-k8s.io/queue-name")
    )

    local_queue: asyncio.Future[ObservedObject] = _ready(dx.Absent("no queue name"))
    if queue:
        local_queue = _start(lambda: observe(reader.get(LOCAL_QUEUE, namespace, queue)))
    pods_read: asyncio.Future[ObservedList] = _start(
        lambda: observe(owner_pods(reader, namespace, owner_obj, workload_obj))
    )
    position_read: asyncio.Future[ObservedObject | dx.Failed] = _ready(dx.Absent("no Workload"))
    if workload_obj is not None:
        position_read = _start(lambda: _queue_position(reader, namespace, workload_obj))
    # The Workload's Events carry Kueue's reasons; the owner's matter only while there is no
    # Workload (e.g. Kueue failing to create one).
    about = [workload_obj] if workload_obj is not None else [o for o in (owner_obj,) if o]
    events_read = _start(lambda: _events(reader, about))
    await _all(local_queue, pods_read, position_read, events_read)
    pods = pods_read.result()

    admitted_in = dig(workload_obj, "status", "admission", "clusterQueue")
    lq = known(local_queue.result())
    cq_name = admitted_in or (spec(lq).get("clusterQueue") if lq else None)
    unplaced = [p for p in (pods if isinstance(pods, list) else []) if not spec(p).get("nodeName")]

    cluster_queue: asyncio.Future[ObservedObject] = _ready(dx.Absent("no ClusterQueue name"))
    if cq_name:
        cluster_queue = _start(lambda: observe(reader.get(CLUSTER_QUEUE, None, str(cq_name))))
    # Kueue's TAS step could not place a pod set: what its snapshot counts room from.
    tas = _TAS_NOT_FIT.search(_quota_message(workload_obj)) is not None
    nodes: asyncio.Future[ObservedList] = _ready(dx.Absent("no unplaced Pod"))
    pod_events: asyncio.Future[ObservedList] = _ready([])
    # An admitted TAS Workload: are the Nodes Kueue placed it on still Ready and untainted?
    placed_by_tas = any(
        psa.get("topologyAssignment")
        for psa in dig(workload_obj, "status", "admission", "podSetAssignments") or []
        if isinstance(psa, dict)
    )
    if unplaced or tas or placed_by_tas:
        nodes = _start(lambda: observe(reader.list_objects(NODE)))
    if unplaced:
        pod_events = _start(lambda: _events(reader, unplaced))
    topologies: asyncio.Future[ObservedList] = _ready(dx.Absent("no TAS placement failed"))
    cluster_pods: asyncio.Future[ObservedList] = _ready(dx.Absent("no TAS placement failed"))
    cluster_workloads: asyncio.Future[ObservedList] = _ready(dx.Absent("no TAS placement failed"))
    if tas:
        topologies = _start(lambda: observe(reader.list_objects(TOPOLOGY)))
        cluster_pods = _start(lambda: observe(reader.list_objects(POD, None)))
        cluster_workloads = _start(lambda: observe(reader.list_objects(WORKLOAD, None)))
    # Flavors make a taint remedy exact and say which Nodes a Topology covers; AdmissionChecks
    # say who decides a pending check.
    flavors: asyncio.Future[ObservedList] = _ready(dx.Absent("no flavor in question"))
    if "in flavor " in _quota_message(workload_obj) or tas:
        flavors = _start(lambda: observe(reader.list_objects(RESOURCE_FLAVOR)))
    checks: asyncio.Future[ObservedList] = _ready(dx.Absent("no admission checks"))
    if status(workload_obj).get("admissionChecks"):
        checks = _start(lambda: observe(reader.list_objects(ADMISSION_CHECK)))
    await _all(
        cluster_queue, nodes, pod_events, flavors, checks, topologies, cluster_pods,
        cluster_workloads,
    )  # fmt: skip

    cluster_queues: ObservedList = dx.Absent("not in a cohort")
    cohorts: ObservedList = dx.Absent("not in a cohort")
    cq = known(cluster_queue.result())
    if cq is not None and spec(cq).get("cohortName"):
        cluster_queues_read = _start(lambda: observe(reader.list_objects(CLUSTER_QUEUE)))
        cohorts_read = _start(lambda: observe(reader.list_objects(COHORT)))
        await _all(cluster_queues_read, cohorts_read)
        cluster_queues, cohorts = cluster_queues_read.result(), cohorts_read.result()

    admission_checks = checks.result()
    if cq is not None and isinstance(admission_checks, dx.Absent) and _names_admission_check(cq):
        # An inactive ClusterQueue blamed on an AdmissionCheck: who should run it.
        admission_checks = await observe(reader.list_objects(ADMISSION_CHECK))

    preemptor = await _find_preemptor(reader, namespace, workload_obj)

    events, more_events = events_read.result(), pod_events.result()
    if isinstance(events, list) and isinstance(more_events, list):
        events = events + more_events
    return dx.DiagnosisInput(
        owner=owner,
        workload=workload,
        events=events,
        pods=pods,
        local_queue=local_queue.result(),
        cluster_queue=cluster_queue.result(),
        cluster_queues=cluster_queues,
        cohorts=cohorts,
        resource_flavors=flavors.result(),
        admission_checks=admission_checks,
        nodes=nodes.result(),
        queue_position=position_read.result(),
        preemptor=preemptor,
        topologies=topologies.result(),
        cluster_pods=cluster_pods.result(),
        cluster_workloads=cluster_workloads.result(),
    )


def _owner_kind_of(workload: JsonObject) -> tuple[str, str] | None:
    """The Workload's owner: its controlling reference, else (a StatefulSet's pod group, whose
    Workload the StatefulSet and every Pod own, none as controller) its first one."""
    ref = controller_reference(workload)
    return (str(ref.get("kind", "")), str(ref.get("name", ""))) if ref is not None else None


async def diagnosis_input_for_workload(
    reader: KueueReader, workload: JsonObject
) -> dx.DiagnosisInput:
    """The input for a Workload the caller has read, with its owner when readable."""
    namespace = str(metadata(workload).get("namespace", ""))
    owner: ObservedObject = dx.Absent("no owner")
    owned_by = _owner_kind_of(workload)
    if owned_by is not None and owned_by[0] in OWNER_KINDS:
        owner = await observe(reader.get(OWNER_KINDS[owned_by[0]], namespace, owned_by[1]))
    return await load_input(reader, namespace, owner, workload)


async def diagnosis_input_for_owner(
    reader: KueueReader, namespace: str, kind: str, name: str
) -> dx.DiagnosisInput:
    """The input for an owner (kind "Job", any kind Kueue manages, or "Workload")."""
    if kind == DEPLOYMENT.kind:
        raise BadRequestError(
            "Kueue makes one Workload per Pod of a Deployment (its pod integration), none for "
            "the Deployment: ask about one of its Pods (kind Pod)"
        )
    if kind == "Workload":
        return await diagnosis_input_for_workload(
            reader, await reader.get(WORKLOAD, namespace, name)
        )
    owner: ObservedObject = dx.Absent(f"no {kind} resource known")
    resource = OWNER_KINDS.get(kind)
    if resource is not None:
        owner = await observe(reader.get(resource, namespace, name))
    workload = await observe(reader.workload_for_owner(namespace, kind, name))
    if not isinstance(owner, dict) and not isinstance(workload, dict):
        # Neither readable: say so (or that nothing exists), never diagnose blind.
        if isinstance(owner, dx.Forbidden) and resource is not None:
            raise ForbiddenError("get", resource.group, resource.plural, namespace, name)
        if isinstance(workload, dx.Forbidden):
            raise ForbiddenError("list", WORKLOAD.group, WORKLOAD.plural, namespace)
        raise NotFoundError(kind, name, namespace)
    return await load_input(reader, namespace, owner, workload)
