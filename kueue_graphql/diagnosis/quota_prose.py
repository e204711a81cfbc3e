"""Quota reasons with their figures and the one-line summary of a Workload waiting for quota."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal

from kueue_graphql.diagnosis.blocking import code_group
from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.flavor_outcomes import (
    PodSetQuota,
    ceilings,
    pod_set_quotas,
    requested,
    shortfalls,
)
from kueue_graphql.kueue.exact import format_quantity
from kueue_graphql.kueue.limits_prose import limit_clause
from kueue_graphql.kueue.messages import parse_taint
from kueue_graphql.kueue.model import Forbidden, Number, QuotaReport, Reason, ReasonSource
from kueue_graphql.kueue.vocabulary import Code, CodeGroup

__all__ = ["annotate_with_quota", "quota_summary", "with_workload_needs"]


def with_workload_needs(reasons: list[Reason], needs: Mapping[str, Decimal] | None) -> list[Reason]:
    """Quota reasons carry, as `requested`, the one aggregate the quota lines use: all pod
    sets, per resource, as Kueue counts them (Kueue's message names only the pod set that
    failed and what earlier ones took)."""
    if not needs:
        return reasons
    out = []
    for r in reasons:
        total = needs.get(r.resource or "")
        if r.code == Code.EXCEEDS_MAX_QUOTA and total is not None:
            aggregate = Number("requested", total, _q(total, r.resource))
            r = replace(
                r, numbers=tuple(aggregate if n.name == "requested" else n for n in r.numbers)
            )
        out.append(r)
    return out


def annotate_with_quota(reasons: list[Reason], quota: QuotaReport) -> list[Reason]:
    """Add the ClusterQueue's nominal quota to quota reasons, where the caller may read it."""
    out = []
    for r in reasons:
        if r.code in (Code.EXCEEDS_MAX_QUOTA, Code.WAITING_FOR_QUOTA) and quota.lines:
            line = next(
                (x for x in quota.lines if x.flavor == r.flavor and x.resource == r.resource),
                None,
            )
            if line is not None:
                extra = [
                    Number("nominalQuota", line.nominal_quota, _q(line.nominal_quota, r.resource))
                ]
                if r.number("requested") is None:
                    extra.append(
                        Number("requested", line.requested, _q(line.requested, r.resource))
                    )
                if line.borrowing_limit is not None:
                    extra.append(
                        Number(
                            "borrowingLimit",
                            line.borrowing_limit,
                            _q(line.borrowing_limit, r.resource),
                        )
                    )
                extra.append(Number("reserved", line.reserved, _q(line.reserved, r.resource)))
                r = replace(r, numbers=r.numbers + tuple(extra))
        out.append(r)
    return out


def _q(value: Decimal, resource: str | None) -> str:
    return format_quantity(value, resource)


def quota_summary(ctx: Context, reasons: Sequence[Reason], quota: QuotaReport) -> str:
    first = reasons[0]
    if first.code in (Code.EXCEEDS_MAX_QUOTA, Code.WAITING_FOR_QUOTA):
        outcome = _quota_outcome(pod_set_quotas(reasons), quota)
        if outcome is not None:
            return outcome
    causes = [
        r
        for r in reasons
        if code_group(r) is CodeGroup.QUEUE_CONFIGURATION and r.source is ReasonSource.OBJECT
    ]
    if causes and first.code in (Code.CLUSTER_QUEUE_INACTIVE, Code.LOCAL_QUEUE_INACTIVE):
        named = "; ".join(c.message.split(" (Active=False")[0] for c in causes)
        return f"ClusterQueue {ctx.cq_name} cannot admit any Workload: {named}"
    if first.code == Code.CLUSTER_QUEUE_INACTIVE and isinstance(ctx.inp.cluster_queue, Forbidden):
        return (
            f"{first.message}; you may not read ClusterQueue {ctx.cq_name}, so the cause "
            "(its Active condition) is hidden from you: ask an admin"
        )
    if first.code == Code.UNTOLERATED_FLAVOR_TAINT:
        taint = first.message.removeprefix("untolerated taint ").rsplit(" in flavor ", 1)[0]
        parsed = parse_taint(taint)
        shown = f"{parsed[0]}={parsed[1] or ''}:{parsed[2] or ''}" if parsed else taint
        return (
            f"no flavor can be assigned: flavor {first.flavor} is for nodes tainted {shown} "
            "and the Pod template does not tolerate that taint"
        )
    return first.message


def _where_limits_bind(reasons: Sequence[Reason], quota: QuotaReport) -> str:
    """The limits set elsewhere in the cohort tree behind these reasons, as a clause."""
    clauses = []
    for r in reasons:
        line = next(
            (x for x in quota.lines if x.flavor == r.flavor and x.resource == r.resource), None
        )
        clause = limit_clause(line)
        if clause and clause not in clauses:
            clauses.append(clause)
    return f": {'; '.join(clauses)}" if clauses else ""


def _quota_outcome(pod_sets: Sequence[PodSetQuota], quota: QuotaReport) -> str | None:
    """The most severe pod set speaks (KEP-10852's precedence): one that can never fit in any
    flavor Kueue tried outweighs one that must wait; every tried flavor is named, and a limit
    set elsewhere in the cohort tree where it binds."""
    never = next((p for p in pod_sets if p.never_fits), None)
    if never is not None:
        if any(r.number("maximumCapacity") is None for r in never.exceeded):
            return None
        if len(never.exceeded) == 1:
            r = never.exceeded[0]
            req, cap = r.number("requested"), r.number("maximumCapacity")
            if req is None or cap is None:
                return None
            return (
                f"needs {_q(req, r.resource)} {r.resource} at once in flavor {r.flavor}, "
                f"more than the {_q(cap, r.resource)} its ClusterQueue can ever provide"
            ) + _where_limits_bind(never.exceeded, quota)
        asked = requested(never.exceeded)
        return (
            f"needs {asked or 'more'} at once, more than its ClusterQueue can ever provide in "
            f"any flavor Kueue tried (at most {ceilings(never.exceeded)})"
        ) + _where_limits_bind(never.exceeded, quota)
    waits = next((p for p in pod_sets if p.waiting), None)
    if waits is None or any(r.number("moreNeeded") is None for r in waits.waiting):
        return None
    text = f"waits for quota: {shortfalls(waits.waiting)}" + _where_limits_bind(
        waits.waiting, quota
    )
    if waits.exceeded and all(r.number("maximumCapacity") is not None for r in waits.exceeded):
        text += f" (never enough in the other flavors: at most {ceilings(waits.exceeded)})"
    return text
