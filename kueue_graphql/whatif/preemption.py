"""Kueue's preemption within the ClusterQueue, simulated for whatIf.

Mirrors Kueue v0.17.0 pkg/scheduler/preemption: the policy lookup (common/preemption_policy.go),
the candidates of `withinClusterQueue: LowerPriority` / `LowerOrNewerEqualPriority`
(classical/candidate_generator.go), their order (common/ordering.go `CandidatesOrdering`: lower
priority first, then the most recently admitted) and the minimal set (preemption.go
`minimalPreemptions`: removed in order until the request fits, then those not needed put back).
Reclaim within the cohort and borrowWithinCohort are not simulated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from kueue_graphql.kueue.exact import exact_arithmetic
from kueue_graphql.kueue.model import KubeObject, QuotaLine
from kueue_graphql.kueue.objects import text
from kueue_graphql.kueue.quota import FlavorResource, ResourceQuota
from kueue_graphql.whatif.model import ZERO, PreemptionCandidate

__all__ = ["preemption_policy", "preemption_targets"]


def preemption_policy(cluster_queue: KubeObject, key: str) -> str:
    """The ClusterQueue's spec.preemption.<key> (withinClusterQueue, reclaimWithinCohort), Never
    by default."""
    return text(cluster_queue, "spec", "preemption", key) or "Never"


@exact_arithmetic
def preemption_targets(
    cluster_queue: KubeObject,
    flavor: str,
    requests: Mapping[str, Decimal],
    lines: Mapping[FlavorResource, QuotaLine],
    quotas: Mapping[FlavorResource, ResourceQuota],
    candidates: Sequence[PreemptionCandidate],
    priority: int,
) -> list[PreemptionCandidate]:
    """The admitted Workloads Kueue's within-ClusterQueue preemption would evict for
    the request in `flavor` (`GetTargets`: candidates of lower priority that use the
    resources, lower priority first then the most recently admitted; removed until it fits,
    then those not needed put back, last removed kept); none when the readable candidates do
    not free enough, or the policy does not preempt within the ClusterQueue."""
    if preemption_policy(cluster_queue, "withinClusterQueue") not in (
        "LowerPriority",
        "LowerOrNewerEqualPriority",
    ):
        return []
    # (LowerOrNewerEqualPriority also takes equal-priority Workloads newer than the incoming
    # one: every admitted Workload is older than one not created yet.)
    need: dict[str, Decimal] = {}
    for res in requests:
        line = lines.get((flavor, res))
        if line is None or line.available_now is None:
            return []
        nominal = quotas[(flavor, res)].nominal if (flavor, res) in quotas else ZERO
        if line.requested > nominal:
            return []  # within the ClusterQueue only for a request within its nominal quota
        if line.requested > line.available_now:
            need[res] = line.requested - line.available_now
    if not need:
        return []
    pool = sorted(
        (
            c
            for c in candidates
            if c.priority < priority
            and any(c.reserved.get((flavor, res), ZERO) > 0 for res in need)
        ),
        key=lambda c: c.admitted_at,
        reverse=True,
    )
    pool.sort(key=lambda c: c.priority)

    def enough(chosen: Sequence[PreemptionCandidate]) -> bool:
        return all(
            sum((c.reserved.get((flavor, res), ZERO) for c in chosen), ZERO) >= value
            for res, value in need.items()
        )

    removed: list[PreemptionCandidate] = []
    for candidate in pool:
        removed.append(candidate)
        if enough(removed):
            break
    else:
        return []
    for index in range(len(removed) - 2, -1, -1):
        kept = removed[:index] + removed[index + 1 :]
        if enough(kept):
            removed = kept
    return removed
