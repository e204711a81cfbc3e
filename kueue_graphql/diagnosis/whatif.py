"""Would it fit? Kueue's flavor assignment for a Workload that does not exist yet.

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
  preemption); otherwise the preferred attempt wins (BorrowingOverPreemption by default);
- earlier pod sets' usage counts against later ones ("previously considered podsets").

The quota arithmetic is the diagnosis' own (`quota.quota_line` over `quota.CohortTree`), and
the messages are the ones Kueue writes, so they parse back (messages.parse_kueue_message) into
the same reason codes a diagnosis shows. Preemption within the ClusterQueue
(`withinClusterQueue: LowerPriority` / `LowerOrNewerEqualPriority`, pkg/scheduler/preemption) is
simulated over the admitted Workloads the caller may read (`candidates`): Kueue's
candidate order (lower priority first, then the most recently admitted) and minimal set; when
they free enough, the answer is MUST_WAIT with `preempts` Workloads to be preempted and Kueue's
". Pending the preemption of N workload(s)". Other namespaces' admitted Workloads are other
tenants' data: when they hold quota in the ClusterQueue and the readable ones do not free
enough, a wait where Kueue could preempt only says so. Reclaim within the cohort is not
simulated.

Queue checks come first, as Kueue's workload controller and queue manager apply them: a stopped
or inactive LocalQueue, a missing, stopped or inactive ClusterQueue, a namespaceSelector that
excludes the namespace. Pure: the caller passes the objects it could read (Observed markers for
the rest) and whether numbers may be shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from kueue_graphql.diagnosis.messages import parse_kueue_message
from kueue_graphql.diagnosis.model import (
    Absent,
    Forbidden,
    KubeObject,
    Observed,
    QuotaLine,
    Reason,
    ReasonSource,
    Verdict,
)
from kueue_graphql.diagnosis.objects import condition, dig, items, mapping, name, text
from kueue_graphql.diagnosis.pods import expression_matches, tolerates
from kueue_graphql.diagnosis.quantity import format_quantity
from kueue_graphql.diagnosis.quota import (
    CohortTree,
    FlavorResource,
    cohort_tree,
    quota_line,
    quotas_of,
)
from kueue_graphql.diagnosis.requests import per_pod_requests

__all__ = [
    "FlavorAttempt",
    "GroupAssignment",
    "PodSetOutcome",
    "PreemptionCandidate",
    "ProposedPodSet",
    "WhatIfInput",
    "WhatIfResult",
    "pod_sets_from_job",
    "what_if",
]

ZERO = Fraction(0)
_RANK = {
    Verdict.NEVER_FITS: 0,
    Verdict.QUEUE_INACTIVE: 1,
    Verdict.UNKNOWN: 2,
    Verdict.MUST_WAIT: 3,
    Verdict.FITS_NOW: 4,
}


@dataclass(frozen=True)
class ProposedPodSet:
    """One pod set of the Workload-to-be: `count` Pods of `per_pod` each."""

    name: str
    count: int
    per_pod: Mapping[str, Fraction]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[Mapping[str, Any], ...] = ()
    """requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms, as JSON."""
    tolerations: tuple[Mapping[str, Any], ...] = ()


def pod_sets_from_job(job: KubeObject) -> list[ProposedPodSet]:
    """The pod set Kueue makes for a batch/v1 Job (pkg/controller/jobs/job: one pod set
    "main", count = parallelism, or completions when smaller), per Pod as Kueue counts it."""
    spec = mapping(job, "spec")
    parallelism = spec.get("parallelism")
    count = parallelism if isinstance(parallelism, int) and not isinstance(parallelism, bool) else 1
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        count = min(count, completions)
    pod_spec = mapping(job, "spec", "template", "spec")
    terms = items(
        pod_spec,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    return [
        ProposedPodSet(
            name="main",
            count=count,
            per_pod=per_pod_requests(pod_spec),
            node_selector={str(k): str(v) for k, v in mapping(pod_spec, "nodeSelector").items()},
            affinity_terms=tuple(terms),
            tolerations=tuple(items(pod_spec, "tolerations")),
        )
    ]


@dataclass(frozen=True)
class PreemptionCandidate:
    """An admitted Workload of the ClusterQueue: its priority, when its quota was reserved
    (ISO text, for Kueue's "most recently admitted first"), and the quota it holds."""

    priority: int
    admitted_at: str
    reserved: Mapping[tuple[str, str], Fraction]


@dataclass(frozen=True)
class WhatIfInput:
    """What the answer may look at. `local_queue` the caller could `get`; the rest as read
    (by the caller, or by the service under the disclosure policy), markers where not."""

    namespace: str
    local_queue: KubeObject
    pod_sets: Sequence[ProposedPodSet]
    cluster_queue: Observed[KubeObject] = field(default_factory=Absent)
    resource_flavors: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    cluster_queues: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    cohorts: Observed[Sequence[KubeObject]] = field(default_factory=Absent)
    namespace_labels: Observed[Mapping[str, str]] = field(default_factory=Absent)
    show_numbers: bool = True
    """False: verdict, flavors and reasons without any quota figure (disclosure policy)."""
    hidden_because: str = ""
    """Why numbers are not shown, or why the ClusterQueue could not be read."""
    priority: int = 0
    """The Workload's priority (its WorkloadPriorityClass or PriorityClass value; 0 without)."""
    priority_class: str | None = None
    candidates: Sequence[PreemptionCandidate] = ()
    """The ClusterQueue's admitted Workloads the caller may read (preemption candidates)."""
    candidates_complete: bool = False
    """`candidates` are every admitted Workload of the ClusterQueue."""


@dataclass(frozen=True)
class FlavorAttempt:
    flavor: str
    verdict: Verdict
    borrows: bool
    reasons: tuple[str, ...]
    """Kueue's words for why it does not fit now (empty when it fits)."""


@dataclass(frozen=True)
class GroupAssignment:
    """One resource group of one pod set: the flavor Kueue would assign, or why none."""

    pod_set: str
    resources: tuple[str, ...]
    flavor: str | None
    """FITS_NOW: the flavor Kueue assigns now. MUST_WAIT: the first flavor waiting can give."""
    verdict: Verdict
    limited_by: str | None
    borrows: bool
    may_preempt: bool
    """Kueue would try preemption for this flavor (not simulated here)."""
    attempts: tuple[FlavorAttempt, ...]
    preempts_first_in: str | None = None
    """FITS_NOW in `flavor`, but an earlier flavor where Kueue stops to preempt instead when it
    finds admitted Workloads of lower priority there (whenCanPreempt: MayStopSearch)."""
    preempts: int = 0
    """MUST_WAIT in `flavor`: Kueue would preempt this many lower-priority Workloads of the
    ClusterQueue to admit it (0: none found among those the caller may read)."""


@dataclass(frozen=True)
class PodSetOutcome:
    name: str
    count: int
    per_pod: Mapping[str, Fraction]
    total: Mapping[str, Fraction]
    groups: tuple[GroupAssignment, ...]


@dataclass(frozen=True)
class WhatIfResult:
    verdict: Verdict
    limited_by: str | None
    summary: str
    local_queue: str
    cluster_queue: str | None
    numbers_shown: bool
    detail: str
    pod_sets: tuple[PodSetOutcome, ...]
    lines: tuple[QuotaLine, ...]
    reasons: tuple[Reason, ...]
    kueue_message: str | None
    """The QuotaReserved=False message Kueue would write, or None when it would admit."""
    admission_checks: tuple[str, ...]
    next_steps: tuple[str, ...]
    priority: int = 0
    priority_class: str | None = None
    preempts: int = 0
    """Kueue would preempt this many Workloads to admit it (then it is admitted once they are
    evicted); 0 when it would not, or none the caller may read would free enough."""


def _known(value: object) -> Any:
    return None if isinstance(value, Forbidden | Absent) else value


def _q(value: Fraction, resource: str) -> str:
    return format_quantity(value, resource)


def _go_taint(taint: Mapping[str, Any]) -> str:
    # Kueue formats the *corev1.Taint with %s: Go prints the struct's fields in braces.
    added = taint.get("timeAdded")
    return (
        f"{{{taint.get('key') or ''} {taint.get('value') or ''} {taint.get('effect') or ''} "
        f"{added if added else '<nil>'}}}"
    )


def _shown_taint(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


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
                f"untolerated taint {_go_taint(taint)} in flavor {flavor_name}",
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
    limited_by: str | None = None
    reasons: list[str] = field(default_factory=list)
    lines: dict[FlavorResource, QuotaLine] = field(default_factory=dict)
    preempts: int = 0


class _Assigner:
    def __init__(self, inp: WhatIfInput, cluster_queue: KubeObject) -> None:
        self.inp = inp
        self.cq = cluster_queue
        flavors = _known(inp.resource_flavors)
        self.flavors: dict[str, KubeObject] = (
            {name(f): f for f in flavors} if flavors is not None else {}
        )
        self.flavors_known = flavors is not None
        self.tree: CohortTree | None = cohort_tree(
            cluster_queue, _known(inp.cluster_queues), _known(inp.cohorts)
        )
        self.quotas = quotas_of(cluster_queue)
        self.groups = _groups(cluster_queue)
        self.fungibility = mapping(cluster_queue, "spec", "flavorFungibility")
        self.cohort = text(cluster_queue, "spec", "cohortName")
        self.assumed: dict[FlavorResource, Fraction] = {}
        self.lines: dict[FlavorResource, QuotaLine] = {}

    def group_of(self, resource: str) -> _Group | None:
        return next((g for g in self.groups if resource in g.covered), None)

    def _policy(self, key: str) -> str:
        return text(self.cq, "spec", "preemption", key) or "Never"

    def _can_preempt_while_borrowing(self) -> bool:
        policy = text(self.cq, "spec", "preemption", "borrowWithinCohort", "policy")
        return policy not in (None, "Never")

    def _fits(self, fr: FlavorResource, request: Fraction) -> tuple[Verdict, bool, bool, str]:
        """fitsResourceQuota: (verdict, borrows, may preempt, Kueue's message or "")."""
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
                f"insufficient quota for {res} in flavor {flavor}, previously considered "
                f"podsets requests ({_q(assumed, res)}) + current podset request "
                f"({_q(request, res)}) > maximum capacity ({_q(cap, res)})",
            )
        if line.verdict is Verdict.FITS_NOW:
            return Verdict.FITS_NOW, borrows, False, ""
        if line.verdict is Verdict.UNKNOWN:
            return Verdict.UNKNOWN, borrows, False, ""
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
        return (
            Verdict.MUST_WAIT,
            borrows,
            may_preempt,
            f"insufficient unused quota for {res} in flavor {flavor}, "
            f"{_q(value - available, res)} more needed",
        )

    def _try_flavor(
        self, flavor_name: str, ps: ProposedPodSet, group: _Group, requests: Mapping[str, Fraction]
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
            verdict, borrows, may_preempt, message = self._fits(fr, requests[res])
            attempt.borrows = attempt.borrows or borrows
            attempt.may_preempt = attempt.may_preempt or may_preempt
            if message:
                attempt.reasons.append(message)
            if _RANK[verdict] < _RANK[attempt.verdict]:
                attempt.verdict = verdict
                attempt.limited_by = self.lines[fr].limited_by
            if verdict is Verdict.NEVER_FITS:
                break  # "The flavor doesn't fit, no need to check other resources."
        if attempt.verdict is Verdict.MUST_WAIT and attempt.may_preempt:
            attempt.preempts = self._preemptions(flavor_name, requests)
        return attempt

    def _preemptions(self, flavor: str, requests: Mapping[str, Fraction]) -> int:
        """How many admitted Workloads Kueue's within-ClusterQueue preemption would evict for
        the request in `flavor` (preemption.go: candidates of lower priority that use the
        resources, lower priority first then the most recently admitted; removed until it fits,
        then those not needed put back, last removed kept); 0 when the readable candidates do
        not free enough, or the policy does not preempt within the ClusterQueue."""
        if self._policy("withinClusterQueue") not in ("LowerPriority", "LowerOrNewerEqualPriority"):
            return 0
        # (LowerOrNewerEqualPriority also takes equal-priority Workloads newer than the incoming
        # one: every admitted Workload is older than one not created yet.)
        need: dict[str, Fraction] = {}
        for res in requests:
            line = self.lines.get((flavor, res))
            if line is None or line.available_now is None:
                return 0
            nominal = self.quotas[(flavor, res)].nominal if (flavor, res) in self.quotas else ZERO
            if line.requested > nominal:
                return 0  # within the ClusterQueue only for a request within its nominal quota
            if line.requested > line.available_now:
                need[res] = line.requested - line.available_now
        if not need:
            return 0
        pool = sorted(
            (
                c
                for c in self.inp.candidates
                if c.priority < self.inp.priority
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
            return 0
        for index in range(len(removed) - 2, -1, -1):
            kept = removed[:index] + removed[index + 1 :]
            if enough(kept):
                removed = kept
        return len(removed)

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

    @staticmethod
    def _preferred(a: _Attempt, b: _Attempt | None) -> bool:
        """isPreferred, BorrowingOverPreemption: fit over preemption, then less borrowing."""
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

    def assign_group(
        self, ps: ProposedPodSet, group: _Group, requests: Mapping[str, Fraction]
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
            quota_failures = [a for a in attempts if a.limited_by not in _FLAVOR_CODES]
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


_FLAVOR_CODES = frozenset({"FLAVOR_NOT_FOUND", "FLAVOR_TAINT", "FLAVOR_NODE_AFFINITY"})


def _queue_block(inp: WhatIfInput) -> tuple[Verdict, str, str] | None:
    """(verdict, limitedBy, Kueue's message) when a queue holds every Workload, whatever its
    size. Kueue's own messages (workload controller / queue manager, v0.17)."""
    lq = inp.local_queue
    lq_name = name(lq)
    if text(lq, "spec", "stopPolicy") in ("Hold", "HoldAndDrain"):
        return Verdict.QUEUE_INACTIVE, "LOCAL_QUEUE_STOPPED", f"LocalQueue {lq_name} is inactive"
    cq = inp.cluster_queue
    cq_name = text(lq, "spec", "clusterQueue") or ""
    if isinstance(cq, Absent):
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_NOT_FOUND",
            f"ClusterQueue {cq_name} doesn't exist",
        )
    if isinstance(cq, Forbidden):
        return None
    if text(cq, "spec", "stopPolicy") in ("Hold", "HoldAndDrain"):
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_STOPPED",
            f"ClusterQueue {cq_name} is inactive",
        )
    active = condition(cq, "Active")
    if active is not None and active.get("status") == "False":
        return (
            Verdict.QUEUE_INACTIVE,
            "CLUSTER_QUEUE_INACTIVE",
            f"ClusterQueue {cq_name} is inactive",
        )
    labels = _known(inp.namespace_labels)
    selector = dig(cq, "spec", "namespaceSelector")
    if isinstance(selector, Mapping) and labels is not None and not _selects(selector, labels):
        return (
            Verdict.NEVER_FITS,
            "NAMESPACE_NOT_SELECTED",
            "Workload namespace doesn't match ClusterQueue selector",
        )
    return None


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against a namespace's labels (empty selector: everything)."""
    for key, value in mapping(selector, "matchLabels").items():
        if labels.get(str(key)) != value:
            return False
    return all(expression_matches(e, labels) for e in items(selector, "matchExpressions"))


def _requests(ps: ProposedPodSet, covers_pods: bool) -> dict[str, Fraction]:
    total = {res: value * ps.count for res, value in ps.per_pod.items() if value != 0}
    if covers_pods:
        # assignFlavors: with a group covering "pods", each Pod counts one.
        total["pods"] = Fraction(ps.count)
    return total


def what_if(inp: WhatIfInput) -> WhatIfResult:
    """The verdict Kueue would reach for these pod sets in this LocalQueue, now."""
    lq_name = name(inp.local_queue)
    cq_name = text(inp.local_queue, "spec", "clusterQueue")
    cq = _known(inp.cluster_queue)
    groups_unknown = cq is None
    checks = tuple(
        str(c.get("name") or "")
        for c in items(cq, "spec", "admissionChecksStrategy", "admissionChecks")
    )
    outcomes: list[PodSetOutcome] = []
    messages: list[str] = []
    lines: dict[FlavorResource, QuotaLine] = {}
    blocked = _queue_block(inp)
    if blocked is None and cq is not None:
        assigner = _Assigner(inp, cq)
        covers_pods = assigner.group_of("pods") is not None
        for ps in inp.pod_sets:
            requests = _requests(ps, covers_pods)
            assignments: list[GroupAssignment] = []
            failures: list[str] = []
            done: set[str] = set()
            for res in sorted(requests):
                if res in done:
                    continue
                group = assigner.group_of(res)
                if group is None:
                    assignments.append(
                        GroupAssignment(
                            ps.name,
                            (res,),
                            None,
                            Verdict.NEVER_FITS,
                            "NOT_IN_CLUSTER_QUEUE",
                            False,
                            False,
                            (),
                        )
                    )
                    failures.append(f"resource {res} unavailable in ClusterQueue")
                    done.add(res)
                    continue
                covered = {r: v for r, v in requests.items() if r in group.covered}
                done.update(covered)
                assignment = assigner.assign_group(ps, group, covered)
                assignments.append(assignment)
                if assignment.verdict is not Verdict.FITS_NOW:
                    failures.extend(r for a in assignment.attempts for r in a.reasons)
            if failures:
                messages.append(
                    f"couldn't assign flavors to pod set {ps.name}: " + ", ".join(sorted(failures))
                )
            outcomes.append(
                PodSetOutcome(ps.name, ps.count, dict(ps.per_pod), requests, tuple(assignments))
            )
        lines = assigner.lines
    else:
        for ps in inp.pod_sets:
            outcomes.append(
                PodSetOutcome(ps.name, ps.count, dict(ps.per_pod), _requests(ps, False), ())
            )

    all_groups = [g for o in outcomes for g in o.groups]
    limited_by: str | None
    if blocked is not None:
        verdict, limited_by, message = blocked
        kueue_message: str | None = message
    elif groups_unknown:
        verdict, limited_by, kueue_message = Verdict.UNKNOWN, "NOT_DISCLOSED", None
    else:
        worst = min(all_groups, key=lambda g: _RANK[g.verdict], default=None)
        verdict = worst.verdict if worst is not None else Verdict.FITS_NOW
        limited_by = (
            worst.limited_by
            if worst is not None and worst.verdict is not Verdict.FITS_NOW
            else None
        )
        kueue_message = (
            "; ".join(messages) if messages and verdict is not Verdict.FITS_NOW else None
        )
    preempts = (
        sum(g.preempts for g in all_groups)
        if verdict is Verdict.MUST_WAIT
        and all(g.preempts or g.verdict is Verdict.FITS_NOW for g in all_groups)
        else 0
    )
    if preempts and kueue_message:
        # scheduler.go: once the preemptions are issued.
        kueue_message += f". Pending the preemption of {preempts} workload(s)"
    reasons = tuple(
        parse_kueue_message(kueue_message, None, ReasonSource.OBJECT) if kueue_message else ()
    )
    shown = inp.show_numbers and not groups_unknown
    if not shown:
        outcomes = [_outcome_without_numbers(o) for o in outcomes]
    result = WhatIfResult(
        verdict=verdict,
        limited_by=limited_by,
        summary="",
        local_queue=lq_name,
        cluster_queue=cq_name,
        numbers_shown=shown,
        detail=_detail(inp, groups_unknown, lines),
        pod_sets=tuple(outcomes),
        lines=tuple(lines[fr] for fr in sorted(lines)) if shown else (),
        reasons=reasons if shown else tuple(_without_numbers(r) for r in reasons),
        kueue_message=kueue_message
        if shown or kueue_message is None
        else _strip_numbers(kueue_message),
        admission_checks=checks,
        next_steps=(),
        priority=inp.priority,
        priority_class=inp.priority_class,
        preempts=preempts,
    )
    return _explained(result, inp)


def _detail(
    inp: WhatIfInput, groups_unknown: bool, lines: Mapping[FlavorResource, QuotaLine]
) -> str:
    parts = []
    if groups_unknown or not inp.show_numbers:
        parts.append(inp.hidden_because)
    if not groups_unknown and any(line.verdict is Verdict.UNKNOWN for line in lines.values()):
        parts.append("cohort members could not be read; what the cohort can lend is unknown")
    if isinstance(inp.resource_flavors, Forbidden | Absent) and not groups_unknown:
        parts.append("ResourceFlavors could not be read: taints and node labels not checked")
    if not inp.candidates_complete and not groups_unknown and _within_cq_preemption(inp):
        parts.append(
            "preemption is simulated over the admitted Workloads you may read only: other "
            "namespaces' admitted Workloads in the ClusterQueue are not seen"
        )
    return "; ".join(p for p in parts if p)


def _within_cq_preemption(inp: WhatIfInput) -> bool:
    cq = _known(inp.cluster_queue)
    return text(cq, "spec", "preemption", "withinClusterQueue") in (
        "LowerPriority",
        "LowerOrNewerEqualPriority",
    )


_NUMBERS = (
    re.compile(
        r", previously considered podsets requests \([^)]*\) \+ current podset request "
        r"\([^)]*\) > maximum capacity \([^)]*\)"
    ),
    re.compile(r", [^,;]* more needed"),
)


def _strip_numbers(message: str) -> str:
    """Kueue's message with every quota figure cut off (numbers not disclosed)."""
    for pattern in _NUMBERS:
        message = pattern.sub("", message)
    return message


def _outcome_without_numbers(outcome: PodSetOutcome) -> PodSetOutcome:
    groups = tuple(
        replace(
            g,
            attempts=tuple(
                replace(a, reasons=tuple(_strip_numbers(r) for r in a.reasons)) for a in g.attempts
            ),
        )
        for g in outcome.groups
    )
    return replace(outcome, groups=groups)


def _without_numbers(reason: Reason) -> Reason:
    return replace(reason, message=_strip_numbers(reason.message), numbers=())


def _explained(result: WhatIfResult, inp: WhatIfInput) -> WhatIfResult:
    return replace(result, summary=_summary(result), next_steps=tuple(_unique(_steps(result, inp))))


def _unique(steps: Iterator[str]) -> Iterator[str]:
    seen: set[str] = set()
    for step in steps:
        if step not in seen:
            seen.add(step)
            yield step


def _limiting(result: WhatIfResult) -> GroupAssignment | None:
    groups = [g for o in result.pod_sets for g in o.groups if g.verdict is result.verdict]
    return groups[0] if groups else None


def _line(result: WhatIfResult, flavor: str | None, resource: str) -> QuotaLine | None:
    return next((x for x in result.lines if x.flavor == flavor and x.resource == resource), None)


def _limiting_line(result: WhatIfResult, group: GroupAssignment) -> QuotaLine | None:
    """The quota line that decides the group's verdict (its flavor, or the flavors tried)."""
    flavors = [group.flavor] if group.flavor else [a.flavor for a in group.attempts]
    for flavor in flavors:
        for res in group.resources:
            line = _line(result, flavor, res)
            if line is not None and line.verdict is group.verdict:
                return line
    return None


_QUEUE_SUMMARY = {
    "LOCAL_QUEUE_STOPPED": "LocalQueue {lq} is stopped: Kueue holds every Workload in it until it "
    "is resumed",
    "CLUSTER_QUEUE_STOPPED": "ClusterQueue {cq} is stopped: Kueue admits nothing from it until "
    "it is resumed",
    "CLUSTER_QUEUE_NOT_FOUND": "LocalQueue {lq} points to ClusterQueue {cq}, which does not exist",
    "CLUSTER_QUEUE_INACTIVE": "ClusterQueue {cq} is inactive (misconfigured), it admits nothing",
    "NAMESPACE_NOT_SELECTED": "ClusterQueue {cq}'s namespaceSelector excludes namespace {ns}",
}


def _summary(result: WhatIfResult) -> str:
    verdict = result.verdict.value.lower().replace("_", " ")
    lq, cq = result.local_queue, result.cluster_queue
    if result.limited_by in _QUEUE_SUMMARY:
        return f"{verdict}: " + _QUEUE_SUMMARY[result.limited_by].format(lq=lq, cq=cq, ns="")
    if result.verdict is Verdict.UNKNOWN and result.limited_by == "NOT_DISCLOSED":
        return f"unknown: {result.detail}"
    if result.verdict is Verdict.FITS_NOW:
        parts = []
        for outcome in result.pod_sets:
            for g in outcome.groups:
                borrow = " (borrowing from its cohort)" if g.borrows else ""
                if g.preempts_first_in:
                    borrow += (
                        f" (unless Kueue finds lower-priority Workloads to preempt in flavor "
                        f"{g.preempts_first_in} first)"
                    )
                parts.append(
                    f"pod set {g.pod_set}: flavor {g.flavor} for {', '.join(g.resources)}{borrow}"
                )
        text_ = f"fits now in ClusterQueue {cq}: " + "; ".join(parts)
        if result.admission_checks:
            text_ += "; then admission checks " + ", ".join(result.admission_checks) + " decide"
        return text_
    group = _limiting(result)
    if group is None:
        return f"{verdict}"
    line = _limiting_line(result, group)
    if result.verdict is Verdict.NEVER_FITS:
        if group.limited_by in _FLAVOR_CODES:
            reason = group.attempts[0].reasons[0] if group.attempts else ""
            return f"never fits: no flavor of ClusterQueue {cq} can take the Pods ({reason})"
        if group.limited_by == "NOT_IN_CLUSTER_QUEUE":
            return f"never fits: ClusterQueue {cq} has no quota for {', '.join(group.resources)}"
        if line is not None and result.numbers_shown and line.maximum_capacity is not None:
            res = line.resource
            return (
                f"never fits: needs {_q(line.requested, res)} {res} at once in flavor "
                f"{line.flavor}, more than the {_q(line.maximum_capacity, res)} ClusterQueue "
                f"{cq} can ever provide ({line.limited_by})"
            )
        return (
            f"never fits: needs more {', '.join(group.resources)} at once than ClusterQueue {cq} "
            f"can ever provide ({group.limited_by})"
        )
    if result.verdict is Verdict.MUST_WAIT and result.preempts:
        return (
            f"must wait for preemption: Kueue would preempt {result.preempts} admitted "
            f"Workload(s) of lower priority than {result.priority} in ClusterQueue {cq} "
            f"(withinClusterQueue policy) and admit it in flavor {group.flavor} once they are "
            "evicted"
        )
    if result.verdict is Verdict.MUST_WAIT:
        if line is not None and result.numbers_shown and line.available_now is not None:
            res = line.resource
            return (
                f"must wait: {_q(line.requested - line.available_now, res)} more {res} must be "
                f"free in flavor {line.flavor} of ClusterQueue {cq} ({line.limited_by}); "
                "it fits once admitted Workloads release it"
            )
        return (
            f"must wait: not enough unused {', '.join(group.resources)} in flavor {group.flavor} "
            f"of ClusterQueue {cq} now ({group.limited_by}); it fits once admitted Workloads "
            "release it"
        )
    return f"unknown: {result.detail}" if result.detail else "unknown"


def _toleration_for(taint_text: str, flavors: Mapping[str, KubeObject], flavor: str) -> str | None:
    for taint in items(flavors.get(flavor), "spec", "nodeTaints"):
        if _go_taint(taint) in taint_text:
            value = f', value: "{taint["value"]}"' if taint.get("value") else ""
            operator = "Equal" if taint.get("value") else "Exists"
            return (
                f"{{key: {taint.get('key')}, operator: {operator}{value}, "
                f"effect: {taint.get('effect')}}}"
            )
    return None


def _steps(result: WhatIfResult, inp: WhatIfInput) -> Iterator[str]:
    lq, cq = result.local_queue, result.cluster_queue
    flavors = {name(f): f for f in _known(inp.resource_flavors) or []}
    limited = result.limited_by
    if limited == "LOCAL_QUEUE_STOPPED":
        yield f"Ask the owner of LocalQueue {lq} to resume it, or submit to another LocalQueue."
    elif limited == "CLUSTER_QUEUE_STOPPED":
        yield f"Ask an admin to resume ClusterQueue {cq}, or submit to another LocalQueue."
    elif limited in ("CLUSTER_QUEUE_NOT_FOUND", "CLUSTER_QUEUE_INACTIVE"):
        yield f"Submit to another LocalQueue: an admin must create or fix ClusterQueue {cq} first."
    elif limited == "NAMESPACE_NOT_SELECTED":
        yield f"Submit to another LocalQueue: ClusterQueue {cq} does not take this namespace."
    elif limited == "NOT_DISCLOSED":
        yield (
            f"Ask an admin for read access to ClusterQueue {cq}, or to enable the service's "
            "quota disclosure policy (serve --quota-disclosure)."
        )
    if result.verdict is Verdict.FITS_NOW:
        yield f"Submit it to LocalQueue {lq}: Kueue would reserve its quota in the next cycle."
        if result.admission_checks:
            yield (
                "After the quota reservation, admission checks "
                f"{', '.join(result.admission_checks)} must pass before its Pods are created."
            )
        return
    for outcome in result.pod_sets:
        for group in outcome.groups:
            if group.verdict is Verdict.FITS_NOW:
                continue
            yield from _group_steps(result, outcome, group, flavors)
    if result.verdict in (Verdict.NEVER_FITS, Verdict.MUST_WAIT) and limited not in _QUEUE_SUMMARY:
        yield "Or submit to another LocalQueue whose ClusterQueue has room (ask whatIf for it)."


def _group_steps(
    result: WhatIfResult,
    outcome: PodSetOutcome,
    group: GroupAssignment,
    flavors: Mapping[str, KubeObject],
) -> Iterator[str]:
    cq = result.cluster_queue
    if group.limited_by in _FLAVOR_CODES:
        for attempt in group.attempts:
            for reason in attempt.reasons:
                if reason.startswith("untolerated taint"):
                    toleration = _toleration_for(reason, flavors, attempt.flavor)
                    shown = (
                        f": spec.template.spec.tolerations: [{toleration}]" if toleration else ""
                    )
                    yield (
                        f"Flavor {attempt.flavor} only offers tainted nodes: add a toleration to "
                        f"pod set {group.pod_set} if it may run there{shown}."
                    )
                elif "node affinity" in reason:
                    yield (
                        f"Pod set {group.pod_set}'s nodeSelector/affinity excludes flavor "
                        f"{attempt.flavor}'s node labels: relax it to match that flavor."
                    )
                elif reason.endswith("not found"):
                    yield f"ResourceFlavor {attempt.flavor} is missing: an admin must create it."
        return
    if group.limited_by == "NOT_IN_CLUSTER_QUEUE":
        yield (
            f"Drop the request for {', '.join(group.resources)}: ClusterQueue {cq} has no quota "
            "for it."
        )
        return
    line = _limiting_line(result, group)
    if not result.numbers_shown or line is None:
        if group.verdict is Verdict.NEVER_FITS:
            yield (
                f"Ask for less {', '.join(group.resources)} at once (fewer Pods or less per Pod): "
                "Kueue admits all Pods of a Workload together."
            )
        elif group.verdict is Verdict.MUST_WAIT:
            yield "Submit and wait: it is admitted once admitted Workloads release quota."
        return
    res = line.resource
    per_pod = outcome.per_pod.get(res, ZERO)
    if group.verdict is Verdict.NEVER_FITS and line.maximum_capacity is not None:
        cap = line.maximum_capacity - (line.requested - outcome.total.get(res, ZERO))
        pods = int(cap // per_pod) if per_pod else 0
        fewer = f" (e.g. {pods} Pods of {_q(per_pod, res)})" if 0 < pods < outcome.count else ""
        yield (
            f"Ask for at most {_q(max(ZERO, cap), res)} {res} at once in pod set "
            f"{group.pod_set}{fewer}: ClusterQueue {cq} can never provide more in flavor "
            f"{line.flavor} (Kueue admits all Pods of a Workload together)."
        )
        limit = "borrowingLimit" if line.limited_by == "BORROWING_LIMIT" else "nominalQuota"
        yield f"Or ask an admin to raise the {limit} of ClusterQueue {cq} for {res}."
    elif group.verdict is Verdict.MUST_WAIT and line.available_now is not None:
        more = line.requested - line.available_now
        yield (
            f"Submit and wait: it is admitted once {_q(more, res)} more {res} is free in flavor "
            f"{line.flavor} (admitted Workloads finishing)."
        )
        room = line.available_now - (line.requested - outcome.total.get(res, ZERO))
        if room > 0:
            pods = int(room // per_pod) if per_pod else 0
            fewer = f" (e.g. {pods} Pods of {_q(per_pod, res)})" if 0 < pods < outcome.count else ""
            yield f"Or ask for at most {_q(room, res)} {res} to start now{fewer}."
        if group.preempts:
            yield (
                f"Submitting it preempts {group.preempts} lower-priority Workload(s) of "
                f"ClusterQueue {cq}: they are evicted and requeued."
            )
        elif group.may_preempt:
            yield (
                f"Kueue may preempt Workloads of lower priority to make room, as ClusterQueue "
                f"{cq}'s preemption policy allows (not simulated here)."
            )
