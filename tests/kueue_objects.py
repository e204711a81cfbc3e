"""Kueue objects the cluster tests create, built in one place."""

from __future__ import annotations

from typing import Any


def pending_workload(
    namespace: str,
    name: str,
    queue: str,
    priority: int,
    *,
    cpu: str = "2",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Workload (no Job) whose one Pod asks for `cpu`; with spec.priority set (Kueue v0.17's
    visibility server needs it). Pending in a ClusterQueue with less quota than that."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    container = {
        "name": "main",
        "image": "registry.invalid/kueue-graphql/sleep:never",
        "resources": {"requests": {"cpu": cpu}},
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


def tenant_reader_binding(namespace: str, user: str = "alice") -> dict[str, Any]:
    """`user` reads the namespace as a tenant (the scenarios' kueue-graphql-tenant-reader)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{user}-tenant-reader", "namespace": namespace},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "kueue-graphql-tenant-reader",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
