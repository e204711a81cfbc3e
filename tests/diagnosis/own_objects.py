"""For cluster tests that make their own Kueue objects: apply them as the admin, and read the
QuotaReserved message Kueue wrote on a Workload."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.cluster.driver import Cluster

__all__ = ["apply", "quota_message"]


def apply(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    proc = subprocess.run(
        [str(cluster.kubectl_bin), "--kubeconfig", str(cluster.admin_kubeconfig),
         "apply", "-f", "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
        text=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


def quota_message(cluster: Cluster, namespace: str, name: str) -> str:
    """The Workload's QuotaReserved condition message ('' without one)."""
    workload = cluster.get_json("workload", name, "-n", namespace)
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition["type"] == "QuotaReserved":
            return str(condition.get("message") or "")
    return ""
