"""Kueue's borrowing level: how far up the cohort tree a request's quota comes from.

A port of Kueue v0.17.0 pkg/scheduler/preemption/classical/hierarchical_preemption.go
`FindHeightOfLowestSubtreeThatFits` (with `getNodeHeight`), which the flavor assigner
(flavorassigner.go `fitsResourceQuota`) calls for every resource of a flavor, and of the
`borrowAfterPreemptions` of pkg/scheduler/preemption/preemption_oracle.go `SimulatePreemption`:

- a ClusterQueue whose usage plus the request stays within its nominal quota (`BorrowingWith`
  false), or without a cohort, borrows nothing: level 0;
- else the request, less what the queue keeps from its cohort (`LocalAvailable`), is carried up
  `PathParentToRoot`: the first cohort whose subtree quota takes it (usage + remaining within
  SubtreeQuota) gives the level, its height (the distance to its furthest leaf, so a cohort of
  ClusterQueues is 1, its parent at least 2; `getNodeHeight`); none: the root's height;
- the second value (`mayReclaimInHierarchy`) is whether that subtree is smaller than the whole
  tree, i.e. whether quota lent beyond it could be reclaimed; Kueue then simulates preemption.

The level is a height, not a distance from the ClusterQueue: it is comparable between the
flavors of one ClusterQueue (they share the path to the root), which is how Kueue uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from kueue_graphql.kueue.exact import exact_arithmetic
from kueue_graphql.kueue.quota import CohortTree, FlavorResource
from kueue_graphql.whatif.model import PreemptionCandidate
from kueue_graphql.whatif.preemption import without_targets

__all__ = ["level_after_preemption", "lowest_subtree_that_fits"]


@exact_arithmetic
def lowest_subtree_that_fits(
    tree: CohortTree, cq_name: str, fr: FlavorResource, value: Decimal
) -> tuple[int, bool]:
    """`FindHeightOfLowestSubtreeThatFits`: (borrowing level, may reclaim in the hierarchy) for
    `value` of `fr` (earlier pod sets' share included) in the ClusterQueue."""
    queue = tree.cluster_queue_node(cq_name)
    has_parent = tree.has_parent(queue)
    if not tree.borrowing_with(queue, fr, value) or not has_parent:
        return 0, has_parent
    remaining = value - tree.local_available(queue, fr)
    path = tree.path_parent_to_root(cq_name)
    for cohort in path:
        if not tree.borrowing_with(cohort, fr, remaining):
            return tree.height(cohort), tree.has_parent(cohort)
        remaining -= tree.local_available(cohort, fr)
    # No subtree takes it: the height of the whole tree.
    return tree.height(path[-1]), False


def level_after_preemption(
    tree: CohortTree,
    cq_name: str,
    fr: FlavorResource,
    value: Decimal,
    targets: Sequence[PreemptionCandidate],
) -> int:
    """`SimulatePreemption`'s borrowAfterPreemptions: the level once the targets (admitted
    Workloads of the ClusterQueue or of its cohort) are removed (`SimulateWorkloadRemoval`)."""
    level, _ = lowest_subtree_that_fits(without_targets(tree, cq_name, targets), cq_name, fr, value)
    return level
