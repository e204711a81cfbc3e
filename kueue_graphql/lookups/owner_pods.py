"""The Pods an owner of any kind handed off to, read as the caller (kueue/owners.py says how)."""

from __future__ import annotations

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import POD
from kueue_graphql.kueue.owners import (
    RAY_KINDS,
    owner_kind_of,
    owner_uid_of,
    pod_belongs,
    pod_group_of,
    pods_selector,
    ray_cluster_of,
    ray_pod_belongs,
    ray_pods_selector,
)
from kueue_graphql.lookups.reader import KueueReader


async def owner_pods(
    reader: KueueReader, namespace: str, owner: JsonObject | None, workload: JsonObject | None
) -> list[JsonObject]:
    """The Pods the owner handed off to, with one list as the caller: by the label its kind puts
    on them (kueue/owners.py), else every Pod of the namespace, kept by ownerReference. A plain
    Pod that owns its Workload is its own Pod. A RayJob's are its RayCluster's: none, and no
    read, before the KubeRay operator made one."""
    if owner is None and workload is None:
        return []
    kind = owner_kind_of(owner, workload)
    if kind in RAY_KINDS:
        cluster = ray_cluster_of(owner, kind, workload)
        if cluster is None:
            return []
        listed = await reader.list_objects(
            POD, namespace, label_selector=ray_pods_selector(cluster)
        )
        return [p for p in listed if ray_pod_belongs(p, cluster)]
    group = pod_group_of(owner, kind, workload)
    if owner is not None and kind == "Pod" and group is None:
        return [owner]
    owner_uid = owner_uid_of(owner, workload)
    selector = pods_selector(kind, owner_uid, group)
    listed = await reader.list_objects(POD, namespace, label_selector=selector)
    return [p for p in listed if pod_belongs(p, kind, owner_uid, group)]
