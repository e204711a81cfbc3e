"""`node(id:)` and `nodes(ids:)`: any entity by its global id (Relay's object identification).

Each id is decoded and checked (format, type, namespace and name) before anything is read, so
a malformed id costs no API call. The object is then read exactly as the type's own root field
reads it (`workload(namespace:, name:)`, `cohort(name:)`, `diagnose(...)`...), as the caller:
the same answer, the same FORBIDDEN or NOT_FOUND.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import strawberry
from strawberry.types.base import get_object_definition

from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.core.global_ids import GlobalId, decode_id
from kueue_graphql.core.names import check_name, check_namespace
from kueue_graphql.graph.admissioncheck import AdmissionCheck
from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.clusterqueue import ClusterQueue
from kueue_graphql.graph.cohort import load_cohort
from kueue_graphql.graph.common import Info, field, reads
from kueue_graphql.graph.diagnosis import diagnose_object
from kueue_graphql.graph.event import Event
from kueue_graphql.graph.job import Job
from kueue_graphql.graph.jobset import JobSet
from kueue_graphql.graph.kubernetes_node import KubernetesNode
from kueue_graphql.graph.localqueue import LocalQueue
from kueue_graphql.graph.namespace import Namespace
from kueue_graphql.graph.node import Node
from kueue_graphql.graph.pod import Pod
from kueue_graphql.graph.priorityclass import WorkloadPriorityClass
from kueue_graphql.graph.rayjob import RayJob
from kueue_graphql.graph.resourceflavor import ResourceFlavor
from kueue_graphql.graph.topology import Topology
from kueue_graphql.graph.workload import Workload

KUBE_OBJECT_TYPES: tuple[type[KubeObject], ...] = (
    AdmissionCheck,
    ClusterQueue,
    Event,
    Job,
    JobSet,
    KubernetesNode,
    LocalQueue,
    Namespace,
    Pod,
    RayJob,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
)

Loader = Callable[[Info], Awaitable[Any]]
# The kind a diagnosis starts from: a Kind (`Job`), or as typed, group-qualified.
_KIND = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")


def _object_loader(cls: type[KubeObject], keys: tuple[str, ...]) -> Loader:
    namespace, name = _keys(keys, 2)
    if cls.RESOURCE.namespaced:
        check_namespace(namespace)
    elif namespace:
        raise BadRequestError(f"invalid id: a {cls.RESOURCE.kind} has no namespace")
    check_name(name)

    async def load(info: Info) -> KubeObject:
        found = await reads(info).get(cls.RESOURCE, namespace or None, name)
        return cls.from_json(found)

    return load


def _keys(keys: tuple[str, ...], count: int) -> tuple[str, ...]:
    if len(keys) != count:
        raise BadRequestError("invalid id: not an id of this API; use an `id` this API returned")
    return keys


def _cohort_loader(keys: tuple[str, ...]) -> Loader:
    empty, name = _keys(keys, 2)
    if empty:
        raise BadRequestError("invalid id: a Cohort has no namespace")
    check_name(name)
    return lambda info: load_cohort(info, name)


def _diagnosis_loader(keys: tuple[str, ...]) -> Loader:
    namespace, kind, name = _keys(keys, 3)
    check_namespace(namespace)
    check_name(name)
    if not _KIND.fullmatch(kind):
        raise BadRequestError("invalid id: not an id of this API; use an `id` this API returned")
    return lambda info: diagnose_object(reads(info), namespace, kind, name)


def _kube_object_loaders(cls: type[KubeObject]) -> Callable[[tuple[str, ...]], Loader]:
    return lambda keys: _object_loader(cls, keys)


_BY_TYPE_NAME: dict[str, Callable[[tuple[str, ...]], Loader]] = {
    **{
        get_object_definition(cls, strict=True).name: _kube_object_loaders(cls)
        for cls in KUBE_OBJECT_TYPES
    },
    "Cohort": _cohort_loader,
    "Diagnosis": _diagnosis_loader,
}


def loader_of(text: str) -> Loader:
    """How to read the object `text` identifies; BadRequestError, before any read, when the id
    is malformed or names no type with ids."""
    decoded: GlobalId = decode_id(text)
    make = _BY_TYPE_NAME.get(decoded.type_name)
    if make is None:
        raise BadRequestError(
            "invalid id: not an id of this API (unknown type); use an `id` this API returned"
        )
    return make(decoded.keys)


@strawberry.type
class NodeQuery:
    @field(
        description="The object with this global id (any type implementing Node), read as the "
        "caller exactly as its type's own root field reads it."
    )
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        load = loader_of(id)
        found: Node = await load(info)
        return found

    @field(
        description="The objects with these global ids, in order; each one null with its error "
        "(FORBIDDEN, NOT_FOUND) as `node(id:)` would answer. At most the largest page size "
        "(`first`) of ids."
    )
    def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        limit = info.context.limits.max_page_size
        if len(ids) > limit:
            raise BadRequestError(f"`ids` has {len(ids)} ids: at most {limit} per request")
        loads = [loader_of(i) for i in ids]
        return [load(info) for load in loads]  # type: ignore[misc]
