"""The start estimate from the holder's Job `activeDeadlineSeconds`, on the real control plane.

Its own ClusterQueue (1 CPU) is held by an admitted Job `holder` (activeDeadlineSeconds 7200) in
namespace start-a; Workload `target` waits behind it. Workload `finished` was admitted there
before and has finished: it still carries its admission and holds nothing. alice (tenant
reader there, may read Jobs) gets "released by startTime + 7200 s"; carol (may read Workloads
and LocalQueues there, not Jobs) gets no number and why: the Job is read as the caller, never
as the service.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.core.modes import QuotaDisclosure
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server
from tests.teardown import remove, remove_namespace
from tests.waiting import SETTLE_SECONDS

pytestmark = pytest.mark.cluster

NS = "start-a"
LABELS = {"kueue-graphql.example/test": "start-job-deadline"}
CQ = "start-job-deadline-cq"
DEADLINE = 7200
IMAGE = "registry.invalid/kueue-graphql/sleep:never-pulled"

QUERY = """
query S($ns: String!, $name: String!) {
  diagnose(namespace: $ns, kind: "Workload", name: $name) {
    aheadOfMe { startEstimate { releasesBy explanation } }
  }
}
"""


def _rbac() -> list[Any]:
    ref = {"apiGroup": "rbac.authorization.k8s.io"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": LABELS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "alice-tenant-reader", "namespace": NS},
         "roleRef": {**ref, "kind": "ClusterRole", "name": "kueue-graphql-tenant-reader"},
         "subjects": [{**ref, "kind": "User", "name": "alice"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "workloads-not-jobs", "namespace": NS},
         "rules": [
             {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"],
              "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["visibility.kueue.x-k8s.io"],
              "resources": ["localqueues/pendingworkloads"], "verbs": ["get", "list"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "carol-workloads-not-jobs", "namespace": NS},
         "roleRef": {**ref, "kind": "Role", "name": "workloads-not-jobs"},
         "subjects": [{**ref, "kind": "User", "name": "carol"}]},
    ]  # fmt: skip


def _queues() -> list[Any]:
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
         "metadata": {"name": CQ, "labels": LABELS},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                  "flavors": [{"name": "standard",
                               "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "lq-start", "namespace": NS, "labels": LABELS},
         "spec": {"clusterQueue": CQ}},
    ]  # fmt: skip


def _pod(cpu: str) -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": IMAGE, "resources": {"requests": {"cpu": cpu}}}]}  # fmt: skip


HOLDER = {
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "holder", "namespace": NS,
                 "labels": {**LABELS, "kueue.x-k8s.io/queue-name": "lq-start"}},
    "spec": {"activeDeadlineSeconds": DEADLINE, "backoffLimit": 0,
             "template": {"metadata": {"labels": LABELS}, "spec": _pod("1")}},
}  # fmt: skip


def _workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": NS, "labels": LABELS},
        # spec.priority set: Kueue v0.17's visibility API panics on a pending Workload without it.
        "spec": {"queueName": "lq-start", "priority": 0,
                 "podSets": [{"name": "main", "count": 1, "template": {"spec": _pod("1")}}]},
    }  # fmt: skip


# Admitted, then finished, before the holder starts: it keeps status.admission and
# QuotaReserved=True, but holds no quota (Kueue drops finished Workloads from its cache).
FINISHED = _workload("finished")
TARGET = _workload("target")


def _reserved_cpu(cluster_queue: dict[str, Any]) -> bool:
    return any(
        r.get("name") == "cpu" and r.get("total") not in (None, "0")
        for flavor in (cluster_queue.get("status") or {}).get("flavorsReservation") or []
        for r in flavor.get("resources") or []
    )


def _apply(cluster: Cluster, objects: list[Any]) -> None:
    proc = subprocess.run(
        [str(cluster.kubectl_bin), "--kubeconfig", str(cluster.admin_kubeconfig), "apply", "-f",
         "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
        text=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


def _cleanup(cluster: Cluster) -> None:
    """The namespace with its Jobs, Pods and Workloads, then the ClusterQueue, waited until
    gone (the next module lists as if this one never ran)."""
    remove_namespace(cluster, NS)
    remove(cluster, "clusterqueue", CQ)


def _condition(workload: dict[str, Any], kind: str) -> str | None:
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


def _finish_a_workload(cluster: Cluster) -> None:
    """Workload FINISHED admitted, then marked Finished as a job integration would (the status
    subresource, as admin), until the ClusterQueue reserves nothing again."""
    _apply(cluster, [FINISHED])
    deadline = time.monotonic() + SETTLE_SECONDS
    while _condition(cluster.get_json("workload", "finished", "-n", NS), "QuotaReserved") != "True":
        assert time.monotonic() < deadline, "Kueue did not reserve quota for Workload finished"
        time.sleep(0.5)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    finished = {"type": "Finished", "status": "True", "reason": "Succeeded",
                "message": "marked finished by the test", "lastTransitionTime": now}  # fmt: skip
    cluster.kubectl(
        "patch", "workload", "finished", "-n", NS, "--subresource=status", "--type=json",
        "-p", json.dumps([{"op": "add", "path": "/status/conditions/-", "value": finished}]),
    )  # fmt: skip
    deadline = time.monotonic() + SETTLE_SECONDS
    while _reserved_cpu(cluster.get_json("clusterqueue", CQ)):
        assert time.monotonic() < deadline, f"{CQ} still reserves the finished Workload's quota"
        time.sleep(0.5)
    workload = cluster.get_json("workload", "finished", "-n", NS)
    assert _condition(workload, "QuotaReserved") == "True", workload["status"]
    assert workload["status"]["admission"]["clusterQueue"] == CQ


@pytest.fixture(scope="module")
def held(cluster: Cluster) -> Iterator[datetime]:
    """The setting; yields the holder Job's status.startTime."""
    _cleanup(cluster)  # what an interrupted earlier run left
    try:
        _apply(cluster, _rbac())
        _apply(cluster, _queues())
        _finish_a_workload(cluster)
        _apply(cluster, [HOLDER])
        deadline = time.monotonic() + SETTLE_SECONDS
        while not (cluster.get_json("job", "holder", "-n", NS).get("status") or {}).get(
            "startTime"
        ):
            assert time.monotonic() < deadline, "the holder Job was not admitted and started"
            time.sleep(0.5)
        started = cluster.get_json("job", "holder", "-n", NS)["status"]["startTime"]
        _apply(cluster, [TARGET])
        deadline = time.monotonic() + SETTLE_SECONDS
        vis = f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/lq-start"
        while True:
            listed = cluster.kubectl("get", "--raw", f"{vis}/pendingworkloads", check=False)
            if listed.returncode == 0 and json.loads(listed.stdout).get("items"):
                break
            assert time.monotonic() < deadline, "Kueue did not list the target as pending"
            time.sleep(0.5)
        # The ClusterQueue's status shows the holder's reservation a moment after Kueue admits
        # it (its status is written apart from the Workload's); the estimate reads it from there.
        deadline = time.monotonic() + SETTLE_SECONDS
        while not _reserved_cpu(cluster.get_json("clusterqueue", CQ)):
            assert time.monotonic() < deadline, f"{CQ}'s status never showed the holder's quota"
            time.sleep(0.5)
        yield datetime.fromisoformat(started.replace("Z", "+00:00"))
    finally:
        _cleanup(cluster)


@pytest.fixture(scope="module")
async def disclosing(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA) as s:
        yield s


async def test_job_deadline_read_as_the_caller(
    disclosing: Server, cluster: Cluster, held: datetime
) -> None:
    body = await disclosing.query(QUERY, {"ns": NS, "name": "target"}, token=cluster.token("alice"))
    assert "errors" not in body, body
    estimate = body["data"]["diagnose"]["aheadOfMe"]["startEstimate"]
    at = held + timedelta(seconds=DEADLINE)
    assert estimate["releasesBy"] == at.strftime("%Y-%m-%dT%H:%M:%SZ"), estimate
    assert f"activeDeadlineSeconds {DEADLINE}" in estimate["explanation"]
    # carol may read the Workloads but not the Job: no number, and why.
    assert cluster.kubectl("get", "job", "holder", "-n", NS, user="carol",
                           check=False).returncode != 0  # fmt: skip
    assert cluster.kubectl("get", "workload", "target", "-n", NS, user="carol").returncode == 0
    body = await disclosing.query(QUERY, {"ns": NS, "name": "target"}, token=cluster.token("carol"))
    estimate = body["data"]["diagnose"]["aheadOfMe"]["startEstimate"]
    assert estimate["releasesBy"] is None, estimate
    assert "you may not read Job holder" in estimate["explanation"]
    assert "7200" not in json.dumps(body)
