"""Removing what a test module made, and waiting until it is gone, so that the next module
starts on the control plane as the scenarios left it (no namespace still terminating, no
Workloads still being deleted under another module's list)."""

from __future__ import annotations

import json

from tests.cluster.driver import Cluster
from tests.waiting import BULK_SECONDS, wait_until


def force_delete_pods(cluster: Cluster, namespace: str, *selector: str) -> None:
    """No kubelet runs: a deleted Pod bound to a Node stays Terminating until removed by force
    (as a kubelet confirms a deletion). `selector`: e.g. "-l", "job-name=x"; else every Pod."""
    cluster.kubectl(
        "delete", "pods", "-n", namespace, *(selector or ("--all",)), "--force",
        "--grace-period=0", "--ignore-not-found", "--wait=false", check=False,
    )  # fmt: skip


def remove(cluster: Cluster, *what: str, seconds: float = BULK_SECONDS) -> None:
    """Delete the objects `kubectl get <what>` lists (e.g. "clusterqueues", "-l", "x=y" or
    "job", "j", "-n", "ns") and wait until none is left."""
    cluster.kubectl("delete", *what, "--ignore-not-found", "--wait=false", check=False)

    def left() -> list[str]:
        listed = cluster.kubectl("get", *what, "--ignore-not-found", "-o", "name", check=False)
        return listed.stdout.split() if listed.returncode == 0 else ["(kubectl get failed)"]

    wait_until(
        f"deletion of {' '.join(what)}",
        lambda: not left(),
        seconds,
        interval=1,
        detail=lambda: f"still there: {' '.join(left()[:20])}",
    )


def remove_namespace(cluster: Cluster, namespace: str, seconds: float = BULK_SECONDS) -> None:
    """Delete `namespace` with everything in it and wait until it is gone. The namespace
    controller deletes the contents collection by collection (one request for a thousand
    Workloads, where `kubectl delete` sends one per object); Pods are removed by force as the
    namespace empties (`force_delete_pods`)."""
    cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false",
                    check=False)  # fmt: skip

    def gone() -> bool:
        found = cluster.kubectl("get", "namespace", namespace, "--ignore-not-found", "-o", "name",
                                check=False)  # fmt: skip
        if found.returncode == 0 and not found.stdout.strip():
            return True
        force_delete_pods(cluster, namespace)
        return False

    def conditions() -> str:
        found = cluster.kubectl("get", "namespace", namespace, "-o", "json", check=False)
        if found.returncode != 0:
            return found.stderr.strip()
        status = json.loads(found.stdout).get("status") or {}
        return "; ".join(
            f"{c.get('type')}: {c.get('message')}"
            for c in status.get("conditions") or []
            if c.get("status") == "True"
        )

    wait_until(f"deletion of namespace {namespace}", gone, seconds, interval=1, detail=conditions)


def remove_pods(
    cluster: Cluster, namespace: str, *selector: str, seconds: float = BULK_SECONDS
) -> None:
    """Remove the Pods `selector` picks (of Jobs being deleted: the garbage collector deletes
    them gracefully, and a bound one would stay Terminating, holding its Node's CPU, for want
    of a kubelet), by force, until none is left."""

    def gone() -> bool:
        force_delete_pods(cluster, namespace, *selector)
        listed = cluster.kubectl("get", "pods", "-n", namespace, *selector, "-o", "name",
                                 check=False)  # fmt: skip
        return listed.returncode == 0 and not listed.stdout.strip()

    wait_until(f"deletion of Pods {' '.join(selector)} in {namespace}", gone, seconds, interval=1)
