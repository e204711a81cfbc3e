"""The API resources the service reads, and where they live on the API server."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from kueue_graphql.kueue.vocabulary import (
    KUEUE_API_VERSION,
    KUEUE_GROUP,
    VISIBILITY_API_VERSION,
    VISIBILITY_GROUP,
)

KUEUE_VERSION = KUEUE_API_VERSION


@dataclass(frozen=True)
class Resource:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        # Names are checked before a read (core/names.py); quoting keeps any that were not
        # inside their path segment.
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


WORKLOAD = Resource("Workload", KUEUE_GROUP, KUEUE_VERSION, "workloads", namespaced=True)
LOCAL_QUEUE = Resource("LocalQueue", KUEUE_GROUP, KUEUE_VERSION, "localqueues", namespaced=True)
CLUSTER_QUEUE = Resource("ClusterQueue", KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", False)
COHORT = Resource("Cohort", KUEUE_GROUP, KUEUE_VERSION, "cohorts", namespaced=False)
RESOURCE_FLAVOR = Resource("ResourceFlavor", KUEUE_GROUP, KUEUE_VERSION, "resourceflavors", False)
ADMISSION_CHECK = Resource("AdmissionCheck", KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", False)
WORKLOAD_PRIORITY_CLASS = Resource(
    "WorkloadPriorityClass", KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses", False
)
TOPOLOGY = Resource("Topology", KUEUE_GROUP, KUEUE_VERSION, "topologies", namespaced=False)
JOB = Resource("Job", "batch", "v1", "jobs", namespaced=True)
PRIORITY_CLASS = Resource(
    "PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False
)
POD = Resource("Pod", "", "v1", "pods", namespaced=True)
EVENT = Resource("Event", "", "v1", "events", namespaced=True)
NODE = Resource("Node", "", "v1", "nodes", namespaced=False)
NAMESPACE = Resource("Namespace", "", "v1", "namespaces", namespaced=False)
DEPLOYMENT = Resource("Deployment", "apps", "v1", "deployments", namespaced=True)
STATEFUL_SET = Resource("StatefulSet", "apps", "v1", "statefulsets", namespaced=True)
JOB_SET = Resource("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", namespaced=True)
# KubeRay (github.com/ray-project/kuberay/ray-operator v1.6.0, the version Kueue v0.17.0 requires).
RAY_JOB = Resource("RayJob", "ray.io", "v1", "rayjobs", namespaced=True)
RAY_CLUSTER = Resource("RayCluster", "ray.io", "v1", "rayclusters", namespaced=True)

# Kueue's visibility API (an aggregated API served by the Kueue manager): pending workloads in
# queue order, as the subresource `pendingworkloads` of a LocalQueue.
VISIBILITY_LOCAL_QUEUE = Resource(
    "LocalQueue", VISIBILITY_GROUP, VISIBILITY_API_VERSION, "localqueues", namespaced=True
)

# Owner kinds `workloadFor` can navigate by type, keyed by Kubernetes kind: the kinds whose
# Workload Kueue's job framework owns by an ownerReference (kueue/owners.py says how each one's
# Pods are found). A Deployment owns no Workload: Kueue makes one per Pod (pod integration).
OWNER_KINDS = {
    "Job": JOB,
    "JobSet": JOB_SET,
    "RayJob": RAY_JOB,
    "RayCluster": RAY_CLUSTER,
    "StatefulSet": STATEFUL_SET,
    "Pod": POD,
}

# The kinds whose pod sets whatIf(fromJob) computes as Kueue does (lookups/whatif.py).
WHAT_IF_KINDS = ("Job", "JobSet", "RayJob", "RayCluster")

# kubectl's short names, as the API server's discovery lists them (`kubectl api-resources`):
# JobSet's CRD (sigs.k8s.io/jobset v0.11.1) and KubeRay's RayJob and RayCluster CRDs (ray-operator
# v1.6.0, config/crd/bases) declare none, batch Jobs have none.
SHORT_NAMES = {
    "StatefulSet": ("sts",),
    "Pod": ("po",),
    "Deployment": ("deploy",),
    "Workload": ("wl",),
}
# Kinds a target may name: the owners, Deployments (whose Pods own the Workloads: refused with
# that said) and Workloads.
TARGET_KINDS = (*OWNER_KINDS.values(), DEPLOYMENT, WORKLOAD)


def canonical_kind(kind: str) -> str:
    """`job`, `jobs`, `Job`, `jobs.batch`, `JobSet`, `jobsets.jobset.x-k8s.io`, `sts`, `wl`,
    `workloads.kueue.x-k8s.io` ... as kubectl users type them, to the Kind (`Job`, `Workload`).
    Other kinds come back as given; owner references are matched without regard to case."""
    wanted = kind.strip().lower()
    for resource in TARGET_KINDS:
        names = {resource.kind.lower(), resource.plural, resource.plural.removesuffix("s")}
        names.update(SHORT_NAMES.get(resource.kind, ()))
        qualified = {f"{n}.{resource.group}" for n in names} if resource.group else set()
        if wanted in names | qualified:
            return resource.kind
    return kind.strip()
