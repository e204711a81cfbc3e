"""Stages where the Workload left the admission path: finished, deactivated, evicted, preempted."""

from __future__ import annotations

from dataclasses import replace

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.evidence import (
    admission_check_reasons,
    condition_reason,
    pending_evidence,
    quota_report,
)
from kueue_graphql.diagnosis.model import Diagnosis, Layer, Stage
from kueue_graphql.diagnosis.report import build
from kueue_graphql.diagnosis.staleness import EarlierReason, earlier_summary
from kueue_graphql.kueue.model import ObjectRef, Reason, ReasonSource
from kueue_graphql.kueue.objects import (
    condition,
    condition_true,
    mapping,
    ref,
)
from kueue_graphql.kueue.vocabulary import Code, EvictionReason, WorkloadCondition

__all__ = ["deactivated", "evicted", "finished"]


def finished(ctx: Context) -> Diagnosis:
    assert ctx.workload is not None
    reason = condition_reason(ctx.workload, "Finished")
    assert reason is not None
    failed = reason.kueue_reason == "Failed"
    stage = Stage.FINISHED_FAILED if failed else Stage.FINISHED_SUCCEEDED
    summary = f"finished: {reason.message or reason.kueue_reason}"
    return build(ctx, stage, Layer.RUNTIME, summary, None, [reason])


def deactivated(ctx: Context) -> Diagnosis:
    assert ctx.workload is not None
    reasons: list[Reason] = []
    for type_ in ("Evicted", "DeactivationTarget", "Requeued"):
        cond = condition(ctx.workload, type_)
        if cond is not None and cond.get("status") == "True":
            r = condition_reason(ctx.workload, type_)
            if r is not None:
                reasons.append(r)
    checks = [r for r in admission_check_reasons(ctx) if r.kueue_reason == "Rejected"]
    reasons.extend(checks)
    if not reasons:
        reasons.append(
            Reason(
                Code.DEACTIVATED,
                "spec.active is false: Kueue will not admit the Workload until it is reactivated",
                ReasonSource.OBJECT,
            )
        )
    blocking = checks[0].object if checks else ref(ctx.workload, "Workload")
    summary = "deactivated (spec.active=false): " + reasons[0].message
    return build(ctx, Stage.DEACTIVATED, Layer.KUEUE, summary, blocking, reasons)


_EVICTION_OBJECTS: dict[str, str] = {
    EvictionReason.CLUSTER_QUEUE_STOPPED: "ClusterQueue",
    EvictionReason.LOCAL_QUEUE_STOPPED: "LocalQueue",
    EvictionReason.ADMISSION_CHECK: "AdmissionCheck",
}


def evicted(ctx: Context) -> Diagnosis:
    assert ctx.workload is not None
    evicted = condition_reason(ctx.workload, WorkloadCondition.EVICTED)
    assert evicted is not None
    reasons = [evicted]
    preempted = (
        condition_true(ctx.workload, WorkloadCondition.PREEMPTED)
        or evicted.kueue_reason == EvictionReason.PREEMPTED
    )
    blocking: ObjectRef | None = ctx.cq_ref()
    if preempted:
        p = condition_reason(ctx.workload, WorkloadCondition.PREEMPTED)
        if p is not None and condition_true(ctx.workload, WorkloadCondition.PREEMPTED):
            in_cohort = (p.kueue_reason or "").startswith("InCohort")
            if in_cohort and ctx.cohort_ref() is not None:
                blocking = ctx.cohort_ref()
            reasons.append(replace(p, object=blocking))
    else:
        kind = _EVICTION_OBJECTS.get((evicted.kueue_reason or "").split("DueTo")[0])
        if kind == "LocalQueue":
            blocking = ctx.lq_ref()
        elif kind == "AdmissionCheck":
            checks = admission_check_reasons(ctx)
            reasons.extend(checks)
            blocking = checks[0].object if checks else blocking
        elif (evicted.kueue_reason or "").startswith("PodsReadyTimeout") and ctx.pods:
            blocking = ref(ctx.pods[0], "Pod")
    earlier: list[EarlierReason] = []
    if not condition_true(ctx.workload, "QuotaReserved"):
        current, earlier = pending_evidence(ctx)
        reasons.extend(current)
    stage = Stage.PREEMPTED if preempted else Stage.EVICTED
    verb = "preempted" if preempted else "evicted"
    summary = f"{verb} ({evicted.kueue_reason}): {evicted.message}"
    requeue = mapping(ctx.workload, "status", "requeueState")
    if requeue.get("requeueAt"):
        summary += f"; requeued at {requeue['requeueAt']}"
    summary += earlier_summary(earlier)
    return build(ctx, stage, Layer.KUEUE, summary, blocking, reasons, quota_report(ctx))
