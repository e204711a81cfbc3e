"""The request context of one diagnosis: the input with its Observed markers resolved, plus the
names derived once (namespace, LocalQueue, ClusterQueue, cohort) and the Pods that belong to it.
"""

from __future__ import annotations

from kueue_graphql.diagnosis.model import DiagnosisInput
from kueue_graphql.diagnosis.pods import pods_of
from kueue_graphql.kueue.model import KubeObject, ObjectRef, known
from kueue_graphql.kueue.objects import (
    QUEUE_NAME_ANNOTATION,
    QUEUE_NAME_LABEL,
    events_for,
    labels,
    mapping,
    name,
    namespace,
    text,
    uid,
)
from kueue_graphql.kueue.vocabulary import KUEUE_API

__all__ = ["Context"]


def _queue_name(owner: KubeObject | None, workload: KubeObject | None) -> str | None:
    if workload is not None:
        queue = text(workload, "spec", "queueName")
        if queue:
            return queue
    if owner is not None:
        value = labels(owner).get(QUEUE_NAME_LABEL) or mapping(
            owner, "metadata", "annotations"
        ).get(QUEUE_NAME_ANNOTATION)
        if isinstance(value, str) and value:
            return value
    return None


class Context:
    """The input with markers resolved, plus names derived once."""

    def __init__(self, inp: DiagnosisInput) -> None:
        self.inp = inp
        self.owner = known(inp.owner)
        self.workload = known(inp.workload)
        self.events = known(inp.events) or []
        self.local_queue = known(inp.local_queue)
        self.cluster_queue = known(inp.cluster_queue)
        self.namespace = (
            namespace(self.workload)
            if self.workload is not None
            else (namespace(self.owner) if self.owner is not None else None)
        )
        self.queue_name = _queue_name(self.owner, self.workload)
        admitted_cq = text(self.workload, "status", "admission", "clusterQueue")
        self.cq_name = (
            admitted_cq
            or (text(self.local_queue, "spec", "clusterQueue") if self.local_queue else None)
            or (name(self.cluster_queue) if self.cluster_queue else None)
        )
        self.nodes = known(inp.nodes) or []
        all_pods = known(inp.pods)
        self.pods_readable = all_pods is not None
        self.pods = pods_of(self.owner, self.workload, all_pods or [])

    def lq_ref(self) -> ObjectRef | None:
        if not self.queue_name:
            return None
        return ObjectRef("LocalQueue", self.queue_name, self.namespace, KUEUE_API)

    def cq_ref(self) -> ObjectRef | None:
        if not self.cq_name:
            return None
        return ObjectRef("ClusterQueue", self.cq_name, None, KUEUE_API)

    def cohort_ref(self) -> ObjectRef | None:
        if self.cluster_queue is None:
            return None
        cohort = text(self.cluster_queue, "spec", "cohortName")
        return ObjectRef("Cohort", cohort, None, KUEUE_API) if cohort else None

    def workload_events(self) -> list[KubeObject]:
        if self.workload is None:
            return []
        return list(events_for(self.events, "Workload", name(self.workload), uid(self.workload)))
