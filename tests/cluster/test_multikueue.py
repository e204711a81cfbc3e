"""MultiKueue on the real Kueue v0.17.0: the manager and its worker control plane (issue 25).

What the driver's MultiKueue scenarios (manifests/80-*, 81-*, 82-*, manifests/worker/) show, read
from every cluster: the manager's Workload (its admission check state and message, the cluster it
was dispatched to), the remote Workloads on worker-1 (4 CPU) and worker-2 (2 CPU), read with each
worker's admin kubeconfig, the MultiKueueClusters' Active condition. One Job of this module's own
goes the whole way (dispatched to worker-2, run, finished there, its status mirrored back, its
remote copies removed); everything it creates is deleted when the test ends, on every cluster
(waited, bounded).

Opt-in: skipped unless KGQL_MULTIKUEUE=1, and the control plane must have been started with it.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from kueue_graphql.cli.serve import worker_kubeconfig_problem
from kueue_graphql.core.workers import WorkerKubeconfig
from tests.cluster import multikueue
from tests.cluster.driver import MANIFESTS, Cluster
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
OTHER_WORKER = multikueue.WORKERS[1]
CHECK = "mk-workers"
# This module's own Job, unique per run so that nothing of an earlier run can answer for it.
OWN_JOB = f"mk-smoke-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def workers(cluster: Cluster) -> dict[str, Cluster]:
    found = {name: Cluster(cluster.state_dir / name) for name in multikueue.WORKERS}
    down = [name for name, worker in found.items() if not worker.is_healthy()]
    if down:
        pytest.fail(
            f"{multikueue.SWITCH}=1 but the control plane in {cluster.state_dir} has no running "
            f"{', '.join(down)}: it was started without the switch; `make cluster-down`, then "
            f"`{multikueue.SWITCH}=1 make cluster-up`"
        )
    return found


@pytest.fixture(scope="module")
def worker(workers: dict[str, Cluster]) -> Cluster:
    return workers[WORKER]


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


def _condition_holds(plane: Cluster, kind: str, name: str, condition: str) -> Callable[[], bool]:
    def check() -> bool:
        found = _get(plane, kind, name, NAMESPACE) or {}
        return _conditions(found).get(condition, {}).get("status") == "True"

    return check


def _check_state(workload: dict[str, Any], check: str) -> dict[str, Any]:
    states: list[dict[str, Any]] = workload["status"].get("admissionChecks", [])
    (state,) = [c for c in states if c["name"] == check]
    return state


def test_multikueue_clusters_active_or_not(cluster: Cluster) -> None:
    for name in multikueue.WORKERS:
        reachable = _conditions(_get(cluster, "multikueuecluster", name))["Active"]
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
    # One of its three clusters is unreachable: still Active, and says which.
    active = _conditions(_get(cluster, "admissioncheck", CHECK))["Active"]
    assert (active["status"], active["reason"], active["message"]) == (
        "True",
        "SomeActiveClusters",
        f"Inactive clusters: [{multikueue.UNREACHABLE}]",
    )
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


def test_dispatched_job_runs_on_the_worker(
    cluster: Cluster, workers: dict[str, Cluster], worker: Cluster
) -> None:
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
    # The copy worker-2 (too small for 3 CPU) was sent is gone once worker-1 won.
    wait_until(
        f"mk-dispatched's copy removed from {OTHER_WORKER}",
        lambda: _get(workers[OTHER_WORKER], "workload", local["metadata"]["name"], NAMESPACE)
        is None,
    )


def _exceeds(request: int, capacity: int) -> str:
    return (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor standard, "
        f"previously considered podsets requests (0) + current podset request ({request}) > "
        f"maximum capacity ({capacity})"
    )


@pytest.mark.parametrize(
    ("job", "messages"),
    [
        # 3 CPU: worker-1 has 1 of its 4 free (mk-dispatched holds 3), worker-2 has only 2.
        (
            "mk-waits-for-quota",
            {
                "worker-1": "couldn't assign flavors to pod set main: insufficient unused quota "
                "for cpu in flavor standard, 2 more needed",
                "worker-2": _exceeds(3, 2),
            },
        ),
        ("mk-too-big", {"worker-1": _exceeds(6, 4), "worker-2": _exceeds(6, 2)}),
    ],
)
def test_no_worker_reserves_quota(
    cluster: Cluster, workers: dict[str, Cluster], job: str, messages: dict[str, str]
) -> None:
    """The manager reserves its own quota and waits on the check; each worker says why not."""
    local = _workload_of(cluster, job)
    assert local is not None
    assert _conditions(local)["QuotaReserved"]["status"] == "True"
    assert _conditions(local).get("Admitted", {}).get("status") != "True"
    assert _check_state(local, CHECK)["state"] == "Pending"
    assert not local["status"].get("clusterName")
    # Sent to the two reachable workers, never to the unreachable one.
    assert sorted(local["status"].get("nominatedClusterNames", [])) == sorted(multikueue.WORKERS)
    for name, worker in workers.items():
        remote = _get(worker, "workload", local["metadata"]["name"], NAMESPACE)
        assert remote is not None, name
        reserved = _conditions(remote)["QuotaReserved"]
        assert (name, reserved["status"], reserved["message"]) == (name, "False", messages[name])
        # Nothing runs for it there: Kueue creates the remote Job only on the winner.
        assert _get(worker, "job", job, NAMESPACE) is None


def test_unreachable_worker_leaves_the_workload_on_the_manager(
    cluster: Cluster, workers: dict[str, Cluster]
) -> None:
    local = _workload_of(cluster, "mk-unreachable")
    assert local is not None
    reserved = _conditions(local)["QuotaReserved"]
    assert (reserved["status"], reserved["message"]) == (
        "False",
        "ClusterQueue cq-mk-unreachable is inactive",
    )
    assert _check_state(local, "mk-unreachable")["state"] == "Pending"
    for worker in workers.values():
        assert _get(worker, "workload", local["metadata"]["name"], NAMESPACE) is None


@pytest.mark.parametrize("name", multikueue.WORKERS)
def test_identities_on_the_worker_are_limited(workers: dict[str, Cluster], name: str) -> None:
    """Kueue's identity there may manage Workloads and Jobs, not Secrets; the service's reader
    may read, never write."""
    worker = workers[name]
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
    assert "workload.kueue.x-k8s.io/job-mk-too-big-" in listed.stdout
    # `serve --worker-kubeconfig NAME=<this file>` accepts it at start.
    assert worker_kubeconfig_problem(WorkerKubeconfig(name, reader)) is None


@pytest.fixture
def own_job(cluster: Cluster, workers: dict[str, Cluster]) -> Iterator[str]:
    # 2 CPU: worker-1 has 1 free (mk-dispatched holds 3 of 4), worker-2 has its 2: worker-2 wins.
    # The scenario's Job (manifests/81-multikueue-dispatched.yaml), renamed and resized.
    job = yaml.safe_load((MANIFESTS / "81-multikueue-dispatched.yaml").read_text())
    job["metadata"]["name"] = OWN_JOB
    (container,) = job["spec"]["template"]["spec"]["containers"]
    container["resources"] = {"requests": {"cpu": "2", "memory": "256Mi"}}
    cluster.apply_objects([job])
    try:
        yield OWN_JOB
    finally:
        for plane in (cluster, *workers.values()):
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
                for plane in (cluster, *workers.values())
            )

        wait_until(f"{OWN_JOB}'s objects gone from both clusters", gone)


def _all(plane: Cluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = plane.get_json("workloads,jobs,pods", "-n", NAMESPACE)["items"]
    return items


def test_a_job_runs_on_the_worker_and_its_end_is_mirrored_back(
    cluster: Cluster, workers: dict[str, Cluster], own_job: str
) -> None:
    winner = workers[OTHER_WORKER]
    local = wait_until(
        f"{own_job} dispatched to {OTHER_WORKER}",
        lambda: (w := _workload_of(cluster, own_job))
        and w["status"].get("clusterName") == OTHER_WORKER
        and _conditions(w).get("Admitted", {}).get("status") == "True"
        and w,
    )
    name = local["metadata"]["name"]
    pod = wait_until(
        f"{own_job}'s Pod bound on {OTHER_WORKER}",
        lambda: next(
            (
                p
                for p in winner.get_json("pods", "-n", NAMESPACE, "-l", f"job-name={own_job}")[
                    "items"
                ]
                if p["spec"].get("nodeName")
            ),
            None,
        ),
    )
    # As a kubelet would: the container ran and exited 0.
    winner.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", NAMESPACE, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": {"phase": "Succeeded"}}),
    )  # fmt: skip
    for kind, name_, condition in (("job", own_job, "Complete"), ("workload", name, "Finished")):
        wait_until(
            f"the manager's {kind} {name_} {condition} (mirrored from {OTHER_WORKER})",
            _condition_holds(cluster, kind, name_, condition),
        )
    assert _get(cluster, "job", own_job, NAMESPACE)["status"].get("succeeded") == 1
    assert not cluster.get_json("pods", "-n", NAMESPACE, "-l", f"job-name={own_job}")["items"]
    # Once the manager's Workload is finished, Kueue removes its remote copies from the worker.
    wait_until(
        f"{own_job}'s Workload and Job removed from {OTHER_WORKER} by Kueue",
        lambda: _get(winner, "workload", name, NAMESPACE) is None
        and _get(winner, "job", own_job, NAMESPACE) is None,
    )
