"""What a live answer was computed from, and what a change touches: dependency keys.

A computation records one `Dependency` per read (lookups/recording.py): an object read
(resource, namespace, name), a list read (resource, namespace, None), a list narrowed to one
label value or one owner (`selector`), or a queue position (POSITIONS, namespace, LocalQueue).
A change of an object touches the keys `touched_by` gives; a subscription is woken by a change
only when one of those keys is among its dependencies (kube/changes.py, kube/cache_changes.py).

A label or owner that an update REMOVES from an object is not seen (a watch event carries the
new object only); the object's own key and its namespace's list key still are.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kueue.objects import metadata

# Pseudo-resource of position keys: one Workload's entry in the pending list of its LocalQueue
# as Kueue's visibility API orders it (namespace, LocalQueue, selector: the Workload). Moved by
# Workloads of any namespace in the same ClusterQueue; the `cache` read mode wakes it through
# kube/position_watches.py, the `impersonate` mode reads it again at the re-check.
POSITIONS = "positions"

_OWNER = "owner:"


@dataclass(frozen=True)
class Dependency:
    resource: str
    """str(Resource) (e.g. "workloads.kueue.x-k8s.io"), or POSITIONS."""
    namespace: str | None
    """None: cluster-scoped, or a list across namespaces."""
    name: str | None = None
    """None: any object of the list."""
    selector: str | None = None
    """A list narrowed to one label value ("key=value") or one owner ("owner:Kind/name"); of
    a POSITIONS key, the Workload whose position it is."""


def object_key(resource: Resource, namespace: str | None, name: str) -> Dependency:
    return Dependency(str(resource), namespace if resource.namespaced else None, name)


def list_key(
    resource: Resource, namespace: str | None, label_selector: str | None = None
) -> Dependency:
    """A list's key: narrowed to its label selector when that is one `key=value` (what the
    object's own labels say in `touched_by`), else the whole list."""
    selector = label_selector if label_selector and _one_equality(label_selector) else None
    return Dependency(str(resource), namespace if resource.namespaced else None, None, selector)


def owner_key(resource: Resource, namespace: str, kind: str, name: str) -> Dependency:
    """The objects of `resource` that `kind`/`name` owns (e.g. a Job's Workload)."""
    return Dependency(str(resource), namespace, None, f"{_OWNER}{kind}/{name}")


def position_key(namespace: str, local_queue: str, workload: str) -> Dependency:
    """The position of Workload `workload` in LocalQueue `local_queue`'s pending list."""
    return Dependency(POSITIONS, namespace, local_queue, workload)


def _one_equality(selector: str) -> bool:
    return "," not in selector and "!" not in selector and selector.count("=") == 1


def touched_by(resource: Resource, obj: JsonObject) -> set[Dependency]:
    """Every key a change of `obj` (added, modified or deleted) touches."""
    meta = metadata(obj)
    kind = str(resource)
    namespace = meta.get("namespace") if resource.namespaced else None
    keys = {Dependency(kind, namespace, None)}
    if namespace is not None:
        keys.add(Dependency(kind, None, None))
    name = meta.get("name")
    if name:
        keys.add(Dependency(kind, namespace, str(name)))
    selectors = [f"{label}={value}" for label, value in (meta.get("labels") or {}).items()]
    selectors += [
        f"{_OWNER}{owner.get('kind')}/{owner.get('name')}"
        for owner in meta.get("ownerReferences") or []
    ]
    for where in {namespace, None}:
        keys.update(Dependency(kind, where, None, selector) for selector in selectors)
    return keys


def touches_any(keys: Iterable[Dependency], dependencies: Collection[Dependency]) -> bool:
    return any(key in dependencies for key in keys)
