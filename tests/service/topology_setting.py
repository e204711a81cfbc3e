"""The topology-aware scheduling (TAS) setting of tests/service/test_topology.py, on the real
control plane: its own tainted Nodes (block / rack / hostname labels), a Topology, a TAS
ResourceFlavor whose tolerations only this setting's Pods get, a ClusterQueue, a LocalQueue and
the Jobs. Kept out of the shared scenarios: whatIf does not simulate TAS yet, and
test_whatif_oracle.py probes every ClusterQueue there.

Capacity (cpu per Node, 2 cpu per Pod): blocks b1 (racks r1, r2) and b2 (rack r3), two 4-cpu
Nodes per rack. A plain Pod (not under Kueue) takes 3 cpu of tas-r2-n1: Kueue counts it as
non-TAS usage, so rack r2 has room for 2 Pods, r1 and r3 for 4 each.
"""

from __future__ import annotations

import json
from typing import Any

from tests.cluster.driver import Cluster
from tests.diagnosis.own_objects import apply
from tests.teardown import force_delete_pods, remove, remove_namespace

NS = "tas-a"
LABELS = {"kueue-graphql.example/test": "topology"}
BLOCK = "kueue-graphql.example/tas-block"
RACK = "kueue-graphql.example/tas-rack"
HOST = "kubernetes.io/hostname"
TOPOLOGY = "tas-test-topology"
FLAVOR = "tas-test-flavor"
CQ = "tas-test-cq"
LQ = "lq-tas"
TAINT_KEY = "kueue-graphql.example/tas-only"
IMAGE = "registry.invalid/kueue-graphql/sleep:never-pulled"
NODE_CPU = 4
RACKS = {"r1": "b1", "r2": "b1", "r3": "b2"}
NODES = [f"tas-{rack}-n{i}" for rack in RACKS for i in (1, 2)]
NON_TAS_NODE = "tas-r2-n1"
NON_TAS_CPU = 3
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TOLERATION = {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def _node(name: str) -> dict[str, Any]:
    rack = name.split("-")[1]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            **LABELS, HOST: name, RACK: rack, BLOCK: RACKS[rack],
            "kueue-graphql.example/pool": "tas"}},
        "spec": {"taints": [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}]},
    }  # fmt: skip


def _ready_status() -> dict[str, Any]:
    capacity = {"cpu": str(NODE_CPU), "memory": "16Gi", "pods": "110"}
    return {"status": {"capacity": capacity, "allocatable": capacity, "conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "message": "simulated by the test (there is no kubelet)"}]}}  # fmt: skip


def _rbac() -> list[Any]:
    ref = {"apiGroup": "rbac.authorization.k8s.io"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": LABELS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "alice-tenant-reader", "namespace": NS},
         "roleRef": {**ref, "kind": "ClusterRole", "name": "kueue-graphql-tenant-reader"},
         "subjects": [{**ref, "kind": "User", "name": "alice"}]},
    ]  # fmt: skip


def _queues() -> list[Any]:
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
         "metadata": {"name": TOPOLOGY, "labels": LABELS},
         "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
         "metadata": {"name": FLAVOR, "labels": LABELS},
         "spec": {"nodeLabels": {"kueue-graphql.example/pool": "tas"},
                  "topologyName": TOPOLOGY, "tolerations": [TOLERATION]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
         "metadata": {"name": CQ, "labels": LABELS},
         "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                      {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "100"}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": LQ, "namespace": NS, "labels": LABELS},
         "spec": {"clusterQueue": CQ}},
    ]  # fmt: skip


def _pod_spec(cpu: str) -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": IMAGE, "resources": {"requests": {"cpu": cpu}}}]}  # fmt: skip


def job(name: str, pods: int, annotation: str, level: str) -> dict[str, Any]:
    """A Job of `pods` Pods of 2 cpu asking TAS for one domain at `level`."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NS,
                     "labels": {**LABELS, "kueue.x-k8s.io/queue-name": LQ}},
        "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0,
                 "template": {"metadata": {"labels": LABELS, "annotations": {annotation: level}},
                              "spec": _pod_spec("2")}},
    }  # fmt: skip


def sliced_job(name: str, pods: int, slice_size: int) -> dict[str, Any]:
    """Pods in one block, in slices of `slice_size` Pods each in one rack."""
    made = job(name, pods, REQUIRED, BLOCK)
    made["spec"]["template"]["metadata"]["annotations"].update(
        {
            "kueue.x-k8s.io/podset-slice-required-topology": RACK,
            "kueue.x-k8s.io/podset-slice-size": str(slice_size),
        }
    )
    return made


NON_TAS_POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "non-tas", "namespace": NS, "labels": LABELS},
    "spec": {**_pod_spec(str(NON_TAS_CPU)), "nodeName": NON_TAS_NODE, "tolerations": [TOLERATION]},
}  # fmt: skip


def workload_of(cluster: Cluster, job: str) -> dict[str, Any] | None:
    """The Workload Kueue made for Job `job` of the setting's namespace."""
    for wl in cluster.get_json("workloads", "-n", NS)["items"]:
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
            return dict(wl)
    return None


def condition(wl: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((wl or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}


def make_nodes(cluster: Cluster) -> None:
    """The Nodes, Ready as tests/cluster/driver.py makes its fake Nodes (no kubelet runs)."""
    apply(cluster, [_node(n) for n in NODES])
    for name in NODES:
        cluster.kubectl("taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-",
                        check=False)  # fmt: skip
        cluster.kubectl("patch", "node", name, "--subresource=status", "--type=merge",
                        "-p", json.dumps(_ready_status()))  # fmt: skip


def set_up(cluster: Cluster) -> None:
    make_nodes(cluster)
    apply(cluster, _rbac())
    apply(cluster, _queues())


def clean_up(cluster: Cluster) -> None:
    """Everything the setting made, waited until gone."""
    force_delete_pods(cluster, NS)
    remove_namespace(cluster, NS)
    remove(cluster, "clusterqueue", CQ)
    remove(cluster, "resourceflavor", FLAVOR)
    remove(cluster, "topology", TOPOLOGY)
    remove(cluster, "nodes", "-l", "kueue-graphql.example/test=topology")
