"""What the resolvers ask for, without GraphQL: reads and the lookups built on them.

`KueueReader` is the one interface the resolvers see. Each read mode implements it; the
resolvers never know which one serves them. Nothing here imports strawberry, so the lookups (a
Workload for its owner, the Workloads of a queue, cohort members, the diagnosis' input) are
plain async functions over JSON objects.
"""

from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.paging import Page, PageRequest, order_key, page_of
from kueue_graphql.lookups.apiserver import ApiServerReader
from kueue_graphql.lookups.diagnosis import (
    diagnosis_input_for_owner,
    diagnosis_input_for_workload,
)
from kueue_graphql.lookups.observed import observe
from kueue_graphql.lookups.owner_pods import owner_pods
from kueue_graphql.lookups.reader import NO_OWNER_READS, KueueReader, OwnerReads
from kueue_graphql.lookups.selection import flavor_names, workload_matches

__all__ = [
    "NO_OWNER_READS",
    "Access",
    "ApiServerReader",
    "KueueReader",
    "OwnerReads",
    "Page",
    "PageRequest",
    "diagnosis_input_for_owner",
    "diagnosis_input_for_workload",
    "flavor_names",
    "observe",
    "order_key",
    "owner_pods",
    "page_of",
    "workload_matches",
]
