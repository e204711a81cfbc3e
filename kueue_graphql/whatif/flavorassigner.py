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
  the maximum capacity (PotentialAvailable) noFit; else its borrowing level (whatif.borrowing,
  `FindHeightOfLowestSubtreeThatFits`); within Available fit; in between Kueue simulates
  preemption when the request is within nominal quota, when quota lent beyond the subtree that
  would hold it may be reclaimed, or under borrowWithinCohort (`SimulatePreemption`: targets
  found in the ClusterQueue give preempt, only in other ClusterQueues of the cohort reclaim,
  at the level once they are removed; none give noPreemptionCandidates), else noFit;
- the flavor's mode is the least preferred of its resources' (`representativeMode`), its level
  the highest (`maxBorrow`); the search stops at the first flavor `shouldTryNextFlavor` does
  not pass on, else keeps the preferred one (`isPreferred`: by preemption mode then borrowing
  level, or by level first under `flavorFungibility.preference: PreemptionOverBorrowing`);
  the modes are whatif.modes;
- earlier pod sets' usage counts against later ones ("previously considered podsets").

Where it differs: the resources are taken in name order (Kueue ranges over a map) and, past a
noFit for lack of unused quota, the other resources are still checked so every reason is shown
(the mode stays noFit); preemption (whatif.preemption) is simulated over the admitted Workloads
the caller may read, and not at all without the cohort's figures; a flavor
whose figures cannot be read (unreadable cohort or ResourceFlavors) ranks as noFit, UNKNOWN.

The quota arithmetic is kueue.quota's, shared with the diagnosis (`quota_line` over
`CohortTree`), and the messages are the ones Kueue writes, so they parse back
(kueue.messages.parse_kueue_message) into the same reason codes a diagnosis shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from kueue_graphql.whatif.borrowing import level_after_preemption, lowest_subtree_that_fits
from kueue_graphql.whatif.model import (
    RANK,
    ZERO,
    FlavorAttempt,
    GroupAssignment,
    PreemptionTarget,
    ProposedPodSet,
    WhatIfInput,
)
from kueue_graphql.whatif.modes import (
    BEST,
    WORST,
    GranularMode,
    PreemptionMode,
    is_preferred,
    should_try_next_flavor,
)
from kueue_graphql.whatif.preemption import Preemptor, preemption_policy, preemption_targets
from kueue_graphql.whatif.topology import flavor_tas_mismatch, tas_only

__all__ = ["UNFIT_FLAVOR_LIMITED_BY", "FlavorAssigner", "go_taint", "pod_set_requests"]

# The limitedBy codes of a flavor that cannot take the Pods at all (checkFlavorForPodSets).
UNFIT_FLAVOR_LIMITED_BY = frozenset(
    {"FLAVOR_NOT_FOUND", "FLAVOR_TOPOLOGY", "FLAVOR_TAINT", "FLAVOR_NODE_AFFINITY"}
)


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
    tas: tuple[Sequence[str], bool, Sequence[KubeObject] | None] = ((), False, None),
) -> tuple[str, str] | None:
    """(limitedBy, Kueue's message) when the flavor cannot take the pod set at all. `tas`: the
    group's covered resources, whether the ClusterQueue is TAS-only, the Topologies read."""
    flavor = flavors.get(flavor_name)
    if flavor is None:
        return "FLAVOR_NOT_FOUND", f"flavor {flavor_name} not found"
    covered, cluster_queue_tas_only, topologies = tas
    tas_message = flavor_tas_mismatch(ps, flavor, covered, cluster_queue_tas_only, topologies)
    if tas_message is not None:
        return "FLAVOR_TOPOLOGY", tas_message
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


@dataclass(frozen=True)
class _ResourceFit:
    """What `fitsResourceQuota` returns for one resource (plus the line's verdict)."""

    verdict: Verdict
    mode: PreemptionMode
    level: int | None
    """The borrowing level; None when the cohort could not be read."""
    borrows: bool
    may_preempt: bool
    message: str


@dataclass
class _Attempt:
    """One flavor tried for a resource group (Kueue's FlavorAssignmentAttempt)."""

    flavor: str
    verdict: Verdict
    mode: GranularMode = BEST
    """`representativeMode`: the least preferred mode among the group's resources."""
    level: int | None = 0
    """`maxBorrow`: the highest borrowing level among the resources; None: not known."""
    borrows: bool = False
    may_preempt: bool = False
    limited_by: str | None = None
    reasons: list[str] = field(default_factory=list)
    need: list[str] = field(default_factory=list)
    """The resources whose mode is Preempt (Kueue simulated preemption for them)."""
    preempts: int = 0


class FlavorAssigner:
    def __init__(self, inp: WhatIfInput, cluster_queue: KubeObject) -> None:
        self.inp = inp
        self.cq = cluster_queue
        self.cq_name = name(cluster_queue)
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
        self.tas_only = tas_only(cluster_queue, self.flavors)
        self.topologies = known(inp.tas.topologies)
        self.assumed: dict[FlavorResource, Decimal] = {}
        self.lines: dict[FlavorResource, QuotaLine] = {}

    def group_of(self, resource: str) -> _Group | None:
        return next((g for g in self.groups if resource in g.covered), None)

    def _policy(self, key: str) -> str:
        return preemption_policy(self.cq, key)

    def _can_preempt_while_borrowing(self) -> bool:
        """`canPreemptWhileBorrowing` (fair sharing off)."""
        policy = text(self.cq, "spec", "preemption", "borrowWithinCohort", "policy")
        return policy not in (None, "Never")

    @exact_arithmetic
    def _fits(self, fr: FlavorResource, request: Decimal) -> _ResourceFit:
        """`fitsResourceQuota`: the preemption mode and borrowing level of one resource in one
        flavor, with Kueue's message when it does not fit now."""
        flavor, res = fr
        assumed = self.assumed.get(fr, ZERO)
        value = assumed + request
        line = quota_line(self.cq, self.tree, fr, value)
        self.lines[fr] = line
        nominal = self.quotas[fr].nominal if fr in self.quotas else ZERO
        if line.verdict is Verdict.NEVER_FITS:
            cap = line.maximum_capacity if line.maximum_capacity is not None else ZERO
            return _ResourceFit(
                Verdict.NEVER_FITS,
                PreemptionMode.NO_FIT,
                0,
                False,
                False,
                f"insufficient quota for {res} in flavor {flavor}, previously considered "
                f"podsets requests ({format_quantity(assumed, res)}) + current podset request "
                f"({format_quantity(request, res)}) > maximum capacity "
                f"({format_quantity(cap, res)})",
            )
        if self.tree is not None:
            level, may_reclaim = lowest_subtree_that_fits(self.tree, self.cq_name, fr, value)
            level_known: int | None = level
            borrows = level > 0
        else:
            # Cohort members unreadable: whether it borrows is known, not from how high up.
            level_known, may_reclaim = None, False
            borrows = self.cohort is not None and line.reserved + value > nominal
        if line.verdict is Verdict.FITS_NOW:
            return _ResourceFit(line.verdict, PreemptionMode.FIT, level_known, borrows, False, "")
        if line.verdict is Verdict.UNKNOWN:
            return _ResourceFit(
                line.verdict, PreemptionMode.NO_FIT, level_known, borrows, False, ""
            )
        available = line.available_now if line.available_now is not None else ZERO
        message = (
            f"insufficient unused quota for {res} in flavor {flavor}, "
            f"{format_quantity(value - available, res)} more needed"
        )
        while_borrowing = self._can_preempt_while_borrowing()
        if not (value <= nominal or may_reclaim or while_borrowing):
            return _ResourceFit(
                line.verdict, PreemptionMode.NO_FIT, level_known, borrows, False, message
            )
        # Kueue simulates preemption (`SimulatePreemption`) in the ClusterQueue and its cohort.
        may_preempt = (
            (value <= nominal and self._policy("withinClusterQueue") != "Never")
            or (may_reclaim and self._policy("reclaimWithinCohort") != "Never")
            or while_borrowing
        )
        targets = self._targets({fr: value}, [fr])
        if not targets or self.tree is None:
            return _ResourceFit(
                line.verdict,
                PreemptionMode.NO_PREEMPTION_CANDIDATES,
                level_known,
                borrows,
                may_preempt,
                message,
            )
        victims = [t.workload for t in targets]
        after = level_after_preemption(self.tree, self.cq_name, fr, value, victims)
        own = any(t.cluster_queue == self.cq_name for t in targets)
        mode = PreemptionMode.PREEMPT if own else PreemptionMode.RECLAIM
        return _ResourceFit(line.verdict, mode, after, after > 0, True, message)

    def _targets(
        self, requests: Mapping[FlavorResource, Decimal], need: list[FlavorResource]
    ) -> list[PreemptionTarget]:
        """`GetTargets` over the admitted Workloads the caller may read; none without the
        cohort's figures."""
        if self.tree is None:
            return []
        who = Preemptor(self.cq, self.inp.priority, self.inp.candidates)
        return preemption_targets(who, self.tree, requests, need)

    def targets_for(
        self, groups: list[tuple[GroupAssignment, Mapping[str, Decimal]]]
    ) -> list[PreemptionTarget]:
        """`GetTargets` for the whole assignment: every group's flavor and requests, the
        resources that need preemption in them."""
        requests: dict[FlavorResource, Decimal] = {}
        need: list[FlavorResource] = []
        for group, totals in groups:
            if group.flavor is None:
                continue
            for res in group.resources:
                fr = (group.flavor, res)
                requests[fr] = requests.get(fr, ZERO) + totals.get(res, ZERO)
                if res in group.needs_preemption and fr not in need:
                    need.append(fr)
        return self._targets(requests, need)

    def _try_flavor(
        self, flavor_name: str, ps: ProposedPodSet, group: _Group, requests: Mapping[str, Decimal]
    ) -> _Attempt:
        """`checkFlavorForPodSets`, then `fitsResourceQuota` per resource of the group; the
        attempt's mode is the least preferred of its resources' (`isPreferred`)."""
        if self.flavors_known:
            mismatch = _flavor_mismatch(
                flavor_name,
                self.flavors,
                ps,
                _label_keys(group, self.flavors),
                (group.covered, self.tas_only, self.topologies),
            )
            if mismatch is not None:
                return _Attempt(
                    flavor_name,
                    Verdict.NEVER_FITS,
                    mode=WORST,
                    level=None,
                    limited_by=mismatch[0],
                    reasons=[mismatch[1]],
                )
        attempt = _Attempt(flavor_name, Verdict.FITS_NOW)
        if not self.flavors_known:
            # Without the ResourceFlavors, taints and node labels cannot be checked.
            attempt.verdict = Verdict.UNKNOWN
            attempt.limited_by = "FLAVORS_NOT_READABLE"
        for res in sorted(requests):
            fr = (flavor_name, res)
            fit = self._fits(fr, requests[res])
            mode = GranularMode(
                fit.mode, fit.level if fit.level is not None else WORST.borrowing_level
            )
            if is_preferred(attempt.mode, mode, self.fungibility):
                attempt.mode = mode
            attempt.level = (
                None
                if fit.level is None or attempt.level is None
                else max(attempt.level, fit.level)
            )
            attempt.borrows = attempt.borrows or fit.borrows
            attempt.may_preempt = attempt.may_preempt or fit.may_preempt
            if fit.message:
                attempt.reasons.append(fit.message)
            if fit.mode not in (PreemptionMode.FIT, PreemptionMode.NO_FIT):
                attempt.need.append(res)
            if RANK[fit.verdict] < RANK[attempt.verdict]:
                attempt.verdict = fit.verdict
                attempt.limited_by = self.lines[fr].limited_by
            if fit.verdict is Verdict.NEVER_FITS:
                break  # "The flavor doesn't fit, no need to check other resources."
        if attempt.verdict is Verdict.UNKNOWN:
            attempt.mode = WORST  # undecided here: never chosen over a flavor that is decided
        if attempt.verdict is Verdict.MUST_WAIT and attempt.need:
            # How many Workloads Kueue would evict for the whole group in this flavor.
            attempt.preempts = len(
                self._targets(
                    {(flavor_name, r): v for r, v in requests.items()},
                    [(flavor_name, r) for r in attempt.need],
                )
            )
        return attempt

    def _stops_to_preempt(self, attempt: _Attempt) -> bool:
        """Kueue would stop at this flavor if its preemption simulation found candidates there:
        `shouldTryNextFlavor` false for a preempt mode at the attempt's borrowing level.
        Candidates are simulated over the admitted Workloads the caller may read; other
        tenants' are not seen, so where these find none the search goes on."""
        return (
            attempt.mode.preemption_mode is PreemptionMode.NO_PREEMPTION_CANDIDATES
            and attempt.may_preempt
            and attempt.level is not None
            and not should_try_next_flavor(
                GranularMode(PreemptionMode.PREEMPT, attempt.level), self.fungibility
            )
        )

    @exact_arithmetic
    def assign_group(
        self, ps: ProposedPodSet, group: _Group, requests: Mapping[str, Decimal]
    ) -> GroupAssignment:
        """`findFlavorForPodSets`: the group's flavors in order, stopping where
        `shouldTryNextFlavor` says so, else the most preferred attempt (`isPreferred`)."""
        attempts: list[_Attempt] = []
        best: _Attempt | None = None
        for flavor_name in group.flavors:
            attempt = self._try_flavor(flavor_name, ps, group, requests)
            attempts.append(attempt)
            if attempt.limited_by in UNFIT_FLAVOR_LIMITED_BY:
                continue
            if not should_try_next_flavor(attempt.mode, self.fungibility):
                best = attempt
                break
            if is_preferred(attempt.mode, best.mode if best else WORST, self.fungibility):
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
            needs_preemption=tuple(chosen.need)
            if chosen is not None and verdict is Verdict.MUST_WAIT
            else (),
            attempts=tuple(
                FlavorAttempt(
                    a.flavor,
                    a.verdict,
                    a.borrows,
                    tuple(sorted(a.reasons)),
                    borrowing_level=a.level,
                )
                for a in attempts
            ),
            borrowing_level=chosen.level if flavor is not None and chosen is not None else None,
        )


@exact_arithmetic
def pod_set_requests(ps: ProposedPodSet, covers_pods: bool) -> dict[str, Decimal]:
    total = {res: value * ps.count for res, value in ps.per_pod.items() if value != 0}
    if covers_pods:
        # assignFlavors: with a group covering "pods", each Pod counts one.
        total["pods"] = Decimal(ps.count)
    return total
