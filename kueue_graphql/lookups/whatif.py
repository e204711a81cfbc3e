"""whatIf's input, loaded as the caller (and, where the disclosure policy allows, as the service).

The caller must be allowed to `get` the LocalQueue (and, for `fromJob`, the Job): those reads
are the caller's own and fail with FORBIDDEN / NOT_FOUND like any read. Nothing is created.
"""

from __future__ import annotations

from collections.abc import Sequence

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import BadRequestError, ForbiddenError, NotFoundError
from kueue_graphql.diagnosis.whatif import ProposedPodSet, WhatIfInput, pod_sets_from_job
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import JOB, LOCAL_QUEUE, NAMESPACE
from kueue_graphql.lookups.disclosure import DisclosurePolicy, QuotaView, quota_view
from kueue_graphql.lookups.reader import KueueReader

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"

__all__ = ["WhatIfLoad", "job_pod_sets", "load_what_if"]


async def job_pod_sets(
    reader: KueueReader, namespace: str, name: str
) -> tuple[list[ProposedPodSet], str | None]:
    """The pod sets Kueue would make for an existing Job, and the LocalQueue it names."""
    job = await reader.get(JOB, namespace, name)
    labels = (job.get("metadata") or {}).get("labels") or {}
    queue = labels.get(QUEUE_NAME_LABEL)
    return pod_sets_from_job(job), str(queue) if queue else None


class WhatIfLoad:
    """The loaded input plus where its ClusterQueue figures came from."""

    def __init__(self, what_if_input: WhatIfInput, view: QuotaView) -> None:
        self.input = what_if_input
        self.view = view


async def _namespace_labels(
    reader: KueueReader, view: QuotaView, namespace: str
) -> dx.Observed[dict[str, str]]:
    cq = view.cluster_queue
    selector = cq.get("spec", {}).get("namespaceSelector") if isinstance(cq, dict) else None
    if not selector:
        # `{}` selects every namespace: no read needed.
        return dx.Absent("no namespaceSelector to check")
    try:
        ns = await reader.get(NAMESPACE, None, namespace)
    except (ForbiddenError, NotFoundError) as error:  # then the selector is not checked
        return dx.Forbidden(str(error))
    return dict((ns.get("metadata") or {}).get("labels") or {})


async def load_what_if(
    reader: KueueReader,
    policy: DisclosurePolicy,
    namespace: str,
    local_queue: str | None,
    pod_sets: Sequence[ProposedPodSet],
) -> WhatIfLoad:
    if not local_queue:
        raise BadRequestError("whatIf needs a localQueue (or a fromJob whose Job names one)")
    lq: JsonObject = await reader.get(LOCAL_QUEUE, namespace, local_queue)
    cq_name = str((lq.get("spec") or {}).get("clusterQueue") or "")
    if not cq_name:
        raise BadRequestError(f"LocalQueue {local_queue} names no ClusterQueue")
    view = await quota_view(reader, policy, cq_name)
    labels = await _namespace_labels(reader, view, namespace)
    return WhatIfLoad(
        WhatIfInput(
            namespace=namespace,
            local_queue=lq,
            pod_sets=list(pod_sets),
            cluster_queue=view.cluster_queue,
            resource_flavors=view.resource_flavors,
            cluster_queues=view.cluster_queues,
            cohorts=view.cohorts,
            namespace_labels=labels,
            show_numbers=view.show_numbers,
            hidden_because=view.detail,
        ),
        view,
    )
