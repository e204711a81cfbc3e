"""What the `cache` read mode caches, and how each Kueue kind is indexed for what queries filter
on: the IndexFuncs (client-go's tools/cache/index.go) handed to kube/informer_factory.py."""

from __future__ import annotations

from kueue_graphql.kube.client import JsonObject, KubeClient
from kueue_graphql.kube.informer_factory import SharedInformerFactory
from kueue_graphql.kube.reflector import ReflectorSettings
from kueue_graphql.kube.resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    RESOURCE_FLAVOR,
    TOPOLOGY,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
    Resource,
)
from kueue_graphql.kube.store import (
    ANY,
    Indexer,
    IndexFunc,
    OrderFunc,
    PostingKey,
    SortKey,
    combinations,
)
from kueue_graphql.kueue.conditions import workload_status
from kueue_graphql.kueue.objects import metadata, spec
from kueue_graphql.kueue.queue_order import in_queue, queue_order
from kueue_graphql.lookups.selection import admitted_cluster_queue, flavor_names


def workload_keys(obj: JsonObject) -> list[PostingKey]:
    """("wl", namespace, queueName, admitted ClusterQueue or "", status) in every combination,
    and the owners (by uid, and by namespace/kind/name for callers who may not read them)."""
    meta, wl_spec = metadata(obj), spec(obj)
    namespace = str(meta.get("namespace") or "")
    keys = combinations(
        "wl",
        (
            namespace,
            str(wl_spec.get("queueName") or ""),
            admitted_cluster_queue(obj) or "",
            workload_status(obj),
        ),
    )
    for ref in meta.get("ownerReferences") or []:
        if ref.get("uid"):
            keys.append(("owner-uid", str(ref["uid"])))
        keys.append(
            ("owner-name", namespace, str(ref.get("kind", "")).lower(), str(ref.get("name", "")))
        )
    return keys


QUEUE_ORDER = "queue"


def queue_order_key(namespace: str, local_queue: str) -> PostingKey:
    """The ordered posting of one LocalQueue's Workloads in Kueue's queue, in Kueue's order
    (kueue/queue_order.py); a ClusterQueue's queue is the merge of its LocalQueues'."""
    return (QUEUE_ORDER, namespace, local_queue)


def local_queue_of_posting(posting: PostingKey) -> tuple[str, str] | None:
    """(namespace, LocalQueue) of a `queue_order_key` posting; None for any other."""
    if len(posting) == 3 and posting[0] == QUEUE_ORDER:
        return str(posting[1]), str(posting[2])
    return None


def workload_queue_order(obj: JsonObject) -> list[tuple[PostingKey, SortKey]]:
    if not in_queue(obj):
        return []
    key = queue_order_key(str(metadata(obj).get("namespace") or ""), str(spec(obj)["queueName"]))
    return [(key, queue_order(obj))]


def local_queue_keys(obj: JsonObject) -> list[PostingKey]:
    return combinations(
        "lq", (str(metadata(obj).get("namespace") or ""), str(spec(obj).get("clusterQueue") or ""))
    )


def cluster_queue_keys(obj: JsonObject) -> list[PostingKey]:
    cohort = str(spec(obj).get("cohortName") or "")
    keys: list[PostingKey] = [("cq", ANY, ANY), ("cq", cohort, ANY)]
    for flavor in sorted(flavor_names(obj)):
        keys += [("cq", ANY, flavor), ("cq", cohort, flavor)]
    return keys


def cohort_keys(obj: JsonObject) -> list[PostingKey]:
    return [("cohort-parent", str(spec(obj).get("parentName") or ""))]


INDEXES: dict[Resource, IndexFunc | None] = {
    WORKLOAD: workload_keys,
    LOCAL_QUEUE: local_queue_keys,
    CLUSTER_QUEUE: cluster_queue_keys,
    COHORT: cohort_keys,
    RESOURCE_FLAVOR: None,
    ADMISSION_CHECK: None,
    WORKLOAD_PRIORITY_CLASS: None,
    TOPOLOGY: None,
}
ORDERS: dict[Resource, OrderFunc] = {WORKLOAD: workload_queue_order}
# The kinds the cache holds (every other kind is read per request as the caller).
CACHED_KINDS = tuple(INDEXES)


def kueue_store(resource: Resource) -> Indexer:
    """An empty store of `resource` with its Kueue indexes (none for an unindexed kind)."""
    return Indexer(resource, INDEXES.get(resource), ORDERS.get(resource))


def kueue_cache(
    client: KubeClient | None, settings: ReflectorSettings | None = None
) -> SharedInformerFactory:
    """The cache of every Kueue kind, indexed; `start()` it (a client-less one is fed by hand)."""
    return SharedInformerFactory(client, INDEXES, settings, ORDERS)
