"""A batch/v1 Job's and a JobSet's pod sets as Kueue's integrations make them (Kueue v0.17.0
pkg/controller/jobs/job/job_controller.go and pkg/controller/jobs/jobset/jobset_controller.go,
`PodSets`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_graphql.kueue.model import KubeObject
from kueue_graphql.kueue.objects import items, mapping
from kueue_graphql.kueue.podsets import per_pod_requests
from kueue_graphql.kueue.topology import podset_topology_request
from kueue_graphql.whatif.model import ProposedPodSet

__all__ = ["pod_sets_from_job", "pod_sets_from_job_set"]


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


def pod_sets_from_job(job: KubeObject) -> list[ProposedPodSet]:
    """The pod set Kueue makes for a batch/v1 Job (pkg/controller/jobs/job: one pod set
    "main", count = parallelism, or completions when smaller), per Pod as Kueue counts it."""
    job_spec = mapping(job, "spec")
    return [_pod_set("main", _pods_per_job(job_spec), mapping(job_spec, "template"))]


def pod_sets_from_job_set(job_set: KubeObject) -> list[ProposedPodSet]:
    """The pod sets Kueue makes for a JobSet (pkg/controller/jobs/jobset: one per replicated
    job, named after it, count = replicas x the Job's pods (`PodsCountPerReplica`: parallelism,
    default 1, or completions when smaller)), in spec order."""
    out = []
    for replicated in items(job_set, "spec", "replicatedJobs"):
        job_spec = mapping(replicated, "template", "spec")
        replicas = replicated.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            replicas = 1
        count = replicas * _pods_per_job(job_spec)
        out.append(
            _pod_set(str(replicated.get("name") or ""), count, mapping(job_spec, "template"))
        )
    return out
