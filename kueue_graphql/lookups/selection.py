"""Which objects a filter keeps: pure predicates over Kueue JSON, shared by every read mode."""

from __future__ import annotations

from kueue_graphql.core.conditions import workload_status
from kueue_graphql.kube.client import JsonObject


def _spec(obj: JsonObject) -> JsonObject:
    return obj.get("spec") or {}


def workload_matches(obj: JsonObject, status: str | None, local_queue: str | None) -> bool:
    if status is not None and workload_status(obj) != status:
        return False
    return local_queue is None or _spec(obj).get("queueName") == local_queue


def admitted_cluster_queue(workload: JsonObject) -> str | None:
    name = ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue")
    return str(name) if name else None


def flavor_names(cluster_queue: JsonObject) -> set[str]:
    return {
        str(flavor.get("name"))
        for group in _spec(cluster_queue).get("resourceGroups") or []
        for flavor in group.get("flavors") or []
    }


def owned_by(workload: JsonObject, owner_uid: str | None, kind: str, name: str) -> bool:
    """Whether an ownerReference names the owner: by uid when known, else by kind and name."""
    for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if owner_uid and ref.get("uid") == owner_uid:
            return True
        same_kind = str(ref.get("kind", "")).lower() == kind.lower()
        if not owner_uid and same_kind and ref.get("name") == name:
            return True
    return False


def newest(objects: list[JsonObject]) -> JsonObject:
    return max(objects, key=lambda o: str((o.get("metadata") or {}).get("creationTimestamp", "")))
