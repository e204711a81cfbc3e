"""Stages where the Workload waits: for a quota reservation, then for its admission checks."""

from __future__ import annotations

from kueue_graphql.diagnosis.blocking import blocking_for
from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.evidence import (
    admission_check_reasons,
    condition_reason,
    pending_evidence,
    queue_object_reasons,
    quota_report,
)
from kueue_graphql.diagnosis.head_of_line import behind_queue_head, requeue_state
from kueue_graphql.diagnosis.model import Diagnosis, Layer, Stage
from kueue_graphql.diagnosis.quota_prose import (
    annotate_with_quota,
    quota_summary,
    with_workload_needs,
)
from kueue_graphql.diagnosis.report import build
from kueue_graphql.diagnosis.staleness import earlier_summary
from kueue_graphql.diagnosis.topology import topology_fits, topology_summary
from kueue_graphql.kueue.model import Reason, ReasonSource
from kueue_graphql.kueue.podsets import workload_needs
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["waiting_for_checks", "waiting_for_quota"]


def waiting_for_quota(ctx: Context) -> Diagnosis:
    quota = quota_report(ctx)
    # Kueue's figures checked against the quota lines: one arithmetic (staleness.py).
    current, earlier = pending_evidence(ctx, quota)
    reasons = current + queue_object_reasons(ctx)
    reasons = with_workload_needs(reasons, workload_needs(ctx.workload))
    reasons = annotate_with_quota(reasons, quota)
    behind = behind_queue_head(ctx, quota, tried=bool(current))
    if behind is not None:
        # Under StrictFIFO the queue's order decides first: Kueue tries only the head.
        reasons.insert(0, behind)
    requeued = requeue_state(ctx.workload)
    if requeued is not None:
        reasons.append(requeued)
    if not reasons:
        reasons.append(
            Reason(
                Code.NOT_YET_EVALUATED,
                "Kueue has not written a reason yet: the Workload is queued and waits for its "
                "first scheduling attempt",
                ReasonSource.OBJECT,
                object=ctx.lq_ref(),
            )
        )
    blocking = blocking_for(ctx, reasons, quota) or ctx.cq_ref() or ctx.lq_ref()
    placements = topology_fits(ctx, reasons)
    first = quota_summary(ctx, reasons, quota)
    if placements and reasons[0].code == Code.TOPOLOGY_PLACEMENT_FAILED:
        first = topology_summary(placements[0])
    summary = first + earlier_summary(earlier)
    return build(
        ctx,
        Stage.WAITING_FOR_QUOTA_RESERVATION,
        Layer.KUEUE,
        summary,
        blocking,
        reasons,
        quota,
        topology=placements,
    )


def waiting_for_checks(ctx: Context) -> Diagnosis:
    assert ctx.workload is not None
    reasons = admission_check_reasons(ctx)
    admitted = condition_reason(ctx.workload, "Admitted")
    if admitted is not None and admitted.kueue_reason not in (None, "Admitted"):
        reasons.append(admitted)
    blocking = next((r.object for r in reasons if r.object is not None), ctx.cq_ref())
    summary = reasons[0].message if reasons else "quota reserved, waiting for admission checks"
    return build(
        ctx,
        Stage.WAITING_FOR_ADMISSION_CHECKS,
        Layer.KUEUE,
        summary,
        blocking,
        reasons,
        quota_report(ctx),
    )
