"""whatIf's user-facing prose: the one-line summary, the detail and the next steps.

Derived from the answer only (verdict, groups, quota lines, Kueue's messages): nothing here
decides a verdict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from kueue_graphql.kueue.exact import format_quantity
from kueue_graphql.kueue.limits_prose import limit_clause, limit_levers
from kueue_graphql.kueue.model import Absent, Forbidden, KubeObject, QuotaLine, Verdict, known
from kueue_graphql.kueue.objects import dig, items, name, text
from kueue_graphql.kueue.quota import FlavorResource
from kueue_graphql.whatif.flavorassigner import UNFIT_FLAVOR_LIMITED_BY, go_taint
from kueue_graphql.whatif.model import (
    ZERO,
    GroupAssignment,
    PodSetOutcome,
    TopologyOutcome,
    WhatIfInput,
    WhatIfResult,
)
from kueue_graphql.whatif.topology import TOPOLOGY_LIMITED_BY

__all__ = ["detail", "explained"]


def detail(
    inp: WhatIfInput, groups_unknown: bool, lines: Mapping[FlavorResource, QuotaLine]
) -> str:
    parts = []
    if groups_unknown or not inp.show_numbers:
        parts.append(inp.hidden_because)
    unread = _namespace_unread(inp)
    if unread:
        parts.append(unread)
    if not groups_unknown and any(line.verdict is Verdict.UNKNOWN for line in lines.values()):
        parts.append("cohort members could not be read; what the cohort can lend is unknown")
    if isinstance(inp.resource_flavors, Forbidden | Absent) and not groups_unknown:
        parts.append("ResourceFlavors could not be read: taints and node labels not checked")
    if not inp.candidates_complete and not groups_unknown and _within_cq_preemption(inp):
        parts.append(
            "preemption is simulated over the admitted Workloads you may read only: other "
            "namespaces' admitted Workloads in the ClusterQueue or its cohort are not seen"
        )
    return "; ".join(p for p in parts if p)


def _namespace_unread(inp: WhatIfInput) -> str:
    """Why the ClusterQueue's namespaceSelector could not be checked ("" when it was, or needs
    no Namespace read)."""
    cq = known(inp.cluster_queue)
    selector = dig(cq, "spec", "namespaceSelector")
    labels = inp.namespace_labels
    if cq is None or not isinstance(selector, Mapping) or not selector:
        return ""
    if known(labels) is not None:
        return ""
    why = (
        f"you may not get Namespace {inp.namespace}"
        if isinstance(labels, Forbidden)
        else f"Namespace {inp.namespace} could not be read"
    )
    return (
        f"ClusterQueue {name(cq)} admits only the namespaces its namespaceSelector selects, and "
        f"{why} to compare its labels: whether Kueue would take the Workload at all is not known"
    )


def _within_cq_preemption(inp: WhatIfInput) -> bool:
    """Kueue may preempt in the ClusterQueue or reclaim from its cohort."""
    cq = known(inp.cluster_queue)
    return text(cq, "spec", "preemption", "withinClusterQueue") in (
        "LowerPriority",
        "LowerOrNewerEqualPriority",
    ) or (
        text(cq, "spec", "cohortName") is not None
        and text(cq, "spec", "preemption", "reclaimWithinCohort") not in (None, "Never")
    )


_REASONS = {
    "InClusterQueue": "of lower priority in the ClusterQueue",
    "InCohortReclamation": "reclaiming the quota it lent to the cohort",
    "InCohortReclaimWhileBorrowing": "of lower priority, while borrowing (borrowWithinCohort)",
}


def _targets(result: WhatIfResult) -> str:
    """The targets as Kueue would evict them: namespace/name, their ClusterQueue and why."""
    return "; ".join(
        f"{t.workload.namespace}/{t.workload.name} in ClusterQueue {t.cluster_queue}, "
        f"{_REASONS.get(t.reason, t.reason)}"
        for t in result.preemption_targets
    )


def explained(result: WhatIfResult, inp: WhatIfInput) -> WhatIfResult:
    return replace(
        result,
        summary=_summary(result, inp.namespace),
        next_steps=tuple(_unique(_steps(result, inp))),
    )


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
    "CLUSTER_QUEUE_DELETING": "ClusterQueue {cq} is being deleted (kept only until the Workloads "
    "holding quota in it finish): Kueue treats it as inactive and admits nothing new",
    "NAMESPACE_NOT_SELECTED": "ClusterQueue {cq}'s namespaceSelector excludes namespace {ns}",
}


def _summary(result: WhatIfResult, namespace: str) -> str:
    verdict = result.verdict.value.lower().replace("_", " ")
    lq, cq = result.local_queue, result.cluster_queue
    if result.limited_by in _QUEUE_SUMMARY:
        return f"{verdict}: " + _QUEUE_SUMMARY[result.limited_by].format(lq=lq, cq=cq, ns=namespace)
    if result.verdict is Verdict.UNKNOWN and result.limited_by in (
        "NOT_DISCLOSED",
        "NAMESPACE_NOT_READABLE",
    ):
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
        parts += [_placed(t) for t in _placements(result)]
        text_ = f"fits now in ClusterQueue {cq}: " + "; ".join(parts)
        if result.admission_checks:
            text_ += "; then admission checks " + ", ".join(result.admission_checks) + " decide"
        return text_
    if result.limited_by == TOPOLOGY_LIMITED_BY:
        return f"{verdict}: " + "; ".join(
            _not_placed(t) for t in _placements(result) if t.verdict is result.verdict
        )
    group = _limiting(result)
    if group is None:
        return f"{verdict}"
    line = _limiting_line(result, group)
    if result.verdict is Verdict.NEVER_FITS:
        if group.limited_by in UNFIT_FLAVOR_LIMITED_BY:
            reason = group.attempts[0].reasons[0] if group.attempts else ""
            return f"never fits: no flavor of ClusterQueue {cq} can take the Pods ({reason})"
        if group.limited_by == "NOT_IN_CLUSTER_QUEUE":
            return f"never fits: ClusterQueue {cq} has no quota for {', '.join(group.resources)}"
        if line is not None and result.numbers_shown and line.maximum_capacity is not None:
            res = line.resource
            return (
                f"never fits: needs {format_quantity(line.requested, res)} {res} at once in "
                f"flavor {line.flavor}, more than the "
                f"{format_quantity(line.maximum_capacity, res)} ClusterQueue "
                f"{cq} can ever provide ({line.limited_by}){_where(line)}"
            )
        return (
            f"never fits: needs more {', '.join(group.resources)} at once than ClusterQueue {cq} "
            f"can ever provide ({group.limited_by})"
        )
    if result.verdict is Verdict.MUST_WAIT and result.preempts:
        return (
            f"must wait for preemption: Kueue would preempt {result.preempts} admitted "
            f"Workload(s) ({_targets(result)}) and admit it in flavor {group.flavor} of "
            f"ClusterQueue {cq} once they are evicted"
        )
    if result.verdict is Verdict.MUST_WAIT:
        if line is not None and result.numbers_shown and line.available_now is not None:
            res = line.resource
            return (
                f"must wait: {format_quantity(line.requested - line.available_now, res)} more "
                f"{res} must be free in flavor {line.flavor} of ClusterQueue {cq} "
                f"({line.limited_by}{_where(line)}); "
                "it fits once admitted Workloads release it"
            )
        return (
            f"must wait: not enough unused {', '.join(group.resources)} in flavor {group.flavor} "
            f"of ClusterQueue {cq} now ({group.limited_by}); it fits once admitted Workloads "
            "release it"
        )
    return f"unknown: {result.detail}" if result.detail else "unknown"


def _placements(result: WhatIfResult) -> list[TopologyOutcome]:
    return [o.topology for o in result.pod_sets if o.topology is not None]


def _asked(t: TopologyOutcome) -> str:
    where = f"one {t.level}" if t.level else "the Topology"
    mode = f" ({t.mode})" if t.mode else ""
    slices = (
        f", in slices of {t.slice_size} each in one {t.slice_level}"
        if t.slice_size and t.slice_level
        else ""
    )
    return f"{where}{mode}{slices}"


def _placed(t: TopologyOutcome) -> str:
    head = f"pod set {t.pod_set} placed by topology-aware scheduling in {_asked(t)}"
    fell_back = f" (falls back to {t.placed_at})" if t.placed_at and t.placed_at != t.level else ""
    if t.domains is None:
        return f"{head}{fell_back} (domains not shown: you may not list Nodes and Pods)"
    names = ", ".join(d[-1] for d in t.domains)
    return f"{head}{fell_back}: in {t.placed_at} {names}"


def _not_placed(t: TopologyOutcome) -> str:
    head = f"topology-aware scheduling cannot place pod set {t.pod_set} in {_asked(t)}"
    said = f" (Kueue would say: {t.message})" if t.message else ""
    return f"{head}{said}; {t.why}" if t.why else f"{head}{said}"


def _topology_steps(t: TopologyOutcome) -> Iterator[str]:
    if t.verdict is Verdict.UNKNOWN:
        yield (
            "Ask someone who may list Nodes, and Pods and Workloads of every namespace, for "
            f"whatIf's TAS answer ({t.why})."
        )
        return
    if t.mode == "required":
        yield (
            f"Relax kueue.x-k8s.io/podset-required-topology to podset-preferred-topology for "
            f"pod set {t.pod_set}: Kueue then falls back to a wider level when no {t.level} "
            "has room."
        )
    if t.slice_size and t.slice_size > 1:
        yield f"Ask for smaller slices (kueue.x-k8s.io/podset-slice-size < {t.slice_size})."
    unit = "slices" if t.slice_size and t.slice_size > 1 else "Pods"
    if t.verdict is Verdict.NEVER_FITS and t.most_ever is not None and t.wanted:
        yield (
            f"Ask for fewer Pods per domain: the largest takes {t.most_ever} of {t.wanted} "
            f"{unit} even with nothing running."
        )
    elif t.fitting is not None and t.wanted:
        yield (
            f"Ask for fewer Pods per domain: the best domain takes {t.fitting} of {t.wanted} "
            f"{unit} now."
        )
    if t.verdict is Verdict.MUST_WAIT:
        yield f"Submit and wait: {t.why}."
    else:
        yield "Or use a flavor whose Topology has domains with more capacity (more Nodes)."


def _where(line: QuotaLine) -> str:
    clause = limit_clause(line)
    return f": {clause}" if clause else ""


def _toleration_for(taint_text: str, flavors: Mapping[str, KubeObject], flavor: str) -> str | None:
    for taint in items(flavors.get(flavor), "spec", "nodeTaints"):
        if go_taint(taint) in taint_text:
            value = f', value: "{taint["value"]}"' if taint.get("value") else ""
            operator = "Equal" if taint.get("value") else "Exists"
            return (
                f"{{key: {taint.get('key')}, operator: {operator}{value}, "
                f"effect: {taint.get('effect')}}}"
            )
    return None


def _steps(result: WhatIfResult, inp: WhatIfInput) -> Iterator[str]:
    lq, cq = result.local_queue, result.cluster_queue
    flavors = {name(f): f for f in known(inp.resource_flavors) or []}
    limited = result.limited_by
    if limited == "LOCAL_QUEUE_STOPPED":
        yield f"Ask the owner of LocalQueue {lq} to resume it, or submit to another LocalQueue."
    elif limited == "CLUSTER_QUEUE_STOPPED":
        yield f"Ask an admin to resume ClusterQueue {cq}, or submit to another LocalQueue."
    elif limited in ("CLUSTER_QUEUE_NOT_FOUND", "CLUSTER_QUEUE_INACTIVE"):
        yield f"Submit to another LocalQueue: an admin must create or fix ClusterQueue {cq} first."
    elif limited == "CLUSTER_QUEUE_DELETING":
        yield (
            f"Submit to another LocalQueue: ClusterQueue {cq} is being deleted and admits nothing "
            "new (ask an admin which queue replaces it)."
        )
    elif limited == "NAMESPACE_NOT_READABLE":
        yield (
            f"Ask an admin whether ClusterQueue {cq}'s namespaceSelector selects namespace "
            f"{inp.namespace}, or for `get` on namespaces/{inp.namespace} so whatIf can check it "
            f"(kubectl auth can-i get namespaces/{inp.namespace})."
        )
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
        if outcome.topology is not None and outcome.topology.verdict is not Verdict.FITS_NOW:
            yield from _topology_steps(outcome.topology)
    if result.verdict in (Verdict.NEVER_FITS, Verdict.MUST_WAIT) and limited not in _QUEUE_SUMMARY:
        yield "Or submit to another LocalQueue whose ClusterQueue has room (ask whatIf for it)."


def _group_steps(
    result: WhatIfResult,
    outcome: PodSetOutcome,
    group: GroupAssignment,
    flavors: Mapping[str, KubeObject],
) -> Iterator[str]:
    cq = result.cluster_queue
    if group.limited_by in UNFIT_FLAVOR_LIMITED_BY:
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
        fewer = (
            f" (e.g. {pods} Pods of {format_quantity(per_pod, res)})"
            if 0 < pods < outcome.count
            else ""
        )
        yield (
            f"Ask for at most {format_quantity(max(ZERO, cap), res)} {res} at once in pod set "
            f"{group.pod_set}{fewer}: ClusterQueue {cq} can never provide more in flavor "
            f"{line.flavor} (Kueue admits all Pods of a Workload together)."
        )
        yield from limit_levers(line)
        limit = "borrowingLimit" if line.limited_by == "BORROWING_LIMIT" else "nominalQuota"
        yield f"Or ask an admin to raise the {limit} of ClusterQueue {cq} for {res}."
    elif group.verdict is Verdict.MUST_WAIT and line.available_now is not None:
        more = line.requested - line.available_now
        yield (
            f"Submit and wait: it is admitted once {format_quantity(more, res)} more {res} is "
            f"free in flavor {line.flavor} (admitted Workloads finishing)."
        )
        yield from limit_levers(line)
        room = line.available_now - (line.requested - outcome.total.get(res, ZERO))
        if room > 0:
            pods = int(room // per_pod) if per_pod else 0
            fewer = (
                f" (e.g. {pods} Pods of {format_quantity(per_pod, res)})"
                if 0 < pods < outcome.count
                else ""
            )
            yield f"Or ask for at most {format_quantity(room, res)} {res} to start now{fewer}."
        if group.preempts and result.preemption_targets:
            yield (
                f"Submitting it preempts {result.preempts} Workload(s) "
                f"({_targets(result)}): they are evicted and requeued."
            )
        elif group.may_preempt:
            yield (
                f"Kueue may preempt Workloads of lower priority to make room, as ClusterQueue "
                f"{cq}'s preemption policy allows; none found among the admitted Workloads you "
                "may read."
            )
