"""Kueue's integrations beyond batch/Job on their real controllers (tests/cluster/integrations.py).

For each kind, an object naming a LocalQueue is created in a namespace of its own: the real Kueue
v0.17.0 makes a Workload for it (suspending it first where the kind can be suspended), admits it in
a ClusterQueue with room to spare, and then, where the kind's real controller runs
(`integrations.STARTED`; the others are reported as skipped by `test_controller_runs`), it acts:
JobSet -> Jobs -> Pods, TrainJob -> JobSet, RayJob -> RayCluster, RayCluster -> Pods,
LeaderWorkerSet -> StatefulSets -> Pods. The flavor's node labels match no Node, so every Pod
stays Pending and takes nothing from the scenarios' Nodes. A namespace without the opt-in label
shows that the Pod integration leaves its Pods alone. Everything is removed when the module ends
(waited, bounded).

Opt-in: skipped as a whole unless KGQL_INTEGRATIONS switches controllers on (e.g.
`KGQL_INTEGRATIONS=jobset`), and a kind's test is skipped where its controller is not
switched on. The control plane must have been started with the same setting.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.driver import Cluster, selected_integrations
from tests.cluster.integrations import CONTROLLERS, MANAGED_NAMESPACE_LABEL, SWITCH, started
from tests.waiting import wait_until

# Opt-in, like the controllers it checks: the control plane the session fixture starts (or reuses)
# has them only when the switch names them.
SELECTED = selected_integrations()
if not SELECTED:
    pytest.skip(
        f"the integrations' controllers are off: set {SWITCH} (e.g. {SWITCH}=jobset or all) "
        "and start the control plane with it",
        allow_module_level=True,
    )
STARTED = tuple(c.name for c in started(SELECTED))

pytestmark = pytest.mark.cluster

NAMESPACE = "integrations-smoke"
UNMANAGED_NAMESPACE = "integrations-smoke-unmanaged"
FLAVOR = "integrations-smoke"
CLUSTER_QUEUE = "cq-integrations-smoke"
QUEUE = "lq-integrations-smoke"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WAIT_SECONDS = 120
IMAGE = "registry.k8s.io/pause:3.10"
REQUESTS = {"cpu": "100m", "memory": "64Mi"}


def _apply(cluster: Cluster, path: Path, objects: list[dict[str, Any]]) -> None:
    path.write_text("\n---\n".join(json.dumps(o) for o in objects))
    cluster.kubectl("apply", "--server-side", "-f", str(path))


def _items(cluster: Cluster, kind: str, *selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cluster.get_json(kind, "-n", NAMESPACE, *selector)["items"]
    return items


def _owned_by(items: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    return [
        item
        for item in items
        if any(
            (ref["kind"], ref["name"]) == (kind, name)
            for ref in item["metadata"].get("ownerReferences", [])
        )
    ]


def _condition_true(obj: dict[str, Any], condition: str) -> bool:
    return any(
        c["type"] == condition and c["status"] == "True"
        for c in obj.get("status", {}).get("conditions", []) or []
    )


def _admitted_workload(cluster: Cluster, kind: str, name: str) -> dict[str, Any]:
    """The Workload Kueue made for the object, once it is admitted in our ClusterQueue."""

    def admitted() -> dict[str, Any] | None:
        for workload in _owned_by(_items(cluster, "workloads"), kind, name):
            if _condition_true(workload, "Admitted"):
                return workload
        return None

    workload = wait_until(f"an admitted Workload owned by {kind} {NAMESPACE}/{name}", admitted)
    assert workload["spec"]["queueName"] == QUEUE
    assert workload["status"]["admission"]["clusterQueue"] == CLUSTER_QUEUE
    return workload


def _require(name: str) -> None:
    """Skip a kind's test where its controller is not switched on (its CRDs are not installed)."""
    if name not in {c.name for c in SELECTED}:
        pytest.skip(f"{name} is not switched on ({SWITCH})")


def _controller_runs(name: str) -> bool:
    """Children are checked only where the kind's controller runs (integrations.STARTED); where
    it does not, Kueue alone still makes and admits the Workload, which is checked either way."""
    return name in STARTED


def _pod(name: str, container: str = "main") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": container, "image": IMAGE, "resources": {"requests": REQUESTS}}
            ],
        },
    }


def _ray_group(container: str) -> dict[str, Any]:
    return {
        "rayStartParams": {},
        "template": {
            "spec": {
                "containers": [
                    {"name": container, "image": IMAGE, "resources": {"requests": REQUESTS}}
                ]
            }
        },
    }


def _ray_cluster_spec() -> dict[str, Any]:
    workers = {"groupName": "workers", "replicas": 1, "minReplicas": 1, "maxReplicas": 1}
    return {
        "headGroupSpec": _ray_group("ray-head"),
        "workerGroupSpecs": [{**workers, **_ray_group("ray-worker")}],
    }


def _setup_objects() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {MANAGED_NAMESPACE_LABEL: "true"}},
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": UNMANAGED_NAMESPACE}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR},
            # No Node has this label: admitted Pods stay Pending and take no Node's capacity.
            "spec": {"nodeLabels": {"kueue-graphql.example/integrations-smoke": "nowhere"}},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": CLUSTER_QUEUE},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": FLAVOR,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "20"},
                                    {"name": "memory", "nominalQuota": "40Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": QUEUE, "namespace": NAMESPACE},
            "spec": {"clusterQueue": CLUSTER_QUEUE},
        },
    ]


def _training_runtime() -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "smoke-runtime", "namespace": NAMESPACE},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {"template": _pod("smoke-runtime", "node")},
                            },
                        }
                    ]
                }
            },
        },
    }


def _queued(kind: str, api_version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {QUEUE_LABEL: QUEUE}},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def smoke(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("integrations")
    try:
        _apply(cluster, directory / "setup.json", _setup_objects())
        wait_until(
            f"ClusterQueue {CLUSTER_QUEUE} Active",
            lambda: _condition_true(cluster.get_json("clusterqueue", CLUSTER_QUEUE), "Active"),
        )
        for namespace in (NAMESPACE, UNMANAGED_NAMESPACE):
            wait_until(
                f"ServiceAccount default in {namespace}",
                lambda ns=namespace: cluster.kubectl(  # type: ignore[misc]
                    "get", "serviceaccount", "default", "-n", ns, check=False
                ).returncode
                == 0,
            )
        yield directory
    finally:
        _clean_up(cluster)


def _clean_up(cluster: Cluster) -> None:
    for namespace in (NAMESPACE, UNMANAGED_NAMESPACE):
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
    cluster.kubectl(
        "wait",
        "--for=delete",
        f"namespace/{NAMESPACE}",
        f"namespace/{UNMANAGED_NAMESPACE}",
        f"--timeout={WAIT_SECONDS}s",
        check=False,
        timeout=WAIT_SECONDS + 30,
    )
    for kind, name in (("clusterqueue", CLUSTER_QUEUE), ("resourceflavor", FLAVOR)):
        cluster.kubectl(
            "delete",
            kind,
            name,
            "--ignore-not-found",
            f"--timeout={WAIT_SECONDS}s",
            check=False,
            timeout=WAIT_SECONDS + 30,
        )
    leftovers = [
        what
        for what, args in (
            ("namespace " + NAMESPACE, ("namespace", NAMESPACE)),
            ("namespace " + UNMANAGED_NAMESPACE, ("namespace", UNMANAGED_NAMESPACE)),
            ("ClusterQueue " + CLUSTER_QUEUE, ("clusterqueue", CLUSTER_QUEUE)),
            ("ResourceFlavor " + FLAVOR, ("resourceflavor", FLAVOR)),
        )
        if cluster.kubectl("get", *args, check=False).returncode == 0
    ]
    assert not leftovers, f"not removed after {WAIT_SECONDS}s: {leftovers}"


def test_jobset_is_admitted_and_its_controller_creates_jobs_and_pods(
    cluster: Cluster, smoke: Path
) -> None:
    _require("jobset")
    replicated = {
        "name": "workers",
        "replicas": 2,
        "template": {"spec": {"parallelism": 1, "completions": 1, "template": _pod("js")}},
    }
    jobset = _queued(
        "JobSet", "jobset.x-k8s.io/v1alpha2", "smoke-jobset", {"replicatedJobs": [replicated]}
    )
    _apply(cluster, smoke / "jobset.json", [jobset])

    workload = _admitted_workload(cluster, "JobSet", "smoke-jobset")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("workers", 2)]
    jobs = wait_until(
        "the JobSet controller's two child Jobs",
        lambda: (
            found
            if len(found := _owned_by(_items(cluster, "jobs"), "JobSet", "smoke-jobset")) == 2
            else None
        ),
    )
    for job in jobs:
        name = job["metadata"]["name"]
        wait_until(
            f"a Pod of child Job {name}",
            lambda name=name: _items(cluster, "pods", "-l", f"job-name={name}"),  # type: ignore[misc]
        )
    assert cluster.get_json("jobset", "smoke-jobset", "-n", NAMESPACE)["spec"]["suspend"] is False


def test_trainjob_is_admitted_and_the_trainer_creates_its_jobset(
    cluster: Cluster, smoke: Path
) -> None:
    _require("trainer")
    trainjob = _queued(
        "TrainJob",
        "trainer.kubeflow.org/v1alpha1",
        "smoke-trainjob",
        {"runtimeRef": {"name": "smoke-runtime", "kind": "TrainingRuntime"}},
    )
    _apply(cluster, smoke / "trainjob.json", [_training_runtime(), trainjob])

    _admitted_workload(cluster, "TrainJob", "smoke-trainjob")
    if not _controller_runs("trainer"):
        return

    def running_jobset() -> list[dict[str, Any]] | None:
        found = _owned_by(_items(cluster, "jobsets"), "TrainJob", "smoke-trainjob")
        return found if found and found[0]["spec"].get("suspend") is False else None

    jobset = wait_until("the Trainer's JobSet for smoke-trainjob, unsuspended", running_jobset)[0]
    wait_until(
        "the JobSet controller's Jobs for the TrainJob's JobSet",
        lambda: _owned_by(_items(cluster, "jobs"), "JobSet", jobset["metadata"]["name"]),
    )


def test_rayjob_is_admitted_and_kuberay_creates_its_raycluster(
    cluster: Cluster, smoke: Path
) -> None:
    _require("kuberay")
    rayjob = _queued(
        "RayJob",
        "ray.io/v1",
        "smoke-rayjob",
        {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": _ray_cluster_spec(),
        },
    )
    _apply(cluster, smoke / "rayjob.json", [rayjob])

    workload = _admitted_workload(cluster, "RayJob", "smoke-rayjob")
    pod_sets = {p["name"]: p["count"] for p in workload["spec"]["podSets"]}
    # The submitter Job (K8sJobMode, the default) is a pod set of its own.
    assert pod_sets == {"head": 1, "workers": 1, "submitter": 1}
    if not _controller_runs("kuberay"):
        return
    wait_until(
        "KubeRay's RayCluster for smoke-rayjob",
        lambda: _owned_by(_items(cluster, "rayclusters"), "RayJob", "smoke-rayjob"),
    )


def test_raycluster_is_admitted_and_kuberay_creates_its_pods(cluster: Cluster, smoke: Path) -> None:
    _require("kuberay")
    raycluster = _queued("RayCluster", "ray.io/v1", "smoke-raycluster", _ray_cluster_spec())
    _apply(cluster, smoke / "raycluster.json", [raycluster])

    _admitted_workload(cluster, "RayCluster", "smoke-raycluster")
    if not _controller_runs("kuberay"):
        return
    pods = wait_until(
        "KubeRay's head and worker Pods of smoke-raycluster",
        lambda: (
            found
            if len(found := _owned_by(_items(cluster, "pods"), "RayCluster", "smoke-raycluster"))
            == 2
            else None
        ),
    )
    node_types = sorted(p["metadata"]["labels"].get("ray.io/node-type", "") for p in pods)
    assert node_types == ["head", "worker"]


def test_leaderworkerset_is_admitted_and_its_controller_creates_statefulsets(
    cluster: Cluster, smoke: Path
) -> None:
    _require("lws")
    lws = _queued(
        "LeaderWorkerSet",
        "leaderworkerset.x-k8s.io/v1",
        "smoke-lws",
        {
            "replicas": 1,
            # LWS's own defaulting webhook sets this; spelled out so that the object is valid also
            # where the LWS controller (and so its webhook) is not started.
            "rolloutStrategy": {"type": "RollingUpdate"},
            "leaderWorkerTemplate": {"size": 2, "workerTemplate": _pod("lws")},
        },
    )
    _apply(cluster, smoke / "lws.json", [lws])

    _admitted_workload(cluster, "LeaderWorkerSet", "smoke-lws")
    if not _controller_runs("lws"):
        return
    selector = "leaderworkerset.sigs.k8s.io/name=smoke-lws"
    statefulsets = wait_until(
        "the LWS controller's leader and worker StatefulSets",
        lambda: (
            found if len(found := _items(cluster, "statefulsets", "-l", selector)) == 2 else None
        ),
    )
    assert sorted(s["metadata"]["name"] for s in statefulsets) == ["smoke-lws", "smoke-lws-0"]
    pods = wait_until(
        "the StatefulSets' leader and worker Pods",
        lambda: (found if len(found := _items(cluster, "pods", "-l", selector)) == 2 else None),
    )
    # Admitted: Kueue has lifted its scheduling gate from every Pod of the group.
    wait_until(
        "Kueue to ungate the LWS Pods",
        lambda: all(
            not p["spec"].get("schedulingGates") for p in _items(cluster, "pods", "-l", selector)
        ),
    )
    assert {p["metadata"]["name"] for p in pods} == {"smoke-lws-0", "smoke-lws-0-1"}


def test_pod_integration_manages_opted_in_namespaces_only(cluster: Cluster, smoke: Path) -> None:
    """A queued Pod gets a Workload where the namespace opted in, and is left alone elsewhere."""
    managed = _queued("Pod", "v1", "smoke-pod", _pod("smoke-pod")["spec"])
    unmanaged = json.loads(json.dumps(managed))
    unmanaged["metadata"]["namespace"] = UNMANAGED_NAMESPACE
    # Unmanaged, so no flavor keeps it off the Nodes: a bound Pod could not be deleted without a
    # kubelet, and would take a scenario Node's capacity.
    unmanaged["spec"]["nodeSelector"] = {"kueue-graphql.example/integrations-smoke": "nowhere"}
    _apply(cluster, smoke / "pods.json", [managed, unmanaged])

    _admitted_workload(cluster, "Pod", "smoke-pod")
    pod = cluster.get_json("pod", "smoke-pod", "-n", UNMANAGED_NAMESPACE)
    assert not pod["spec"].get("schedulingGates"), pod["spec"].get("schedulingGates")
    workloads = cluster.get_json("workloads", "-n", UNMANAGED_NAMESPACE)["items"]
    assert workloads == []


@pytest.mark.parametrize("name", [c.name for c in CONTROLLERS])
def test_controller_runs(cluster: Cluster, name: str) -> None:
    """A started controller answers readyz on its loopback health port; the others show up as
    skipped in the run's summary (their children were not checked above)."""
    _require(name)
    if not _controller_runs(name):
        pytest.skip(f"{name} is not started (tests/cluster/integrations.py, STARTED)")
    port = json.loads((cluster.state_dir / "ports.json").read_text())[f"{name}-health"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as response:
        assert response.status == 200
