"""Evidence gatherers: the reasons Kueue wrote (conditions, events, messages parsed back into
codes), what the queue objects say themselves, the preemptor's UID, and the quota report.
"""

from __future__ import annotations

import re

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.staleness import EarlierReason, outdated_by_usage, superseded_by
from kueue_graphql.kueue.messages import parse_kueue_message
from kueue_graphql.kueue.model import (
    Absent,
    Forbidden,
    KubeObject,
    ObjectRef,
    Observed,
    QuotaReport,
    Reason,
    ReasonSource,
    Visibility,
    known,
)
from kueue_graphql.kueue.objects import (
    condition,
    condition_true,
    event_message,
    event_time,
    items,
    metadata,
    name,
    status,
    text,
)
from kueue_graphql.kueue.podsets import workload_requests
from kueue_graphql.kueue.quota import assess_quota
from kueue_graphql.kueue.vocabulary import (
    GRANULAR_PENDING_REASONS,
    KUEUE_API,
    LEGACY_PENDING_REASONS,
    ClusterQueueActiveReason,
    Code,
    WorkloadCondition,
)

__all__ = [
    "admission_check_reasons",
    "condition_reason",
    "pending_evidence",
    "preemptor_uid",
    "queue_object_reasons",
    "quota_report",
]


_PENDING_EVENT_REASONS = LEGACY_PENDING_REASONS | GRANULAR_PENDING_REASONS


# "Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to ..." (Kueue v0.17
# pkg/scheduler/preemption; the same shape in v0.20).
_PREEMPTOR_UID = re.compile(r"\(UID: (?P<uid>[^,)\s]+)")


def preemptor_uid(workload: KubeObject | None) -> str | None:
    """The preempting Workload's UID, from the Preempted (else Evicted) condition."""
    for type_ in (WorkloadCondition.PREEMPTED, WorkloadCondition.EVICTED):
        cond = condition(workload, type_)
        if cond is not None and cond.get("status") == "True":
            m = _PREEMPTOR_UID.search(str(cond.get("message") or ""))
            if m:
                return m.group("uid")
    return None


def condition_reason(
    wl: KubeObject, type_: str, code: str | None = None, obj: ObjectRef | None = None
) -> Reason | None:
    cond = condition(wl, type_)
    if cond is None:
        return None
    kueue_reason = str(cond.get("reason") or "")
    return Reason(
        code=code or kueue_reason or type_,
        message=str(cond.get("message") or ""),
        source=ReasonSource.CONDITION,
        kueue_reason=kueue_reason or None,
        object=obj,
    )


def admission_check_reasons(ctx: Context) -> list[Reason]:
    assert ctx.workload is not None
    checks = {name(c): c for c in known(ctx.inp.admission_checks) or []}
    out = []
    for check in items(ctx.workload, "status", "admissionChecks"):
        state = str(check.get("state") or "Pending")
        if state == "Ready":
            continue
        check_name = str(check.get("name") or "")
        message = str(check.get("message") or f"admission check {check_name} is {state}")
        obj = checks.get(check_name)
        if obj is not None:
            # Who is supposed to decide, and whether that controller reports itself active.
            message += f" (controller {text(obj, 'spec', 'controllerName') or '?'}"
            active = condition(obj, "Active")
            if active is not None:
                message += f"; Active={active.get('status')}: {active.get('message') or ''}"
            message = message.rstrip(": ") + ")"
        out.append(
            Reason(
                code=f"AdmissionCheck{state}",
                message=message,
                source=ReasonSource.CONDITION,
                kueue_reason=state,
                object=ObjectRef("AdmissionCheck", check_name, None, KUEUE_API),
            )
        )
    return out


def _written_pending_reasons(ctx: Context) -> list[tuple[Reason, str]]:
    """Reasons from QuotaReserved=False and the latest pending-type event, each with when
    Kueue wrote it (the condition's lastTransitionTime, the event's time)."""
    assert ctx.workload is not None
    out: list[tuple[Reason, str]] = []
    cond = condition(ctx.workload, WorkloadCondition.QUOTA_RESERVED)
    cond_message = ""
    if cond is not None and cond.get("status") != "True":
        cond_message = str(cond.get("message") or "")
        written = str(cond.get("lastTransitionTime") or "")
        out.extend(
            (r, written)
            for r in parse_kueue_message(
                cond_message, str(cond.get("reason") or "") or None, ReasonSource.CONDITION
            )
        )
    pending_events = [
        e for e in ctx.workload_events() if text(e, "reason") in _PENDING_EVENT_REASONS
    ]
    if pending_events:
        latest = pending_events[-1]
        message = event_message(latest)
        if message and message != cond_message:
            out.extend(
                (r, event_time(latest))
                for r in parse_kueue_message(message, text(latest, "reason"), ReasonSource.EVENT)
            )
    return out


def pending_evidence(
    ctx: Context, quota: QuotaReport | None = None
) -> tuple[list[Reason], list[EarlierReason]]:
    """The pending reasons that are current, and those written before a change that makes them
    no longer so (staleness.py). With the quota report, a quota reason whose figure is not its
    quota line's is earlier, and the quota line's figure takes its place."""
    assert ctx.workload is not None
    current: list[Reason] = []
    earlier: list[EarlierReason] = []
    pod_sets = len(items(ctx.workload, "spec", "podSets"))
    for r, written in _written_pending_reasons(ctx):
        change = superseded_by(ctx, r, written)
        outdated = None
        if change is None and quota is not None:
            outdated = outdated_by_usage(r, written, quota, pod_sets)
        if outdated is not None:
            earlier.append(outdated[0])
            _add_once(current, outdated[1])
        elif change is None:
            _add_once(current, r)
        else:
            earlier.append(EarlierReason(r, written, change))
    gated = condition(ctx.workload, WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES)
    if gated is not None and gated.get("status") == "True":
        gate = condition_reason(ctx.workload, WorkloadCondition.BLOCKED_ON_PREEMPTION_GATES)
        if gate is not None:
            current.append(gate)
    return current, earlier


def _figure(r: Reason) -> tuple[object, ...]:
    return (r.code, r.pod_set, r.flavor, r.resource, r.number("moreNeeded"))


def _add_once(current: list[Reason], r: Reason) -> None:
    """The condition and the latest event may say one quota figure (one from the quota line
    where Kueue's was earlier): it is said once."""
    if r.code != Code.WAITING_FOR_QUOTA or all(_figure(c) != _figure(r) for c in current):
        current.append(r)


# A queue kind's codes: (does not exist, stopped by spec.stopPolicy).
_QUEUE_CODES: dict[str, tuple[Code, Code]] = {
    "LocalQueue": (Code.LOCAL_QUEUE_NOT_FOUND, Code.LOCAL_QUEUE_STOPPED),
    "ClusterQueue": (Code.CLUSTER_QUEUE_NOT_FOUND, Code.CLUSTER_QUEUE_STOPPED),
}


def _missing_or_stopped(
    kind: str,
    queue_name: str | None,
    queue: Observed[KubeObject],
    ref: ObjectRef | None,
    where: str = "",
) -> list[Reason]:
    """A named queue of `kind` that does not exist (`where`: in which namespace), or whose
    spec.stopPolicy stops it (Hold, HoldAndDrain)."""
    not_found, stopped = _QUEUE_CODES[kind]
    if queue_name and isinstance(queue, Absent):
        message = f"{kind} {queue_name} does not exist{where}"
        return [Reason(not_found, message, ReasonSource.OBJECT, object=ref)]
    stop = text(known(queue), "spec", "stopPolicy")
    if stop and stop != "None":
        message = f"{kind} {queue_name} has stopPolicy {stop}"
        return [Reason(stopped, message, ReasonSource.OBJECT, object=ref)]
    return []


def queue_object_reasons(ctx: Context) -> list[Reason]:
    """What the queue objects themselves say, whether or not Kueue wrote it on the Workload."""
    out: list[Reason] = []
    lq_ref = ctx.lq_ref()
    out += _missing_or_stopped(
        "LocalQueue", ctx.queue_name, ctx.inp.local_queue, lq_ref, f" in namespace {ctx.namespace}"
    )
    if ctx.local_queue is not None:
        active = condition(ctx.local_queue, "Active")
        if active is not None and active.get("status") == "False":
            lq_reason = str(active.get("reason") or "")
            code = {
                "Stopped": Code.LOCAL_QUEUE_STOPPED,
                "ClusterQueueDoesNotExist": Code.CLUSTER_QUEUE_NOT_FOUND,
                "ClusterQueueIsInactive": Code.CLUSTER_QUEUE_INACTIVE,
            }.get(lq_reason, Code.LOCAL_QUEUE_INACTIVE)
            out.append(
                Reason(
                    code,
                    f"LocalQueue {ctx.queue_name} is not active ({lq_reason}): "
                    f"{active.get('message') or ''}".rstrip(": "),
                    ReasonSource.OBJECT,
                    kueue_reason=lq_reason or None,
                    object=ctx.cq_ref() if code.startswith("ClusterQueue") else lq_ref,
                )
            )
    out += _missing_or_stopped("ClusterQueue", ctx.cq_name, ctx.inp.cluster_queue, ctx.cq_ref())
    if ctx.cluster_queue is not None:
        active = condition(ctx.cluster_queue, "Active")
        if active is not None and active.get("status") == "False":
            out.extend(_cluster_queue_inactive_causes(ctx, active))
        elif _being_deleted(ctx.cluster_queue):
            out.append(_cluster_queue_deleting(ctx))
    return out


def _being_deleted(obj: KubeObject) -> bool:
    return bool(metadata(obj).get("deletionTimestamp"))


def _cluster_queue_deleting(ctx: Context) -> Reason:
    """Kueue v0.17 treats a ClusterQueue with a deletionTimestamp as terminating (inactive), but
    leaves its Active condition as it was while its finalizer holds it (the controller returns
    before writing the status): the deletion is read from the object itself."""
    cq = ctx.cluster_queue or {}
    since = metadata(cq).get("deletionTimestamp")
    holders = status(cq).get("reservingWorkloads")
    held = (
        f" while {holders} Workload(s) hold quota in it"
        if isinstance(holders, int) and holders > 0
        else " until the Workloads holding quota in it are gone"
    )
    return Reason(
        Code.CLUSTER_QUEUE_TERMINATING,
        f"ClusterQueue {ctx.cq_name} is being deleted (deletionTimestamp {since}): its finalizer "
        f"keeps it{held}, and Kueue admits nothing new from it",
        ReasonSource.OBJECT,
        kueue_reason=ClusterQueueActiveReason.TERMINATING.value,
        object=ctx.cq_ref(),
    )


# "Can't admit new workloads: references missing ResourceFlavor(s): a,b, references inactive
# AdmissionCheck(s): c." (Kueue v0.17 pkg/cache/scheduler/clusterqueue.go inactiveReason: the
# condition's reason is only the first cause; the message lists them all.)
_CQ_CAUSES: tuple[tuple[re.Pattern[str], Code, str], ...] = (
    (re.compile(r"references missing ResourceFlavor\(s\): (?P<n>\S+?)(?:, |\.?$)"),
     Code.FLAVOR_NOT_FOUND, "ResourceFlavor"),
    (re.compile(r"references missing AdmissionCheck\(s\): (?P<n>\S+?)(?:, |\.?$)"),
     Code.ADMISSION_CHECK_NOT_FOUND, "AdmissionCheck"),
    (re.compile(r"references inactive AdmissionCheck\(s\): (?P<n>\S+?)(?:, |\.?$)"),
     Code.ADMISSION_CHECK_INACTIVE, "AdmissionCheck"),
    (re.compile(r'there is no Topology "(?P<n>[^"]+)"'), Code.TOPOLOGY_NOT_FOUND, "Topology"),
)  # fmt: skip


_CQ_REASON_CODES: dict[str, Code] = {
    ClusterQueueActiveReason.TERMINATING: Code.CLUSTER_QUEUE_TERMINATING,
    ClusterQueueActiveReason.STOPPED: Code.CLUSTER_QUEUE_STOPPED,
    ClusterQueueActiveReason.FLAVOR_NOT_FOUND: Code.FLAVOR_NOT_FOUND,
    ClusterQueueActiveReason.ADMISSION_CHECK_NOT_FOUND: Code.ADMISSION_CHECK_NOT_FOUND,
    ClusterQueueActiveReason.ADMISSION_CHECK_INACTIVE: Code.ADMISSION_CHECK_INACTIVE,
    ClusterQueueActiveReason.TOPOLOGY_NOT_FOUND: Code.TOPOLOGY_NOT_FOUND,
    ClusterQueueActiveReason.MULTIPLE_MULTIKUEUE_ADMISSION_CHECKS: Code.MULTIKUEUE_MISCONFIGURED,
    ClusterQueueActiveReason.MULTIKUEUE_ADMISSION_CHECK_APPLIED_PER_FLAVOR: (
        Code.MULTIKUEUE_MISCONFIGURED
    ),
    ClusterQueueActiveReason.MULTIKUEUE_WITH_PROVISIONING_REQUEST: Code.MULTIKUEUE_MISCONFIGURED,
    ClusterQueueActiveReason.COHORT_CYCLE_DETECTED: Code.COHORT_CYCLE_DETECTED,
}


_CAUSE_TEXT = {
    Code.FLAVOR_NOT_FOUND: "references ResourceFlavor {n}, which does not exist",
    Code.ADMISSION_CHECK_NOT_FOUND: "references AdmissionCheck {n}, which does not exist",
    Code.ADMISSION_CHECK_INACTIVE: "references AdmissionCheck {n}, which is not active",
    Code.TOPOLOGY_NOT_FOUND: "uses Topology {n}, which does not exist",
}


def _cluster_queue_inactive_causes(ctx: Context, active: KubeObject) -> list[Reason]:
    """One reason per concrete cause of Active=False, each naming the object to fix."""
    kueue_reason = str(active.get("reason") or "") or None
    message = str(active.get("message") or "")
    cq_ref = ctx.cq_ref()
    out: list[Reason] = []
    for pattern, code, kind in _CQ_CAUSES:
        for m in pattern.finditer(message):
            for object_name in filter(None, m.group("n").split(",")):
                out.append(
                    Reason(
                        code,
                        f"ClusterQueue {ctx.cq_name} "
                        + _CAUSE_TEXT[code].format(n=object_name)
                        + f" (Active=False, {kueue_reason}): {message}",
                        ReasonSource.OBJECT,
                        kueue_reason=kueue_reason,
                        object=ObjectRef(kind, object_name, None, KUEUE_API),
                    )
                )
    if out:
        return out
    code = _CQ_REASON_CODES.get(kueue_reason or "", Code.CLUSTER_QUEUE_INACTIVE)
    obj = cq_ref
    if code is Code.COHORT_CYCLE_DETECTED and ctx.cohort_ref() is not None:
        obj = ctx.cohort_ref()
    return [
        Reason(
            code,
            f"ClusterQueue {ctx.cq_name} is not active ({kueue_reason}): {message}".rstrip(": "),
            ReasonSource.OBJECT,
            kueue_reason=kueue_reason,
            object=obj,
        )
    ]


def _queue_cannot_admit(ctx: Context) -> bool:
    """The LocalQueue or ClusterQueue admits nothing now, whatever the quota says."""
    for obj in (ctx.local_queue, ctx.cluster_queue):
        if obj is None:
            continue
        stop = text(obj, "spec", "stopPolicy")
        active = condition(obj, "Active")
        if (stop and stop != "None") or (active is not None and active.get("status") == "False"):
            return True
        if obj is ctx.cluster_queue and _being_deleted(obj):
            return True
    return False


def quota_report(ctx: Context) -> QuotaReport:
    if ctx.workload is None:
        return QuotaReport(visibility=Visibility.NOT_APPLICABLE)
    if not ctx.cq_name:
        if isinstance(ctx.inp.local_queue, Forbidden):
            return QuotaReport(
                visibility=Visibility.FORBIDDEN, detail="you may not read the LocalQueue"
            )
        return QuotaReport(
            visibility=Visibility.ABSENT, detail="the Workload's ClusterQueue is not known"
        )
    if isinstance(ctx.inp.cluster_queue, Forbidden):
        return QuotaReport(
            visibility=Visibility.FORBIDDEN,
            cluster_queue=ctx.cq_name,
            detail=f"you may not read ClusterQueue {ctx.cq_name}",
        )
    if ctx.cluster_queue is None:
        return QuotaReport(
            visibility=Visibility.ABSENT,
            cluster_queue=ctx.cq_name,
            detail=f"ClusterQueue {ctx.cq_name} does not exist",
        )
    return assess_quota(
        cluster_queue=ctx.cluster_queue,
        requests=workload_requests(ctx.workload),
        holds_reservation=condition_true(ctx.workload, "QuotaReserved"),
        queue_inactive=_queue_cannot_admit(ctx),
        cluster_queues=known(ctx.inp.cluster_queues),
        cohorts=known(ctx.inp.cohorts),
    )
