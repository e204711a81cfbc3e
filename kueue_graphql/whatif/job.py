"""A batch/v1 Job's, a JobSet's, a RayJob's and a RayCluster's pod sets as Kueue's integrations
make them (Kueue v0.17.0 pkg/controller/jobs/job/job_controller.go,
pkg/controller/jobs/jobset/jobset_controller.go, pkg/controller/jobs/rayjob/rayjob_controller.go
and pkg/controller/jobs/raycluster/common.go, `PodSets`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_graphql.kueue.model import KubeObject
from kueue_graphql.kueue.objects import items, mapping
from kueue_graphql.kueue.podsets import per_pod_requests
from kueue_graphql.kueue.topology import podset_topology_request
from kueue_graphql.whatif.model import ProposedPodSet

__all__ = [
    "PodSpecSet",
    "pod_sets_from_job",
    "pod_sets_from_job_set",
    "pod_sets_of",
    "pod_specs_from_job",
    "pod_specs_from_job_set",
    "pod_specs_from_ray_cluster",
    "pod_specs_from_ray_job",
    "pod_specs_of_ray_cluster",
]

# A pod set before its requests are counted: name, count and its Pod template (metadata, for
# Kueue's TAS annotations, and spec).
PodSpecSet = tuple[str, int, Mapping[str, Any]]

# The submitter Pod Kueue counts for a RayJob in K8sJobMode without `submitterPodTemplate`
# (rayjob_controller.go `getSubmitterTemplate`, copied there from KubeRay's default).
RAY_SUBMITTER_REQUESTS = {"cpu": "500m", "memory": "200Mi"}
RAY_SUBMITTER_LIMITS = {"cpu": "1", "memory": "1Gi"}


def _pods_per_job(job_spec: Mapping[str, Any]) -> int:
    """parallelism (default 1), or completions when smaller."""
    parallelism = job_spec.get("parallelism")
    count = parallelism if isinstance(parallelism, int) and not isinstance(parallelism, bool) else 1
    completions = job_spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        count = min(count, completions)
    return count


def _pod_set(name: str, count: int, template: Mapping[str, Any]) -> ProposedPodSet:
    """A pod set from its Pod template: requests, node constraints and (Kueue's
    `kueue.x-k8s.io/podset-*-topology` annotations) its TAS request."""
    pod_spec = mapping(template, "spec")
    terms = items(
        pod_spec,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    return ProposedPodSet(
        name=name,
        count=count,
        per_pod=per_pod_requests(pod_spec),
        node_selector={str(k): str(v) for k, v in mapping(pod_spec, "nodeSelector").items()},
        affinity_terms=tuple(terms),
        tolerations=tuple(items(pod_spec, "tolerations")),
        topology=podset_topology_request({"template": template}),
    )


def pod_specs_from_job(job: KubeObject) -> list[PodSpecSet]:
    """The pod set Kueue makes for a batch/v1 Job (pkg/controller/jobs/job: one pod set
    "main", count = parallelism, or completions when smaller)."""
    job_spec = mapping(job, "spec")
    return [("main", _pods_per_job(job_spec), mapping(job_spec, "template"))]


def pod_specs_from_job_set(job_set: KubeObject) -> list[PodSpecSet]:
    """The pod sets Kueue makes for a JobSet (pkg/controller/jobs/jobset: one per replicated
    job, named after it, count = replicas x the Job's pods (`PodsCountPerReplica`: parallelism,
    default 1, or completions when smaller)), in spec order."""
    out: list[PodSpecSet] = []
    for replicated in items(job_set, "spec", "replicatedJobs"):
        job_spec = mapping(replicated, "template", "spec")
        count = _int(replicated.get("replicas"), 1) * _pods_per_job(job_spec)
        template = mapping(job_spec, "template")
        out.append((str(replicated.get("name") or ""), count, template))
    return out


def pod_sets_of(specs: list[PodSpecSet]) -> list[ProposedPodSet]:
    """The pod sets, per Pod as Kueue counts them."""
    return [_pod_set(n, count, template) for n, count, template in specs]


def pod_sets_from_job(job: KubeObject) -> list[ProposedPodSet]:
    return pod_sets_of(pod_specs_from_job(job))


def pod_sets_from_job_set(job_set: KubeObject) -> list[ProposedPodSet]:
    return pod_sets_of(pod_specs_from_job_set(job_set))


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def pod_specs_from_ray_cluster(cluster_spec: Mapping[str, Any]) -> list[PodSpecSet]:
    """A RayClusterSpec's pod sets (raycluster/common.go `BuildPodSets`): "head" (1 Pod), then
    one per worker group in spec order, named after its groupName in lower case
    (`NewPodSetReference`), count = replicas (1 when unset) x numOfHosts when above 1."""
    out: list[PodSpecSet] = [("head", 1, mapping(cluster_spec, "headGroupSpec", "template"))]
    for group in items(cluster_spec, "workerGroupSpecs"):
        count = _int(group.get("replicas"), 1)
        hosts = _int(group.get("numOfHosts"), 1)
        if hosts > 1:
            count *= hosts
        out.append((str(group.get("groupName") or "").lower(), count, mapping(group, "template")))
    return out


def _ray_submitter_template(ray_job: KubeObject) -> Mapping[str, Any]:
    custom = mapping(ray_job, "spec", "submitterPodTemplate")
    if custom:
        return custom
    head_pod = mapping(ray_job, "spec", "rayClusterSpec", "headGroupSpec", "template", "spec")
    head = items(head_pod, "containers")
    return {
        "spec": {
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": head[0].get("image") if head else None,
                    "resources": {
                        "requests": dict(RAY_SUBMITTER_REQUESTS),
                        "limits": dict(RAY_SUBMITTER_LIMITS),
                    },
                }
            ],
            "restartPolicy": "Never",
        }
    }


def pod_specs_from_ray_job(ray_job: KubeObject) -> list[PodSpecSet]:
    """A RayJob's pod sets (rayjob_controller.go `PodSets`): its RayClusterSpec's, then
    "submitter" (1 Pod) when `submissionMode` is K8sJobMode (the CRD's default, so also when
    unset): `submitterPodTemplate`, else Kueue's default submitter Pod."""
    out = pod_specs_from_ray_cluster(mapping(ray_job, "spec", "rayClusterSpec"))
    mode = mapping(ray_job, "spec").get("submissionMode") or "K8sJobMode"
    if mode == "K8sJobMode":
        out.append(("submitter", 1, _ray_submitter_template(ray_job)))
    return out


def pod_specs_of_ray_cluster(ray_cluster: KubeObject) -> list[PodSpecSet]:
    """A RayCluster's pod sets (raycluster_controller.go `PodSets`): head and worker groups."""
    return pod_specs_from_ray_cluster(mapping(ray_cluster, "spec"))
