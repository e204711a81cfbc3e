"""The root Query, composed from each kind's root fields.

Adding a root field for a new concept (e.g. a diagnosis) means writing its `...Query` class in
its own module and adding it to ROOT_FIELD_GROUPS.
"""

from __future__ import annotations

from strawberry.tools import merge_types

from kueue_graphql.graph.admissioncheck import AdmissionCheckQuery
from kueue_graphql.graph.clusterqueue import ClusterQueueQuery
from kueue_graphql.graph.cohort import CohortQuery
from kueue_graphql.graph.diagnosis import DiagnosisQuery
from kueue_graphql.graph.event import EventQuery
from kueue_graphql.graph.job import JobQuery
from kueue_graphql.graph.jobset import JobSetQuery
from kueue_graphql.graph.kubernetes_node import KubernetesNodeQuery
from kueue_graphql.graph.localqueue import LocalQueueQuery
from kueue_graphql.graph.namespace import NamespaceQuery
from kueue_graphql.graph.node_query import NodeQuery
from kueue_graphql.graph.pod import PodQuery
from kueue_graphql.graph.priorityclass import WorkloadPriorityClassQuery
from kueue_graphql.graph.rayjob import RayJobQuery
from kueue_graphql.graph.resourceflavor import ResourceFlavorQuery
from kueue_graphql.graph.topology import TopologyQuery
from kueue_graphql.graph.viewer import ViewerQuery
from kueue_graphql.graph.whatif import WhatIfQuery
from kueue_graphql.graph.workload import WorkloadQuery

ROOT_FIELD_GROUPS: tuple[type, ...] = (
    ViewerQuery,
    NodeQuery,
    WorkloadQuery,
    LocalQueueQuery,
    ClusterQueueQuery,
    CohortQuery,
    ResourceFlavorQuery,
    AdmissionCheckQuery,
    WorkloadPriorityClassQuery,
    TopologyQuery,
    JobQuery,
    JobSetQuery,
    RayJobQuery,
    PodQuery,
    EventQuery,
    KubernetesNodeQuery,
    NamespaceQuery,
    DiagnosisQuery,
    WhatIfQuery,
)

Query = merge_types("Query", ROOT_FIELD_GROUPS)
