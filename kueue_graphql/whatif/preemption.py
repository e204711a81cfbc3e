"""Kueue's classical preemption, simulated for whatIf: which admitted Workloads it evicts.

A port of Kueue v0.17.0 pkg/scheduler/preemption (fair sharing off):

- candidates (classical/hierarchical_preemption.go): the ClusterQueue's own admitted Workloads
  under `withinClusterQueue`; with a parent and `reclaimWithinCohort` not Never, walking the
  queue's cohorts from its own up to the root, the Workloads of the other ClusterQueues of each
  subtree (skipping the subtree already walked, and every ClusterQueue or Cohort within its
  nominal quota of the resources needing preemption) under `reclaimWithinCohort`
  (common/preemption_policy.go `SatisfiesPreemptionPolicy`); only Workloads using one of those
  resources. Once a subtree takes the request within its quota (`QuantitiesFitInQuota`), the
  preemptor has hierarchical advantage over the Workloads there (InCohortReclamation whatever
  borrowing); otherwise a candidate of another queue may be preempted while the preemptor
  borrows only under `borrowWithinCohort` and below its `maxPriorityThreshold`
  (InCohortReclaimWhileBorrowing), else only if the preemptor then does not borrow;
- their order (common/ordering.go `CandidatesOrdering`): evicted first, other ClusterQueues'
  before the own, lower priority first, then the most recently admitted; hierarchy candidates,
  then priority candidates, then the own queue's (candidate_generator.go);
- the minimal set (preemption.go `classicalPreemptions`): candidates removed in order, skipping
  one whose ClusterQueue (or a Cohort up to the common ancestor) no longer exceeds its nominal
  quota, until the request fits (`workloadFits`: within Available, and without borrowing unless
  allowed); then those not needed put back, the last removed kept (`fillBackWorkloads`); tried
  with borrowing allowed and not, in Kueue's order.

The snapshot is the CohortTree of the ClusterQueue statuses; a Workload's removal takes its
reservation out of its ClusterQueue and the Cohorts above (`without_usage`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kueue_graphql.kueue.exact import exact_arithmetic
from kueue_graphql.kueue.model import KubeObject
from kueue_graphql.kueue.objects import mapping, name, text
from kueue_graphql.kueue.quota import CohortTree, FlavorResource, quotas_of
from kueue_graphql.whatif.model import ZERO, PreemptionCandidate, PreemptionTarget

__all__ = [
    "Preemptor",
    "preemption_policy",
    "preemption_targets",
    "with_targets",
    "without_targets",
]

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


def preemption_policy(cluster_queue: KubeObject, key: str) -> str:
    """The ClusterQueue's spec.preemption.<key> (withinClusterQueue, reclaimWithinCohort), Never
    by default."""
    return text(cluster_queue, "spec", "preemption", key) or "Never"


def _satisfies(policy: str, preemptor: int, candidate: PreemptionCandidate) -> bool:
    """`SatisfiesPreemptionPolicy`. LowerOrNewerEqualPriority also takes equal-priority Workloads
    queued after the preemptor: every admitted Workload was queued before one not created yet."""
    if policy in ("LowerPriority", "LowerOrNewerEqualPriority"):
        return preemptor > candidate.priority
    return policy == "Any"


@dataclass(frozen=True)
class _Elem:
    candidate: PreemptionCandidate
    queue: str
    lca: str | None
    """The Cohort node under which the preemptor found it (None: its own ClusterQueue)."""
    reason: str
    without_borrowing: bool
    """`ReclaimWithoutBorrowing`: preempted only if the preemptor then borrows nothing."""


def without_targets(
    tree: CohortTree, own_queue: str, targets: Sequence[PreemptionCandidate]
) -> CohortTree:
    """The tree once these Workloads' reservations are gone (`SimulateWorkloadRemoval`)."""
    return _moved(tree, own_queue, targets, back=False)


def with_targets(
    tree: CohortTree, own_queue: str, targets: Sequence[PreemptionCandidate]
) -> CohortTree:
    """The tree with these Workloads' reservations back (`AddWorkload`)."""
    return _moved(tree, own_queue, targets, back=True)


def _moved(
    tree: CohortTree, own_queue: str, targets: Sequence[PreemptionCandidate], *, back: bool
) -> CohortTree:
    for target in targets:
        queue = target.cluster_queue or own_queue
        if not tree.has(queue):
            continue
        for fr, value in target.reserved.items():
            if value > 0:
                moved = tree.with_usage if back else tree.without_usage
                tree = moved(queue, fr, value)
    return tree


def _within_nominal(tree: CohortTree, key: str, need: Sequence[FlavorResource]) -> bool:
    """`IsWithinNominalInResources`."""
    return not any(tree.borrowing_with(key, fr, ZERO) for fr in need)


@exact_arithmetic
def _fit_in_quota(
    tree: CohortTree, key: str, requests: Mapping[FlavorResource, Decimal]
) -> tuple[bool, dict[FlavorResource, Decimal]]:
    """`QuantitiesFitInQuota`: fits within the node's quota, and what is left for its parent."""
    fits = not any(tree.borrowing_with(key, fr, v) for fr, v in requests.items())
    remaining = {fr: max(ZERO, v - tree.local_available(key, fr)) for fr, v in requests.items()}
    return fits, remaining


Requests = Mapping[FlavorResource, Decimal]
Needs = Sequence[FlavorResource]


@dataclass(frozen=True)
class Preemptor:
    """The Workload-to-be as the preemption sees it: its ClusterQueue, its priority and the
    admitted Workloads it may preempt (those the caller may read)."""

    cluster_queue: KubeObject
    priority: int
    candidates: Sequence[PreemptionCandidate]


class _Search:
    def __init__(self, who: Preemptor, tree: CohortTree, requests: Requests, need: Needs) -> None:
        self.cq = who.cluster_queue
        self.queue = name(who.cluster_queue)
        self.tree = tree
        self.requests = requests
        self.need = need
        self.priority = who.priority
        candidates = who.candidates
        self.by_queue: dict[str, list[PreemptionCandidate]] = {}
        for c in candidates:
            self.by_queue.setdefault(c.cluster_queue or self.queue, []).append(c)
        borrow = mapping(self.cq, "spec", "preemption", "borrowWithinCohort")
        self.borrow_forbidden = borrow.get("policy") in (None, "Never")
        threshold = borrow.get("maxPriorityThreshold")
        self.threshold = threshold if isinstance(threshold, int) else None

    def _uses(self, c: PreemptionCandidate) -> bool:
        """`WorkloadUsesResources`: it was assigned a flavor/resource needing preemption."""
        return any(fr in c.reserved for fr in self.need)

    def _classify(self, c: PreemptionCandidate, queue: str, advantage: bool) -> _Elem | None:
        """`classifyPreemptionVariant`."""
        own = queue == self.queue
        policy = preemption_policy(self.cq, "withinClusterQueue" if own else "reclaimWithinCohort")
        if not self._uses(c) or not _satisfies(policy, self.priority, c):
            return None
        if own:
            return _Elem(c, queue, None, IN_CLUSTER_QUEUE, False)
        if advantage:
            return _Elem(c, queue, None, IN_COHORT_RECLAMATION, False)
        above = c.priority >= self.priority or (
            self.threshold is not None and c.priority > self.threshold
        )
        if self.borrow_forbidden or above:
            return _Elem(c, queue, None, IN_COHORT_RECLAMATION, True)
        return _Elem(c, queue, None, IN_COHORT_RECLAIM_WHILE_BORROWING, False)

    def _from_queue(self, queue: str, lca: str | None, advantage: bool) -> list[_Elem]:
        out = []
        for c in self.by_queue.get(queue, []):
            elem = self._classify(c, queue, advantage)
            if elem is not None:
                out.append(_Elem(c, queue, lca, elem.reason, elem.without_borrowing))
        return out

    def _in_subtree(
        self, node: str, root: str, skip: str | None, advantage: bool, out: list[_Elem]
    ) -> None:
        """`collectCandidatesInSubtree`."""
        children = self.tree.children(node)
        for child in children:
            cohort = self.tree.queue_name(child) is None and child != skip
            if cohort and not _within_nominal(self.tree, child, self.need):
                self._in_subtree(child, root, skip, advantage, out)
        for child in children:
            queue = self.tree.queue_name(child)
            if queue is None or queue == self.queue:
                continue
            if not _within_nominal(self.tree, child, self.need):
                out.extend(self._from_queue(queue, root, advantage))

    def ordered(self) -> tuple[list[_Elem], bool, bool]:
        """`NewCandidateIterator`: every candidate in Kueue's order, whether none is of another
        ClusterQueue, and whether none is a hierarchy candidate."""
        same: list[_Elem] = []
        if preemption_policy(self.cq, "withinClusterQueue") != "Never":
            same = self._from_queue(self.queue, None, False)
        hierarchy: list[_Elem] = []
        by_priority: list[_Elem] = []
        own_key = self.tree.cluster_queue_node(self.queue)
        if self.tree.has_parent(own_key) and preemption_policy(self.cq, "reclaimWithinCohort") != (
            "Never"
        ):
            advantage, remaining = _fit_in_quota(self.tree, own_key, self.requests)
            previous: str | None = None
            for cohort in self.tree.path_parent_to_root(self.queue):
                target = hierarchy if advantage else by_priority
                self._in_subtree(cohort, cohort, previous, advantage, target)
                fits, remaining = _fit_in_quota(self.tree, cohort, remaining)
                advantage = advantage or fits
                previous = cohort

        def order(elems: list[_Elem]) -> list[_Elem]:
            # CandidatesOrdering, its last keys first (stable sorts): UID, the most recently
            # admitted, then evicted first, other ClusterQueues' first, lower priority first.
            out = sorted(elems, key=lambda e: e.candidate.uid)
            out.sort(key=lambda e: e.candidate.admitted_at, reverse=True)
            out.sort(
                key=lambda e: (not e.candidate.evicted, e.queue == self.queue, e.candidate.priority)
            )
            return out

        groups = [order(hierarchy), order(by_priority), order(same)]
        evicted = [e for g in groups for e in g if e.candidate.evicted]
        rest = [e for g in groups for e in g if not e.candidate.evicted]
        return evicted + rest, not hierarchy and not by_priority, not hierarchy

    def _valid(self, tree: CohortTree, elem: _Elem, borrowing: bool) -> bool:
        """`candidateIsValid`, against the snapshot with the earlier removals."""
        if elem.queue == self.queue:
            return True
        if borrowing and elem.without_borrowing:
            return False
        if _within_nominal(tree, tree.cluster_queue_node(elem.queue), self.need):
            return False
        for node in tree.path_parent_to_root(elem.queue):
            if node == elem.lca:
                break
            if _within_nominal(tree, node, self.need):
                return False
        return True

    def _fits(self, tree: CohortTree, borrowing: bool) -> bool:
        """`workloadFits`."""
        key = tree.cluster_queue_node(self.queue)
        for fr, value in self.requests.items():
            if not borrowing and tree.borrowing_with(key, fr, value):
                return False
            if value > tree.available(self.queue, fr):
                return False
        return True

    def attempt(self, elems: Sequence[_Elem], borrowing: bool) -> list[_Elem]:
        """One pass of `classicalPreemptions`: remove until it fits, then put back."""
        removed: list[_Elem] = []
        tree = self.tree
        for elem in elems:
            if not self._valid(tree, elem, borrowing):
                continue
            removed.append(elem)
            tree = without_targets(tree, self.queue, [elem.candidate])
            if self._fits(tree, borrowing):
                # fillBackWorkloads: in reverse order, a Workload put back for good if the
                # request still fits, all but the last removed.
                for index in range(len(removed) - 2, -1, -1):
                    back = with_targets(tree, self.queue, [removed[index].candidate])
                    if self._fits(back, borrowing):
                        tree = back
                        del removed[index]
                return removed
        return []


def preemption_targets(
    who: Preemptor, tree: CohortTree, requests: Requests, need: Needs
) -> list[PreemptionTarget]:
    """The Workloads Kueue would evict to admit `requests` (the whole assignment: every
    flavor/resource it gets) in the ClusterQueue, where `need` are the flavor/resources that
    need preemption (`GetTargets`); none when the candidates given do not free enough."""
    cluster_queue = who.cluster_queue
    if not need or not tree.has(name(cluster_queue)):
        return []
    search = _Search(who, tree, requests, need)
    elems, none_from_others, no_hierarchy = search.ordered()
    own_key = tree.cluster_queue_node(search.queue)
    quotas = quotas_of(cluster_queue)
    # queueUnderNominalInResourcesNeedingPreemption: usage strictly below nominal quota.
    under_nominal = all(
        tree.usage(own_key, fr) < (quotas[fr].nominal if fr in quotas else ZERO) for fr in need
    )
    if none_from_others or (search.borrow_forbidden and not under_nominal):
        passes = [True]
    elif search.borrow_forbidden and no_hierarchy:
        passes = [False, True]
    else:
        passes = [True, False]
    for borrowing in passes:
        found = search.attempt(elems, borrowing)
        if found:
            return [PreemptionTarget(e.candidate, e.queue, e.reason) for e in found]
    return []
