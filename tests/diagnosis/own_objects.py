"""A diagnosis test's own Kueue objects on the real control plane: manifests, apply, patch, and
what Kueue wrote on them (conditions, events), read as admin."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.cluster.driver import Cluster
from tests.waiting import SETTLE_SECONDS, wait_until

GROUP = "kueue.x-k8s.io/v1beta2"


def workload(
    name: str, namespace: str, cpu: str, labels: dict[str, str], queue: str = "lq"
) -> dict[str, Any]:
    """A bare Workload of one Pod (spec.priority set: Kueue v0.17's visibility API fails on a
    pending Workload without it)."""
    return {
        "apiVersion": GROUP,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "queueName": queue,
            "priority": 0,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.invalid/never-pulled",
                                "resources": {"requests": {"cpu": cpu}}}]}}}],
        },
    }  # fmt: skip


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def tenant_binding(user: str, namespace_: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{user}-tenant-reader", "namespace": namespace_},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "kueue-graphql-tenant-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }  # fmt: skip


def _kubectl(cluster: Cluster, *args: str, stdin: str | None = None) -> None:
    proc = subprocess.run(
        [str(cluster.kubectl_bin), "--kubeconfig", str(cluster.admin_kubeconfig), *args],
        input=stdin, text=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


def apply(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": objects}
    _kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(listing))


def merge_patch(cluster: Cluster, *target: str, patch: dict[str, Any]) -> None:
    """`target`: kind and name, then `-n NAMESPACE` for a namespaced object."""
    _kubectl(cluster, "patch", *target, "--type", "merge", "-p", json.dumps(patch))


def condition(cluster: Cluster, kind: str, name: str, type_: str, *ns: str) -> dict[str, Any]:
    obj = cluster.get_json(kind, name, *ns)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def quota_message(cluster: Cluster, name: str, namespace_: str) -> str:
    cond = condition(cluster, "workload", name, "QuotaReserved", "-n", namespace_)
    return str(cond.get("message") or "") if cond.get("status") == "False" else ""


def with_admitted_holder(
    cluster: Cluster, objects: list[dict[str, Any]], namespace_: str, labels: dict[str, str]
) -> None:
    """Create `objects`, then `holder` (2 CPU) in `namespace_`'s LocalQueue lq, and wait until
    Kueue admitted it."""
    apply(cluster, objects)
    apply(cluster, [workload("holder", namespace_, "2", labels)])
    wait_until(
        "holder admitted",
        lambda: condition(cluster, "workload", "holder", "Admitted", "-n", namespace_).get("status")
        == "True",
        SETTLE_SECONDS,
    )
