"""Stages before Kueue's verdict on a Workload: no Workload readable, none at all, an object Kueue
does not manage (no queue name), or one Kueue has not made a Workload for yet.
"""

from __future__ import annotations

from decimal import Decimal

from kueue_graphql.diagnosis.blocking import blocking_for
from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.evidence import (
    queue_object_reasons,
)
from kueue_graphql.diagnosis.model import Diagnosis, Layer, PodSchedulingProblem, Stage
from kueue_graphql.diagnosis.pods import is_unscheduled, pod_problem
from kueue_graphql.diagnosis.report import build
from kueue_graphql.kueue.model import Forbidden, Number, Reason, ReasonSource
from kueue_graphql.kueue.objects import (
    QUEUE_NAME_LABEL,
    dig,
    event_message,
    events_for,
    ref,
    text,
    uid,
)
from kueue_graphql.kueue.owners import (
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    group_total_count,
    pod_group_name,
)
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["without_workload"]


def _pods_layer(ctx: Context) -> tuple[Stage, Layer, list[PodSchedulingProblem]]:
    pending = [p for p in ctx.pods if text(p, "status", "phase") in (None, "Pending")]
    problems = [pod_problem(p, ctx.events, ctx.nodes) for p in pending]
    if any(is_unscheduled(p) for p in pending):
        return Stage.ADMITTED_PODS_PENDING, Layer.SCHEDULER, problems
    return Stage.RUNNING, Layer.RUNTIME, problems


def without_workload(ctx: Context) -> Diagnosis:
    if isinstance(ctx.inp.workload, Forbidden):
        reason = Reason(
            Code.WORKLOAD_NOT_READABLE,
            "you may not read the Workload of this object, so Kueue's verdict is hidden",
            ReasonSource.OBJECT,
        )
        suspended = dig(ctx.owner, "spec", "suspend") is True
        stage = Stage.WAITING_FOR_QUOTA_RESERVATION if suspended else Stage.RUNNING
        layer = Layer.KUEUE if suspended else Layer.RUNTIME
        return build(ctx, stage, layer, reason.message, ctx.lq_ref(), [reason])
    if ctx.owner is None:
        reason = Reason(
            Code.NOT_FOUND, "neither the object nor its Workload exists", ReasonSource.OBJECT
        )
        return build(ctx, Stage.NO_WORKLOAD_YET, Layer.KUEUE, reason.message, None, [reason])
    owner_ref = ref(ctx.owner)
    if not ctx.queue_name:
        _, layer, problems = _pods_layer(ctx)
        reason = Reason(
            Code.NO_QUEUE_NAME,
            f"{owner_ref.kind} {owner_ref.name} has no {QUEUE_NAME_LABEL} label, so Kueue does "
            "not manage it; kube-scheduler places its Pods directly",
            ReasonSource.OBJECT,
            object=owner_ref,
        )
        return build(ctx, Stage.NOT_MANAGED, layer, reason.message, None, [reason], pods=problems)
    group = pod_group_name(ctx.owner)
    total = group_total_count(ctx.pods) if group else None
    if group and total is not None:
        present = len(ctx.pods)
        incomplete = Reason(
            Code.POD_GROUP_INCOMPLETE,
            f"Kueue waits for all {total} Pods of pod group {group} "
            f"({POD_GROUP_TOTAL_COUNT_ANNOTATION}) before it creates the group's Workload: "
            f"{present} of {total} exist",
            ReasonSource.OBJECT,
            object=owner_ref,
            numbers=(
                Number("podsInGroup", Decimal(present), str(present)),
                Number("groupTotalCount", Decimal(total), str(total)),
            ),
        )
        if present < total:
            return build(
                ctx,
                Stage.NO_WORKLOAD_YET,
                Layer.KUEUE,
                incomplete.message,
                owner_ref,
                [incomplete, *queue_object_reasons(ctx)],
            )
    reasons = [
        Reason(
            Code.NO_WORKLOAD,
            f"{owner_ref.kind} {owner_ref.name} names LocalQueue {ctx.queue_name} but Kueue has "
            "not created a Workload for it yet",
            ReasonSource.OBJECT,
            object=owner_ref,
        )
    ]
    for event in events_for(ctx.events, owner_ref.kind, owner_ref.name, uid(ctx.owner)):
        if text(event, "type") == "Warning":
            reasons.append(
                Reason(
                    str(text(event, "reason") or "Warning"),
                    event_message(event),
                    ReasonSource.EVENT,
                    object=owner_ref,
                )
            )
    reasons.extend(queue_object_reasons(ctx))
    return build(
        ctx,
        Stage.NO_WORKLOAD_YET,
        Layer.KUEUE,
        reasons[0].message,
        blocking_for(ctx, reasons) or ctx.lq_ref(),
        reasons,
    )
