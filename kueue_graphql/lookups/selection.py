"""Which objects a filter keeps (pure predicates over Kueue JSON) and the small lookups built
on them that every read mode shares (an owner's Workload, a Workload's ClusterQueue name)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Protocol

from kueue_graphql.core.errors import ForbiddenError, NotFoundError
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import LOCAL_QUEUE, WORKLOAD, Resource
from kueue_graphql.kueue.conditions import workload_status
from kueue_graphql.kueue.objects import dig, metadata, spec
from kueue_graphql.kueue.objects import labels as labels_of
from kueue_graphql.kueue.owners import pod_group_name

# The Job controller labels every Pod it creates with the Job's uid and with its name.
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# A label value has at most 63 characters (a Job's name may have more).
MAX_LABEL_VALUE = 63


def workload_matches(obj: JsonObject, status: str | None, local_queue: str | None) -> bool:
    if status is not None and workload_status(obj) != status:
        return False
    return local_queue is None or spec(obj).get("queueName") == local_queue


def admitted_cluster_queue(workload: JsonObject) -> str | None:
    name = dig(workload, "status", "admission", "clusterQueue")
    return str(name) if name else None


class Finds(Protocol):
    """What the lookups below need of a read mode: one object as the caller."""

    def get(
        self, resource: Resource, namespace: str | None, name: str
    ) -> Awaitable[JsonObject]: ...

    def find(
        self, resource: Resource, namespace: str | None, name: str
    ) -> Awaitable[JsonObject | None]: ...


async def owner_uid(reader: Finds, owner: Resource | None, namespace: str, name: str) -> str | None:
    """The owner's uid, to find its Workload by; None when the caller may not read the owner
    (a caller may read Workloads without reading their owners: they are matched by the
    owner's kind and name instead) or when it is not a kind the service reads."""
    found = await read_owner(reader, owner, namespace, name)
    uid = metadata(found).get("uid") if found is not None else None
    return str(uid) if uid else None


async def read_owner(
    reader: Finds, owner: Resource | None, namespace: str, name: str
) -> JsonObject | None:
    """The owner as the caller reads it; None when they may not, or it is not a kind the
    service reads."""
    if owner is None:
        return None
    try:
        return await reader.get(owner, namespace, name)
    except ForbiddenError:
        return None


async def pod_group_workload(
    reader: Finds, pod: JsonObject | None, namespace: str, name: str
) -> JsonObject | None:
    """A grouped Pod's Workload: Kueue names it after the group (`kueue.x-k8s.io/pod-group-name`)
    and every Pod of the group owns it. Read with `get`, as `kubectl get workload GROUP`."""
    group = pod_group_name(pod)
    if group is None:
        return None
    found = await reader.find(WORKLOAD, namespace, group)
    if found is None or not owned_by(found, metadata(pod).get("uid"), "Pod", name):
        raise NotFoundError("Workload for Pod", name, namespace)
    return found


def owners_workload(
    candidates: list[JsonObject], uid: str | None, kind: str, name: str, namespace: str
) -> JsonObject:
    """The owner's Workload among `candidates`; NotFoundError when there is none."""
    mine = [w for w in candidates if owned_by(w, uid, kind, name)]
    if not mine:
        raise NotFoundError(f"Workload for {kind}", name, namespace)
    # A re-created owner can leave older Workloads behind: the newest one is the live one.
    return newest(mine)


async def cluster_queue_name_of(reader: Finds, workload: JsonObject) -> str | None:
    """The ClusterQueue a Workload is (or would be) in, without reading the ClusterQueue.

    Admitted: `status.admission.clusterQueue`. Pending: its LocalQueue's `spec.clusterQueue`,
    which a namespace tenant may read even when the ClusterQueue itself is off limits."""
    admitted_in = admitted_cluster_queue(workload)
    if admitted_in:
        return admitted_in
    queue_name = spec(workload).get("queueName")
    if not queue_name:
        return None
    namespace = metadata(workload).get("namespace")
    local_queue = await reader.find(LOCAL_QUEUE, namespace, queue_name)
    if local_queue is None:
        return None
    name = spec(local_queue).get("clusterQueue")
    return str(name) if name else None


def flavor_names(cluster_queue: JsonObject) -> set[str]:
    return {
        str(flavor.get("name"))
        for group in spec(cluster_queue).get("resourceGroups") or []
        for flavor in group.get("flavors") or []
    }


def owned_by(workload: JsonObject, owner_uid: str | None, kind: str, name: str) -> bool:
    """Whether an ownerReference names the owner: by uid when known, else by kind and name."""
    for ref in metadata(workload).get("ownerReferences") or []:
        if owner_uid and ref.get("uid") == owner_uid:
            return True
        same_kind = str(ref.get("kind", "")).lower() == kind.lower()
        if not owner_uid and same_kind and ref.get("name") == name:
            return True
    return False


def newest(objects: list[JsonObject]) -> JsonObject:
    return max(objects, key=lambda o: str(metadata(o).get("creationTimestamp", "")))


_SELECTOR_TERM = re.compile(
    r"""\s*(?:
        (?P<absent>!)\s*(?P<absent_key>[\w./-]+)
      | (?P<set_key>[\w./-]+)\s+(?P<set_op>in|notin)\s*\((?P<values>[^()]*)\)
      | (?P<key>[\w./-]+)\s*(?:(?P<op>==|!=|=)\s*(?P<value>[\w.-]*))?
    )\s*(?:,|$)""",
    re.VERBOSE,
)


def label_selector(selector: str | None) -> Callable[[JsonObject], bool] | None:
    """A predicate for a Kubernetes label selector (equality and set forms), or None when the
    selector uses a form this does not parse (the caller then asks the API server)."""
    # (key, operator, values): operator one of exists, absent, in, notin.
    requirements: list[tuple[str, str, frozenset[str]]] = []
    text = (selector or "").strip()
    position = 0
    while position < len(text):
        match = _SELECTOR_TERM.match(text, position)
        if match is None or match.end() == position:
            return None
        position = match.end()
        if match["absent"]:
            requirements.append((match["absent_key"], "absent", frozenset()))
        elif match["set_key"]:
            values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
            requirements.append((match["set_key"], match["set_op"], values))
        elif match["op"] is None:
            requirements.append((match["key"], "exists", frozenset()))
        else:
            operator = "notin" if match["op"] == "!=" else "in"
            requirements.append((match["key"], operator, frozenset({match["value"]})))

    def matches(obj: JsonObject) -> bool:
        labels = labels_of(obj)
        for key, operator, values in requirements:
            if operator == "exists" and key not in labels:
                return False
            if operator == "absent" and key in labels:
                return False
            if operator == "in" and labels.get(key) not in values:
                return False
            if operator == "notin" and labels.get(key) in values:
                return False
        return True

    return matches


def field_selector(selector: str | None) -> Callable[[JsonObject], bool] | None:
    """A predicate for the field selectors every kind supports (metadata.name and
    metadata.namespace, = / == / !=), or None for any other (the API server is asked)."""
    requirements: list[tuple[str, bool, str]] = []
    for term in (selector or "").split(","):
        term = term.strip()
        if not term:
            continue
        match = re.fullmatch(r"metadata\.(name|namespace)\s*(==|!=|=)\s*([\w.-]*)", term)
        if match is None:
            return None
        attribute, operator, value = match.groups()
        requirements.append((attribute, operator != "!=", value))

    def matches(obj: JsonObject) -> bool:
        meta = metadata(obj)
        return all(
            (str(meta.get(attribute) or "") == value) is equal
            for attribute, equal, value in requirements
        )

    return matches
