"""A batch/v1 Job's pod sets as Kueue's job integration makes them
(Kueue v0.17.0 pkg/controller/jobs/job/job_controller.go, `PodSets`)."""

from __future__ import annotations

from kueue_graphql.kueue.model import KubeObject
from kueue_graphql.kueue.objects import items, mapping
from kueue_graphql.kueue.podsets import per_pod_requests
from kueue_graphql.whatif.model import ProposedPodSet

__all__ = ["pod_sets_from_job"]


def pod_sets_from_job(job: KubeObject) -> list[ProposedPodSet]:
    """The pod set Kueue makes for a batch/v1 Job (pkg/controller/jobs/job: one pod set
    "main", count = parallelism, or completions when smaller), per Pod as Kueue counts it."""
    spec = mapping(job, "spec")
    parallelism = spec.get("parallelism")
    count = parallelism if isinstance(parallelism, int) and not isinstance(parallelism, bool) else 1
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        count = min(count, completions)
    pod_spec = mapping(job, "spec", "template", "spec")
    terms = items(
        pod_spec,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    return [
        ProposedPodSet(
            name="main",
            count=count,
            per_pod=per_pod_requests(pod_spec),
            node_selector={str(k): str(v) for k, v in mapping(pod_spec, "nodeSelector").items()},
            affinity_terms=tuple(terms),
            tolerations=tuple(items(pod_spec, "tolerations")),
        )
    ]
