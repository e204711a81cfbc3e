"""The whatIf entry point: Kueue's scheduling cycle for one Workload that does not exist yet.

Mirrors Kueue v0.17.0 pkg/scheduler/scheduler.go: the queue gates first (`nominate`), then the
flavor assignment of every pod set (flavorassigner), the preemption targets where the assignment
needs them (preemption), and the inadmissible message Kueue would write (". Pending the
preemption of N workload(s)" once preemptions are issued). The numbers are then cut where they
may not be shown (disclosure) and the answer explained (explanation).
"""

from __future__ import annotations

from dataclasses import replace

from kueue_graphql.kueue.messages import parse_kueue_message
from kueue_graphql.kueue.model import KubeObject, QuotaLine, ReasonSource, Verdict, known
from kueue_graphql.kueue.objects import items, name, text
from kueue_graphql.kueue.quota import FlavorResource
from kueue_graphql.whatif.disclosure import (
    line_without_names,
    outcome_without_numbers,
    reason_without_numbers,
    strip_numbers,
)
from kueue_graphql.whatif.explanation import detail, explained
from kueue_graphql.whatif.flavorassigner import FlavorAssigner, pod_set_requests
from kueue_graphql.whatif.gates import queue_gate
from kueue_graphql.whatif.model import (
    RANK,
    GroupAssignment,
    PodSetOutcome,
    PreemptionTarget,
    WhatIfInput,
    WhatIfResult,
)
from kueue_graphql.whatif.topology import TOPOLOGY_LIMITED_BY, TopologyStep

__all__ = ["what_if"]


def _topology_step(
    inp: WhatIfInput, cq: KubeObject, outcomes: list[PodSetOutcome], messages: list[str]
) -> list[PodSetOutcome]:
    """assignFlavors' TAS step once every pod set has its flavors: placed now when quota fits
    (Kueue's mode Fit), the first that does not fit giving Kueue's message; else (and after
    that first failure) as if no TAS Workload were admitted."""
    step = TopologyStep(inp, cq)
    quota_fits = all(g.verdict is Verdict.FITS_NOW for o in outcomes for g in o.groups)
    placed: list[PodSetOutcome] = []
    for ps, outcome in zip(inp.pod_sets, outcomes, strict=True):
        found = step.place(ps, outcome, quota_fits)
        if found is not None and quota_fits and found.verdict is not Verdict.FITS_NOW:
            if found.message:
                messages.append(f"couldn't assign flavors to pod set {ps.name}: {found.message}")
            quota_fits = False
        placed.append(replace(outcome, topology=found))
    return placed


def what_if(inp: WhatIfInput) -> WhatIfResult:
    """The verdict Kueue would reach for these pod sets in this LocalQueue, now."""
    lq_name = name(inp.local_queue)
    cq_name = text(inp.local_queue, "spec", "clusterQueue")
    cq = known(inp.cluster_queue)
    groups_unknown = cq is None
    checks = tuple(
        str(c.get("name") or "")
        for c in items(cq, "spec", "admissionChecksStrategy", "admissionChecks")
    )
    outcomes: list[PodSetOutcome] = []
    messages: list[str] = []
    lines: dict[FlavorResource, QuotaLine] = {}
    blocked = queue_gate(inp)
    assigner: FlavorAssigner | None = None
    if blocked is None and cq is not None:
        assigner = FlavorAssigner(inp, cq)
        covers_pods = assigner.group_of("pods") is not None
        stopped = False
        for ps in inp.pod_sets:
            requests = pod_set_requests(ps, covers_pods)
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
            if failures and not stopped:
                messages.append(
                    f"couldn't assign flavors to pod set {ps.name}: " + ", ".join(sorted(failures))
                )
            # Kueue's assignFlavors returns at the first pod set left without a flavor (NoFit:
            # neither fits nor may preempt; flavorassigner.go): its message names no later one.
            stopped = stopped or any(
                a.verdict is not Verdict.FITS_NOW and not a.may_preempt for a in assignments
            )
            outcomes.append(
                PodSetOutcome(ps.name, ps.count, dict(ps.per_pod), requests, tuple(assignments))
            )
        lines = assigner.lines
        if not stopped:
            outcomes = _topology_step(inp, cq, outcomes, messages)
    else:
        for ps in inp.pod_sets:
            outcomes.append(
                PodSetOutcome(ps.name, ps.count, dict(ps.per_pod), pod_set_requests(ps, False), ())
            )

    all_groups = [g for o in outcomes for g in o.groups]
    placements = [o.topology for o in outcomes if o.topology is not None]
    limited_by: str | None
    if blocked is not None:
        verdict, limited_by, message = blocked
        kueue_message: str | None = message
    elif groups_unknown:
        verdict, limited_by, kueue_message = Verdict.UNKNOWN, "NOT_DISCLOSED", None
    else:
        worst = min(all_groups, key=lambda g: RANK[g.verdict], default=None)
        verdict = worst.verdict if worst is not None else Verdict.FITS_NOW
        limited_by = (
            worst.limited_by
            if worst is not None and worst.verdict is not Verdict.FITS_NOW
            else None
        )
        placed = min(placements, key=lambda t: RANK[t.verdict], default=None)
        if placed is not None and RANK[placed.verdict] < RANK[verdict]:
            verdict, limited_by = placed.verdict, TOPOLOGY_LIMITED_BY
        kueue_message = (
            "; ".join(messages) if messages and verdict is not Verdict.FITS_NOW else None
        )
    targets: list[PreemptionTarget] = []
    if (
        assigner is not None
        and verdict is Verdict.MUST_WAIT
        and all(g.preempts or g.verdict is Verdict.FITS_NOW for g in all_groups)
    ):
        # scheduler.go: GetTargets once for the whole assignment.
        targets = assigner.targets_for([(g, o.total) for o in outcomes for g in o.groups])
    preempts = len(targets)
    if preempts and kueue_message:
        # scheduler.go: once the preemptions are issued.
        kueue_message += f". Pending the preemption of {preempts} workload(s)"
    reasons = tuple(
        parse_kueue_message(kueue_message, None, ReasonSource.OBJECT) if kueue_message else ()
    )
    shown = inp.show_numbers and not groups_unknown
    if not inp.names_shown:
        lines = {fr: line_without_names(line, cq_name or "") for fr, line in lines.items()}
    if not shown:
        outcomes = [outcome_without_numbers(o) for o in outcomes]
    result = WhatIfResult(
        verdict=verdict,
        limited_by=limited_by,
        summary="",
        local_queue=lq_name,
        cluster_queue=cq_name,
        numbers_shown=shown,
        detail=detail(inp, groups_unknown, lines),
        pod_sets=tuple(outcomes),
        lines=tuple(lines[fr] for fr in sorted(lines)) if shown else (),
        reasons=reasons if shown else tuple(reason_without_numbers(r) for r in reasons),
        kueue_message=kueue_message
        if shown or kueue_message is None
        else strip_numbers(kueue_message),
        admission_checks=checks,
        next_steps=(),
        priority=inp.priority,
        priority_class=inp.priority_class,
        preempts=preempts,
        preemption_targets=tuple(targets),
    )
    return explained(result, inp)
