"""whatif/job.py: a RayJob's and a RayCluster's pod sets as Kueue v0.17.0 makes them
(rayjob_controller.go `PodSets`, raycluster/common.go `BuildPodSets`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from kueue_graphql.lookups.reader import KueueReader
from kueue_graphql.lookups.whatif import PriorityClassRef, job_pod_sets
from kueue_graphql.whatif import pod_sets_of, pod_specs_from_ray_job, pod_specs_of_ray_cluster


def _pod(cpu: str) -> dict[str, Any]:
    return {
        "containers": [{"name": "ray", "image": "ray:2", "resources": {"requests": {"cpu": cpu}}}]
    }


def _ray_job(mode: str | None, submitter: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "rayClusterSpec": {
            "headGroupSpec": {"template": {"spec": _pod("1")}},
            "workerGroupSpecs": [
                {"groupName": "Small-Group", "replicas": 3, "template": {"spec": _pod("250m")}},
                {
                    "groupName": "tpu",
                    "replicas": 2,
                    "numOfHosts": 4,
                    "template": {"spec": _pod("2")},
                },
                {"groupName": "unset", "template": {"spec": _pod("100m")}},
            ],
        }
    }
    if mode is not None:
        spec["submissionMode"] = mode
    if submitter is not None:
        spec["submitterPodTemplate"] = {"spec": submitter}
    return {"kind": "RayJob", "spec": spec}


def test_head_workers_and_the_default_submitter() -> None:
    # K8sJobMode is the CRD's default: unset counts as it.
    for mode in (None, "K8sJobMode"):
        sets = pod_sets_of(pod_specs_from_ray_job(_ray_job(mode)))
        assert [(p.name, p.count) for p in sets] == [
            ("head", 1),
            ("small-group", 3),  # NewPodSetReference: lower case
            ("tpu", 8),  # replicas x numOfHosts
            ("unset", 1),  # Replicas nil -> 1
            ("submitter", 1),
        ]
        submitter = sets[-1].per_pod
        assert submitter["cpu"] == Decimal("0.5")
        assert submitter["memory"] == Decimal(200 * 2**20)


def test_other_submission_modes_have_no_submitter_and_a_custom_one_is_counted() -> None:
    for mode in ("HTTPMode", "InteractiveMode", "SidecarMode"):
        names = [n for n, _, _ in pod_specs_from_ray_job(_ray_job(mode))]
        assert "submitter" not in names
    custom = pod_sets_of(pod_specs_from_ray_job(_ray_job("K8sJobMode", _pod("3"))))
    assert custom[-1].name == "submitter"
    assert custom[-1].per_pod["cpu"] == Decimal(3)


def test_a_rayclusters_pod_sets_have_no_submitter() -> None:
    cluster = {"kind": "RayCluster", "spec": _ray_job(None)["spec"]["rayClusterSpec"]}
    assert [(n, c) for n, c, _ in pod_specs_of_ray_cluster(cluster)] == [
        ("head", 1),
        ("small-group", 3),
        ("tpu", 8),
        ("unset", 1),
    ]


class _Reads:
    """Answers `get` with one object: all `job_pod_sets` reads."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    async def get(self, resource: Any, namespace: str | None, name: str) -> dict[str, Any]:
        return self.obj


async def test_the_priority_class_is_the_first_pod_sets_that_names_one() -> None:
    # Kueue's ExtractPriority: the first pod set with a priorityClassName, here a worker group's
    # (the head names none); the priority-class label wins over it.
    ray_job = _ray_job("K8sJobMode")
    ray_job["metadata"] = {"labels": {"kueue.x-k8s.io/queue-name": "lq"}}
    workers = ray_job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    workers[1]["template"]["spec"]["priorityClassName"] = "high"
    workers[2]["template"]["spec"]["priorityClassName"] = "low"
    reads = cast("KueueReader", _Reads(ray_job))
    pod_sets, queue, ref = await job_pod_sets(reads, "ns", "rj", "RayJob")
    assert [p.name for p in pod_sets][-1] == "submitter"
    assert queue == "lq"
    assert ref == PriorityClassRef("high", pod_only=True)
    ray_job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "wpc"
    _, _, ref = await job_pod_sets(reads, "ns", "rj", "RayJob")
    assert ref == PriorityClassRef("wpc", workload_only=True)


async def test_a_jobsets_priority_class_may_come_from_a_later_replicated_job() -> None:
    def replicated(name: str, priority_class: str | None) -> dict[str, Any]:
        pod = _pod("1")
        if priority_class:
            pod["priorityClassName"] = priority_class
        return {"name": name, "replicas": 1, "template": {"spec": {"template": {"spec": pod}}}}

    job_set = {
        "kind": "JobSet",
        "metadata": {},
        "spec": {"replicatedJobs": [replicated("driver", None), replicated("workers", "high")]},
    }
    _, _, ref = await job_pod_sets(cast("KueueReader", _Reads(job_set)), "ns", "js", "JobSet")
    assert ref == PriorityClassRef("high", pod_only=True)
