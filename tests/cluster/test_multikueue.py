"""MultiKueue on the real Kueue v0.17.0: the manager and its worker control plane (issue 25).

What the driver's MultiKueue scenarios (manifests/80-*, 81-*, 82-*, manifests/worker/) show, read
from both clusters: the manager's Workload (its admission check state and message, the cluster it
was dispatched to), the remote Workload on the worker (read with the worker's admin kubeconfig),
the MultiKueueClusters' Active condition. One Job of this module's own goes the whole way
(dispatched, run, finished on the worker, its status mirrored back, its remote copies removed);
everything it creates is deleted when the module ends, on both clusters (waited, bounded).

Opt-in: skipped unless KGQL_MULTIKUEUE=1, and the control plane must have been started with it.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.cluster import multikueue
from tests.cluster.driver import Cluster
from tests.waiting import wait_until

if not multikueue.enabled(os.environ.get(multikueue.SWITCH)):
    pytest.skip(
        f"MultiKueue's worker control plane is off: set {multikueue.SWITCH}=1 and start the "
        f"control plane with it ({multikueue.SWITCH}=1 make cluster-up)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.cluster

NAMESPACE = "team-a"
WORKER = multikueue.WORKERS[0]
CHECK = "mk-workers"
# This module's own Job, unique per run so that nothing of an earlier run can answer for it.
OWN_JOB = f"mk-smoke-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def worker(cluster: Cluster) -> Cluster:
    worker = Cluster(cluster.state_dir / WORKER)
    if not worker.is_healthy():
        pytest.fail(
            f"{multikueue.SWITCH}=1 but the control plane in {cluster.state_dir} has no running "
            f"worker {WORKER}: it was started without the switch; `make cluster-down`, then "
            f"`{multikueue.SWITCH}=1 make cluster-up`"
        )
    return worker


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", []) or []}


def _workload_of(cluster: Cluster, job: str) -> dict[str, Any] | None:
    """The manager's Workload of a Job (label kueue.x-k8s.io/job-uid)."""
    found = cluster.kubectl("get", "job", job, "-n", NAMESPACE, "-o", "json", check=False)
    if found.returncode != 0:
        return None
    uid = json.loads(found.stdout)["metadata"]["uid"]
    items: list[dict[str, Any]] = cluster.get_json(
        "workloads", "-n", NAMESPACE, "-l", f"kueue.x-k8s.io/job-uid={uid}"
    )["items"]
    return items[0] if items else None


def _get(cluster: Cluster, kind: str, name: str, namespace: str | None = None) -> Any:
    scope = ("-n", namespace) if namespace else ()
    found = cluster.kubectl("get", kind, name, *scope, "-o", "json", check=False)
    return json.loads(found.stdout) if found.returncode == 0 else None


def _check_state(workload: dict[str, Any], check: str) -> dict[str, Any]:
    states: list[dict[str, Any]] = workload["status"].get("admissionChecks", [])
    (state,) = [c for c in states if c["name"] == check]
    return state


def test_multikueue_clusters_active_or_not(cluster: Cluster) -> None:
    reachable = _conditions(_get(cluster, "multikueuecluster", WORKER))["Active"]
    assert (reachable["status"], reachable["reason"], reachable["message"]) == (
        "True",
        "Active",
        "Connected",
    )
    unreachable = _conditions(_get(cluster, "multikueuecluster", multikueue.UNREACHABLE))["Active"]
    assert (unreachable["status"], unreachable["reason"]) == ("False", "ClientConnectionFailed")
    assert "connection refused" in unreachable["message"]
    # The port in the message is the one in the unreachable Secret's kubeconfig.
    secret = _get(cluster, "secret", multikueue.secret_name(multikueue.UNREACHABLE), "kueue-system")
    server = _server_of_secret(secret)
    assert server.removeprefix("https://") in unreachable["message"]


def _server_of_secret(secret: dict[str, Any]) -> str:
    kubeconfig = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
    server: str = kubeconfig["clusters"][0]["cluster"]["server"]
    return server


def test_admission_checks_and_queues_follow_their_clusters(cluster: Cluster) -> None:
    active = _conditions(_get(cluster, "admissioncheck", CHECK))["Active"]
    assert (active["status"], active["reason"]) == ("True", "Active")
    inactive = _conditions(_get(cluster, "admissioncheck", "mk-unreachable"))["Active"]
    assert (inactive["status"], inactive["reason"], inactive["message"]) == (
        "False",
        "NoUsableClusters",
        f"Inactive clusters: [{multikueue.UNREACHABLE}]",
    )
    queue = _conditions(_get(cluster, "clusterqueue", "cq-mk-unreachable"))["Active"]
    assert (queue["status"], queue["reason"]) == ("False", "AdmissionCheckInactive")
    assert "mk-unreachable" in queue["message"]
    assert _conditions(_get(cluster, "clusterqueue", "cq-multikueue"))["Active"]["status"] == "True"


def test_dispatched_job_runs_on_the_worker(cluster: Cluster, worker: Cluster) -> None:
    local = _workload_of(cluster, "mk-dispatched")
    assert local is not None
    assert local["status"].get("clusterName") == WORKER
    state = _check_state(local, CHECK)
    assert state["state"] == "Ready"
    assert WORKER in state["message"]
    assert _conditions(local)["Admitted"]["status"] == "True"
    # The remote copy has the manager Workload's name, and the origin label of this manager.
    remote = _get(worker, "workload", local["metadata"]["name"], NAMESPACE)
    assert remote is not None
    assert remote["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
    assert _conditions(remote)["Admitted"]["status"] == "True"
    assert remote["status"]["admission"]["clusterQueue"] == "cq-multikueue"
    # The Job runs on the worker, not on the manager (its job controller leaves a Job managed
    # by MultiKueue alone).
    pods = worker.get_json("pods", "-n", NAMESPACE, "-l", "job-name=mk-dispatched")["items"]
    assert [(p["spec"]["nodeName"], p["status"]["phase"]) for p in pods] == [
        ("worker-node-1", "Running")
    ]
    assert not cluster.get_json("pods", "-n", NAMESPACE, "-l", "job-name=mk-dispatched")["items"]


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            "mk-waits-for-quota",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
            "flavor standard, 1 more needed",
        ),
        (
            "mk-too-big",
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
            "standard, previously considered podsets requests (0) + current podset request (6) "
            "> maximum capacity (4)",
        ),
    ],
)
def test_no_worker_reserves_quota(
    cluster: Cluster, worker: Cluster, job: str, message: str
) -> None:
    """The manager reserves its own quota and waits on the check; the worker says why not."""
    local = _workload_of(cluster, job)
    assert local is not None
    assert _conditions(local)["QuotaReserved"]["status"] == "True"
    assert "Admitted" not in _conditions(local) or (
        _conditions(local)["Admitted"]["status"] == "False"
    )
    assert _check_state(local, CHECK)["state"] == "Pending"
    assert not local["status"].get("clusterName")
    assert local["status"].get("nominatedClusterNames") == [WORKER]
    remote = _get(worker, "workload", local["metadata"]["name"], NAMESPACE)
    assert remote is not None
    reserved = _conditions(remote)["QuotaReserved"]
    assert (reserved["status"], reserved["message"]) == ("False", message)
    # Nothing runs for it on the worker: Kueue creates the remote Job only for the winner.
    assert _get(worker, "job", job, NAMESPACE) is None


def test_unreachable_worker_leaves_the_workload_on_the_manager(
    cluster: Cluster, worker: Cluster
) -> None:
    local = _workload_of(cluster, "mk-unreachable")
    assert local is not None
    reserved = _conditions(local)["QuotaReserved"]
    assert (reserved["status"], reserved["message"]) == (
        "False",
        "ClusterQueue cq-mk-unreachable is inactive",
    )
    assert _check_state(local, "mk-unreachable")["state"] == "Pending"
    assert _get(worker, "workload", local["metadata"]["name"], NAMESPACE) is None


def test_identities_on_the_worker_are_limited(cluster: Cluster, worker: Cluster) -> None:
    """Kueue's identity there may manage Workloads and Jobs, not Secrets; the service's reader
    may read, never write."""
    namespace, account = multikueue.KUEUE_SERVICE_ACCOUNT
    kueue = f"system:serviceaccount:{namespace}:{account}"

    def can(*args: str, kubeconfig: Any = None, as_user: str | None = None) -> bool:
        impersonate = ("--as", as_user) if as_user else ()
        found = worker.kubectl(
            "auth", "can-i", *args, *impersonate, check=False, kubeconfig=kubeconfig
        )
        return found.stdout.strip() == "yes"

    assert can("create", "workloads.kueue.x-k8s.io", "-n", NAMESPACE, as_user=kueue)
    assert can("delete", "jobs.batch", "-n", NAMESPACE, as_user=kueue)
    assert not can("get", "secrets", "-n", "kueue-system", as_user=kueue)
    reader = multikueue.reader_kubeconfig(worker.state_dir)
    assert can("list", "workloads.kueue.x-k8s.io", "-A", kubeconfig=reader)
    assert can("list", "clusterqueues.kueue.x-k8s.io", kubeconfig=reader)
    assert not can("create", "workloads.kueue.x-k8s.io", "-n", NAMESPACE, kubeconfig=reader)
    assert not can("get", "secrets", "-n", "kueue-system", kubeconfig=reader)
    listed = worker.kubectl("get", "workloads", "-A", "-o", "name", kubeconfig=reader)
    assert "workload.kueue.x-k8s.io/job-mk-dispatched-" in listed.stdout


@pytest.fixture
def own_job(cluster: Cluster, worker: Cluster) -> Iterator[str]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": OWN_JOB,
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "lq-multikueue"},
        },
        "spec": {
            "managedBy": "kueue.x-k8s.io/multikueue",
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/kueue-graphql/sleep:never-pulled",
                            "resources": {"requests": {"cpu": "1", "memory": "256Mi"}},
                        }
                    ],
                }
            },
        },
    }
    cluster.apply_objects([job])
    try:
        yield OWN_JOB
    finally:
        for plane in (cluster, worker):
            plane.kubectl(
                "delete", "job", OWN_JOB, "-n", NAMESPACE, "--ignore-not-found",
                "--cascade=foreground", "--wait=true", "--timeout=120s", check=False,
            )  # fmt: skip
            plane.kubectl(
                "delete", "pods", "-n", NAMESPACE, "-l", f"job-name={OWN_JOB}",
                "--grace-period=0", "--force", "--ignore-not-found", check=False,
            )  # fmt: skip

        def gone() -> bool:
            return all(
                all(OWN_JOB not in item["metadata"]["name"] for item in _all(plane))
                for plane in (cluster, worker)
            )

        wait_until(f"{OWN_JOB}'s objects gone from both clusters", gone)


def _all(plane: Cluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = plane.get_json("workloads,jobs,pods", "-n", NAMESPACE)["items"]
    return items


def test_a_job_runs_on_the_worker_and_its_end_is_mirrored_back(
    cluster: Cluster, worker: Cluster, own_job: str
) -> None:
    local = wait_until(
        f"{own_job} dispatched to {WORKER}",
        lambda: (w := _workload_of(cluster, own_job))
        and w["status"].get("clusterName") == WORKER
        and _conditions(w).get("Admitted", {}).get("status") == "True"
        and w,
    )
    name = local["metadata"]["name"]
    pod = wait_until(
        f"{own_job}'s Pod bound on {WORKER}",
        lambda: next(
            (
                p
                for p in worker.get_json("pods", "-n", NAMESPACE, "-l", f"job-name={own_job}")[
                    "items"
                ]
                if p["spec"].get("nodeName")
            ),
            None,
        ),
    )
    # As a kubelet would: the container ran and exited 0.
    worker.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", NAMESPACE, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": {"phase": "Succeeded"}}),
    )  # fmt: skip
    wait_until(
        f"{own_job} Complete on the manager (mirrored from {WORKER})",
        lambda: _conditions(_get(cluster, "job", own_job, NAMESPACE) or {})
        .get("Complete", {})
        .get("status")
        == "True",
    )
    wait_until(
        f"the manager's Workload {name} Finished",
        lambda: _conditions(_get(cluster, "workload", name, NAMESPACE) or {})
        .get("Finished", {})
        .get("status")
        == "True",
    )
    assert _get(cluster, "job", own_job, NAMESPACE)["status"].get("succeeded") == 1
    assert not cluster.get_json("pods", "-n", NAMESPACE, "-l", f"job-name={own_job}")["items"]
    # Once the manager's Workload is finished, Kueue removes its remote copies from the worker.
    wait_until(
        f"{own_job}'s Workload and Job removed from {WORKER} by Kueue",
        lambda: _get(worker, "workload", name, NAMESPACE) is None
        and _get(worker, "job", own_job, NAMESPACE) is None,
    )
