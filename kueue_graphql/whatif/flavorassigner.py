"""Kueue's flavor assignment for a Workload that does not exist yet.

A port of Kueue v0.17.0's pkg/scheduler/flavorassigner/flavorassigner.go for Workloads without
a topology request (TAS off), with the FlavorFungibility gate on (its default since v0.5):

- pod sets in order, each on its own (no PodSetGroupName); within a pod set, each requested
  resource is looked up in the ClusterQueue's resource groups (`RGByResource`; a resource in no
  group: "resource X unavailable in ClusterQueue"), and all the group's covered resources get
  one flavor together (`findFlavorForPodSets`);
- the group's flavors are tried in their order (`checkFlavorForPodSets`): the ResourceFlavor must
  exist; its `nodeTaints` with effect NoSchedule/NoExecute must be tolerated by the Pod's
  tolerations plus the flavor's own `tolerations`; the Pod's nodeSelector and required node
  affinity, reduced to the label keys the group's flavors use (`flavorSelector`), must match the
  flavor's `nodeLabels`;
- then each resource of the group in that flavor against quota (`fitsResourceQuota`): above
  the maximum capacity (PotentialAvailable) no fit ever; within Available a fit (borrowing
  when usage + request > nominal); in between a wait, where Kueue may also simulate
  preemption (request <= nominal, reclaim within the cohort, or borrowWithinCohort);
- the search stops at the first flavor that fits unless `flavorFungibility` says
  TryNextFlavor (whenCanBorrow for a fit that borrows, whenCanPreempt for one that needs
  preemption; `shouldTryNextFlavor`); otherwise the preferred attempt wins (`isPreferred`:
  BorrowingOverPreemption by default, or `flavorFungibility.preference`
  PreemptionOverBorrowing; borrowing as yes/no, not Kueue's level in the cohort tree);
- earlier pod sets' usage counts against later ones ("previously considered podsets").

The quota arithmetic is kueue.quota's, shared with the diagnosis (`quota_line` over
`CohortTree`), and the messages are the ones Kueue writes, so they parse back
(kueue.messages.parse_kueue_message) into the same reason codes a diagnosis shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kueue_graphql.kueue.exact import exact_arithmetic, format_quantity
from kueue_graphql.kueue.model import KubeObject, QuotaLine, Verdict, known
from kueue_graphql.kueue.objects import items, mapping, name, text
from kueue_graphql.kueue.quota import (
    CohortTree,
    FlavorResource,
    cohort_tree,
    quota_line,
    quotas_of,
)
from kueue_graphql.kueue.scheduling import expression_matches, tolerates
from kueue_graphql.whatif.model import (
    RANK,
    ZERO,
    FlavorAttempt,
    GroupAssignment,
    ProposedPodSet,
    WhatIfInput,
)
from kueue_graphql.whatif.preemption import count_targets, preemption_policy

__all__ = ["UNFIT_FLAVOR_LIMITED_BY", "FlavorAssigner", "go_taint", "pod_set_requests"]

# The limitedBy codes of a flavor that cannot take the Pods at all (checkFlavorForPodSets).
UNFIT_FLAVOR_LIMITED_BY = frozenset({"FLAVOR_NOT_FOUND", "FLAVOR_TAINT", "FLAVOR_NODE_AFFINITY"})


def go_taint(taint: Mapping[str, Any]) -> str:
    # Kueue formats the *corev1.Taint with %s: Go prints the struct's fields in braces.
    added = taint.get("timeAdded")
    return (
        f"{{{taint.get('key') or ''} {taint.get('value') or ''} {taint.get('effect') or ''} "
        f"{added if added else '<nil>'}}}"
    )


@dataclass(frozen=True)
class _Group:
    index: int
    covered: tuple[str, ...]
    flavors: tuple[str, ...]


def _groups(cluster_queue: KubeObject) -> list[_Group]:
    out = []
    for index, group in enumerate(items(cluster_queue, "spec", "resourceGroups")):
        covered = group.get("coveredResources")
        out.append(
            _Group(
                index=index,
                covered=tuple(str(r) for r in covered) if isinstance(covered, list) else (),
                flavors=tuple(str(f.get("name") or "") for f in items(group, "flavors")),
            )
        )
    return out


def _label_keys(group: _Group, flavors: Mapping[str, KubeObject]) -> set[str]:
    # clusterQueue.updateLabelKeys: the nodeLabels keys of the group's existing flavors.
    keys: set[str] = set()
    for flavor_name in group.flavors:
        flavor = flavors.get(flavor_name)
        if flavor is not None:
            keys.update(str(k) for k in mapping(flavor, "spec", "nodeLabels"))
    return keys


def _selector_matches(ps: ProposedPodSet, keys: set[str], node_labels: Mapping[str, Any]) -> bool:
    """flavorSelector + RequiredNodeAffinity.Match against a Node carrying the flavor's labels."""
    for key, value in ps.node_selector.items():
        if key in keys and node_labels.get(key) != value:
            return False
    terms: list[list[Mapping[str, Any]]] = []
    for term in ps.affinity_terms:
        kept = [e for e in items(term, "matchExpressions") if str(e.get("key")) in keys]
        if not kept:
            # A term left empty matches every flavor, and terms are ORed: no affinity at all.
            return True
        terms.append(kept)
    if not terms:
        return True
    return any(all(expression_matches(e, node_labels) for e in term) for term in terms)


def _flavor_mismatch(
    flavor_name: str,
    flavors: Mapping[str, KubeObject],
    ps: ProposedPodSet,
    keys: set[str],
) -> tuple[str, str] | None:
    """(limitedBy, Kueue's message) when the flavor cannot take the pod set at all."""
    flavor = flavors.get(flavor_name)
    if flavor is None:
        return "FLAVOR_NOT_FOUND", f"flavor {flavor_name} not found"
    tolerations = [*ps.tolerations, *items(flavor, "spec", "tolerations")]
    for taint in items(flavor, "spec", "nodeTaints"):
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return (
                "FLAVOR_TAINT",
                f"untolerated taint {go_taint(taint)} in flavor {flavor_name}",
            )
    if not _selector_matches(ps, keys, mapping(flavor, "spec", "nodeLabels")):
        return "FLAVOR_NODE_AFFINITY", f"flavor {flavor_name} doesn't match node affinity"
    return None


@dataclass
class _Attempt:
    flavor: str
    verdict: Verdict
    borrows: bool = False
    may_preempt: bool = False
    simulates: bool = False
    """Kueue simulates preemption here (request within nominal, reclaim possible, or
    borrowWithinCohort), whatever the policies: no candidates is then its noPreemptionCandidates
    mode, which `isPreferred` ranks above noFit."""
    limited_by: str | None = None
    reasons: list[str] = field(default_factory=list)
    lines: dict[FlavorResource, QuotaLine] = field(default_factory=dict)
    preempts: int = 0


def _mode(attempt: _Attempt) -> int:
    """Kueue's preemptionMode as a rank: fit 3, preempt 2, noPreemptionCandidates 1, noFit 0."""
    if attempt.verdict is Verdict.FITS_NOW:
        return 3
    if attempt.verdict is Verdict.MUST_WAIT and attempt.preempts:
        return 2
    if attempt.verdict is Verdict.MUST_WAIT and (attempt.may_preempt or attempt.simulates):
        return 1
    return 0


class FlavorAssigner:
    def __init__(self, inp: WhatIfInput, cluster_queue: KubeObject) -> None:
        self.inp = inp
        self.cq = cluster_queue
        flavors = known(inp.resource_flavors)
        self.flavors: dict[str, KubeObject] = (
            {name(f): f for f in flavors} if flavors is not None else {}
        )
        self.flavors_known = flavors is not None
        self.tree: CohortTree | None = cohort_tree(
            cluster_queue, known(inp.cluster_queues), known(inp.cohorts)
        )
        self.quotas = quotas_of(cluster_queue)
        self.groups = _groups(cluster_queue)
        self.fungibility = mapping(cluster_queue, "spec", "flavorFungibility")
        self.cohort = text(cluster_queue, "spec", "cohortName")
        self.assumed: dict[FlavorResource, Decimal] = {}
        self.lines: dict[FlavorResource, QuotaLine] = {}

    def group_of(self, resource: str) -> _Group | None:
        return next((g for g in self.groups if resource in g.covered), None)

    def _policy(self, key: str) -> str:
        return preemption_policy(self.cq, key)

    def _can_preempt_while_borrowing(self) -> bool:
        policy = text(self.cq, "spec", "preemption", "borrowWithinCohort", "policy")
        return policy not in (None, "Never")

    @exact_arithmetic
    def _fits(self, fr: FlavorResource, request: Decimal) -> tuple[Verdict, bool, bool, bool, str]:
        """fitsResourceQuota: (verdict, borrows, may preempt, simulates preemption, Kueue's
        message or "")."""
        flavor, res = fr
        assumed = self.assumed.get(fr, ZERO)
        value = assumed + request
        line = quota_line(self.cq, self.tree, fr, value)
        self.lines[fr] = line
        nominal = self.quotas[fr].nominal if fr in self.quotas else ZERO
        borrows = self.cohort is not None and line.reserved + value > nominal
        if line.verdict is Verdict.NEVER_FITS:
            cap = line.maximum_capacity if line.maximum_capacity is not None else ZERO
            return (
                Verdict.NEVER_FITS,
                False,
                False,
                False,
                f"insufficient quota for {res} in flavor {flavor}, previously considered "
                f"podsets requests ({format_quantity(assumed, res)}) + current podset request "
                f"({format_quantity(request, res)}) > maximum capacity "
                f"({format_quantity(cap, res)})",
            )
        if line.verdict is Verdict.FITS_NOW:
            return Verdict.FITS_NOW, borrows, False, False, ""
        if line.verdict is Verdict.UNKNOWN:
            return Verdict.UNKNOWN, borrows, False, False, ""
        available = line.available_now if line.available_now is not None else ZERO
        # Kueue simulates preemption when the request fits its nominal quota, when reclaiming
        # within the cohort may help (the request fits some subtree without borrowing beyond
        # it: approximated by "not borrowing at all"), or when borrowWithinCohort allows it.
        # With every preemption policy at Never (the default) that finds no candidates.
        may_reclaim = self.cohort is not None and not borrows
        may_preempt = (
            (value <= nominal and self._policy("withinClusterQueue") != "Never")
            or (may_reclaim and self._policy("reclaimWithinCohort") != "Never")
            or self._can_preempt_while_borrowing()
        )
        simulates = value <= nominal or may_reclaim or self._can_preempt_while_borrowing()
        return (
            Verdict.MUST_WAIT,
            borrows,
            may_preempt,
            simulates,
            f"insufficient unused quota for {res} in flavor {flavor}, "
            f"{format_quantity(value - available, res)} more needed",
        )

    def _try_flavor(
        self, flavor_name: str, ps: ProposedPodSet, group: _Group, requests: Mapping[str, Decimal]
    ) -> _Attempt:
        if self.flavors_known:
            mismatch = _flavor_mismatch(
                flavor_name, self.flavors, ps, _label_keys(group, self.flavors)
            )
            if mismatch is not None:
                return _Attempt(
                    flavor_name, Verdict.NEVER_FITS, limited_by=mismatch[0], reasons=[mismatch[1]]
                )
        attempt = _Attempt(flavor_name, Verdict.FITS_NOW)
        if not self.flavors_known:
            # Without the ResourceFlavors, taints and node labels cannot be checked.
            attempt.verdict = Verdict.UNKNOWN
            attempt.limited_by = "FLAVORS_NOT_READABLE"
        for res in sorted(requests):
            fr = (flavor_name, res)
            verdict, borrows, may_preempt, simulates, message = self._fits(fr, requests[res])
            attempt.borrows = attempt.borrows or borrows
            attempt.may_preempt = attempt.may_preempt or may_preempt
            attempt.simulates = attempt.simulates or simulates
            if message:
                attempt.reasons.append(message)
            if RANK[verdict] < RANK[attempt.verdict]:
                attempt.verdict = verdict
                attempt.limited_by = self.lines[fr].limited_by
            if verdict is Verdict.NEVER_FITS:
                break  # "The flavor doesn't fit, no need to check other resources."
        if attempt.verdict is Verdict.MUST_WAIT and attempt.may_preempt:
            attempt.preempts = count_targets(
                self.cq,
                flavor_name,
                requests,
                self.lines,
                self.quotas,
                self.inp.candidates,
                self.inp.priority,
            )
        return attempt

    def _should_try_next(self, attempt: _Attempt) -> bool:
        # shouldTryNextFlavor: noFit and noPreemptionCandidates always go on to the next flavor,
        # whatever whenCanPreempt says; only a preemption whose simulation finds candidates
        # may stop the search there. Candidates are simulated over the admitted Workloads the
        # caller may read; other tenants' are not seen, so where these find none the search
        # goes on, and `preempts_first_in` says where Kueue would stop if it found some.
        if attempt.verdict is Verdict.MUST_WAIT and attempt.preempts:
            return bool(self.fungibility.get("whenCanPreempt", "TryNextFlavor") == "TryNextFlavor")
        if attempt.verdict is not Verdict.FITS_NOW:
            return True
        return attempt.borrows and self.fungibility.get("whenCanBorrow") == "TryNextFlavor"

    def _stops_to_preempt(self, attempt: _Attempt) -> bool:
        """Kueue would stop at this flavor if its preemption simulation found candidates."""
        return (
            attempt.verdict is Verdict.MUST_WAIT
            and attempt.may_preempt
            and self.fungibility.get("whenCanPreempt", "TryNextFlavor") != "TryNextFlavor"
        )

    def _preferred(self, a: _Attempt, b: _Attempt | None) -> bool:
        """isPreferred: BorrowingOverPreemption (the default) ranks fit over preemption, then
        less borrowing; PreemptionOverBorrowing ranks less borrowing first, then the preemption
        mode (fit, preempt, noPreemptionCandidates). Borrowing is known as yes/no, not as
        Kueue's level in the cohort tree."""
        if self.fungibility.get("preference") == "PreemptionOverBorrowing":
            mode_a, mode_b = _mode(a), _mode(b) if b is not None else 0
            if mode_a == 0:
                return False
            if b is None or mode_b == 0:
                return True
            if a.borrows != b.borrows:
                return not a.borrows
            return mode_a > mode_b
        usable_a = a.verdict is Verdict.FITS_NOW or (
            a.verdict is Verdict.MUST_WAIT and a.may_preempt
        )
        if not usable_a:
            return False
        if b is None:
            return True
        if a.verdict is not b.verdict:
            return a.verdict is Verdict.FITS_NOW
        if bool(a.preempts) != bool(b.preempts):
            return bool(a.preempts)  # Preempt mode (targets found) over NoFit
        return not a.borrows and b.borrows

    @exact_arithmetic
    def assign_group(
        self, ps: ProposedPodSet, group: _Group, requests: Mapping[str, Decimal]
    ) -> GroupAssignment:
        attempts: list[_Attempt] = []
        best: _Attempt | None = None
        for flavor_name in group.flavors:
            attempt = self._try_flavor(flavor_name, ps, group, requests)
            attempts.append(attempt)
            if attempt.verdict is Verdict.NEVER_FITS and attempt.limited_by in (
                "FLAVOR_NOT_FOUND",
                "FLAVOR_TAINT",
                "FLAVOR_NODE_AFFINITY",
            ):
                continue
            usable = attempt.verdict is Verdict.FITS_NOW or (
                attempt.verdict is Verdict.MUST_WAIT and attempt.may_preempt
            )
            if usable and not self._should_try_next(attempt):
                best = attempt
                break
            if self._preferred(attempt, best):
                best = attempt
        chosen = best
        preempts_first_in = None
        if chosen is not None and chosen.verdict is Verdict.FITS_NOW:
            preempts_first_in = next(
                (a.flavor for a in attempts[: attempts.index(chosen)] if self._stops_to_preempt(a)),
                None,
            )
        if chosen is None:
            # Waiting helps where some flavor only lacks unused quota; an unknown flavor
            # (unreadable cohort or flavors) leaves the answer open; else it never fits.
            chosen = next((a for a in attempts if a.verdict is Verdict.MUST_WAIT), None) or next(
                (a for a in attempts if a.verdict is Verdict.UNKNOWN), None
            )
        if chosen is not None and chosen.verdict is not Verdict.NEVER_FITS:
            for res, value in requests.items():
                fr = (chosen.flavor, res)
                self.assumed[fr] = self.assumed.get(fr, ZERO) + value
            verdict: Verdict = chosen.verdict
            limited_by, flavor = chosen.limited_by, chosen.flavor
        else:
            verdict, flavor = Verdict.NEVER_FITS, None
            # The most actionable cause: a quota limit of a flavor that could take the Pods,
            # else the first flavor's mismatch.
            quota_failures = [a for a in attempts if a.limited_by not in UNFIT_FLAVOR_LIMITED_BY]
            limited_by = (quota_failures or attempts)[0].limited_by if attempts else None
        return GroupAssignment(
            pod_set=ps.name,
            resources=tuple(sorted(requests)),
            flavor=flavor,
            verdict=verdict,
            limited_by=limited_by,
            borrows=bool(chosen and chosen.borrows and verdict is Verdict.FITS_NOW),
            may_preempt=bool(chosen and chosen.may_preempt and verdict is Verdict.MUST_WAIT),
            preempts_first_in=preempts_first_in,
            preempts=chosen.preempts if chosen is not None and verdict is Verdict.MUST_WAIT else 0,
            attempts=tuple(
                FlavorAttempt(a.flavor, a.verdict, a.borrows, tuple(sorted(a.reasons)))
                for a in attempts
            ),
        )


@exact_arithmetic
def pod_set_requests(ps: ProposedPodSet, covers_pods: bool) -> dict[str, Decimal]:
    total = {res: value * ps.count for res, value in ps.per_pod.items() if value != 0}
    if covers_pods:
        # assignFlavors: with a group covering "pods", each Pod counts one.
        total["pods"] = Decimal(ps.count)
    return total
