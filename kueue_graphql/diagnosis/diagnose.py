"""The verdict: stage, layer, blocking object and reasons, from already-loaded objects.

Order of questions, as the admission path runs: is the object under Kueue at all; has Kueue
made a Workload; has the Workload finished, been deactivated, evicted or preempted; does it
hold a quota reservation; are its admission checks satisfied; are its Pods placed by
kube-scheduler; are they running.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction

from kueue_graphql.core.kueue import GRANULAR_PENDING_REASONS, KUEUE_API, Code, CodeGroup
from kueue_graphql.diagnosis.messages import (
    parse_kueue_message,
    parse_taint,
)
from kueue_graphql.diagnosis.model import (
    Absent,
    Diagnosis,
    DiagnosisInput,
    Eviction,
    Failed,
    Forbidden,
    KubeObject,
    Layer,
    Number,
    ObjectRef,
    PodSchedulingProblem,
    Preemptor,
    QueuePosition,
    QuotaReport,
    Reason,
    ReasonSource,
    Stage,
    Verdict,
    Visibility,
)
from kueue_graphql.diagnosis.objects import (
    QUEUE_NAME_ANNOTATION,
    QUEUE_NAME_LABEL,
    condition,
    condition_true,
    dig,
    event_message,
    events_for,
    items,
    labels,
    mapping,
    name,
    namespace,
    ref,
    text,
    uid,
)
from kueue_graphql.diagnosis.pods import is_unscheduled, pod_problem, pods_of
from kueue_graphql.diagnosis.position import FOREIGN_ENTRIES_KEY
from kueue_graphql.diagnosis.quantity import format_quantity
from kueue_graphql.diagnosis.quota import assess_quota
from kueue_graphql.diagnosis.remedies import commands_for, next_steps_for
from kueue_graphql.diagnosis.requests import workload_needs, workload_requests

__all__ = ["diagnose"]

_PENDING_EVENT_REASONS = {"Pending", "Inadmissible", *GRANULAR_PENDING_REASONS}


def _known(value: KubeObject | Forbidden | Absent) -> KubeObject | None:
    return None if isinstance(value, Forbidden | Absent) else value


def _known_list(
    value: Sequence[KubeObject] | Forbidden | Absent,
) -> Sequence[KubeObject] | None:
    return None if isinstance(value, Forbidden | Absent) else value


def _queue_name(owner: KubeObject | None, workload: KubeObject | None) -> str | None:
    if workload is not None:
        queue = text(workload, "spec", "queueName")
        if queue:
            return queue
    if owner is not None:
        value = labels(owner).get(QUEUE_NAME_LABEL) or mapping(
            owner, "metadata", "annotations"
        ).get(QUEUE_NAME_ANNOTATION)
        if isinstance(value, str) and value:
            return value
    return None


def _dedupe(reasons: Sequence[Reason]) -> tuple[Reason, ...]:
    """Drop repeats of the same cause from the same kind of source (a condition and the event
    that repeats it; two fields of one object). The same cause seen on the Workload and on the
    queue object stays twice: that is two pieces of evidence."""
    seen: set[tuple[str, str | None, str | None, str | None, ObjectRef | None, bool]] = set()
    out = []
    for r in reasons:
        from_object = r.source is ReasonSource.OBJECT
        key = (r.code, r.resource, r.flavor, r.pod_set, r.object, from_object)
        if key in seen:
            continue
        seen.add(key)
        out.append(r)
    return tuple(out)


class _Context:
    """The input with markers resolved, plus names derived once."""

    def __init__(self, inp: DiagnosisInput) -> None:
        self.inp = inp
        self.owner = _known(inp.owner)
        self.workload = _known(inp.workload)
        self.events = _known_list(inp.events) or []
        self.local_queue = _known(inp.local_queue)
        self.cluster_queue = _known(inp.cluster_queue)
        self.namespace = (
            namespace(self.workload)
            if self.workload is not None
            else (namespace(self.owner) if self.owner is not None else None)
        )
        self.queue_name = _queue_name(self.owner, self.workload)
        admitted_cq = text(self.workload, "status", "admission", "clusterQueue")
        self.cq_name = (
            admitted_cq
            or (text(self.local_queue, "spec", "clusterQueue") if self.local_queue else None)
            or (name(self.cluster_queue) if self.cluster_queue else None)
        )
        self.nodes = _known_list(inp.nodes) or []
        all_pods = _known_list(inp.pods)
        self.pods_readable = all_pods is not None
        self.pods = pods_of(self.owner, self.workload, all_pods or [])

    def lq_ref(self) -> ObjectRef | None:
        if not self.queue_name:
            return None
        return ObjectRef("LocalQueue", self.queue_name, self.namespace, KUEUE_API)

    def cq_ref(self) -> ObjectRef | None:
        if not self.cq_name:
            return None
        return ObjectRef("ClusterQueue", self.cq_name, None, KUEUE_API)

    def cohort_ref(self) -> ObjectRef | None:
        if self.cluster_queue is None:
            return None
        cohort = text(self.cluster_queue, "spec", "cohortName")
        return ObjectRef("Cohort", cohort, None, KUEUE_API) if cohort else None

    def workload_events(self) -> list[KubeObject]:
        if self.workload is None:
            return []
        return list(events_for(self.events, "Workload", name(self.workload), uid(self.workload)))


def diagnose(inp: DiagnosisInput) -> Diagnosis:
    """Diagnose one Workload (or the owner object that should have one)."""
    ctx = _Context(inp)
    if ctx.workload is None:
        return _without_workload(ctx)
    wl = ctx.workload
    if condition_true(wl, "Finished"):
        return _finished(ctx)
    if dig(wl, "spec", "active") is False:
        return _deactivated(ctx)
    if condition_true(wl, "Evicted"):
        return _evicted(ctx)
    if not condition_true(wl, "QuotaReserved"):
        return _waiting_for_quota(ctx)
    if not condition_true(wl, "Admitted"):
        return _waiting_for_checks(ctx)
    return _admitted(ctx)


def _build(
    ctx: _Context,
    stage: Stage,
    layer: Layer,
    summary: str,
    blocking: ObjectRef | None,
    reasons: Sequence[Reason],
    quota: QuotaReport | None = None,
    pods: Sequence[PodSchedulingProblem] = (),
) -> Diagnosis:
    reasons = _dedupe(reasons)
    if quota is None:
        quota = QuotaReport(visibility=Visibility.NOT_APPLICABLE, cluster_queue=ctx.cq_name)
    position = _queue_position(ctx, stage)
    diagnosis = Diagnosis(
        stage=stage,
        layer=layer,
        summary=summary,
        workload=ref(ctx.workload, "Workload") if ctx.workload is not None else None,
        owner=ref(ctx.owner) if ctx.owner is not None else _owner_from_workload(ctx.workload),
        local_queue=ctx.queue_name,
        cluster_queue=ctx.cq_name,
        blocking_object=blocking,
        reasons=reasons,
        quota=quota,
        pods=tuple(pods),
        queue_position=position,
        next_steps=(),
        commands=(),
        preemptor=_preemptor(ctx),
        evictions=_evictions(ctx.workload),
    )
    return replace(
        diagnosis,
        next_steps=tuple(
            next_steps_for(
                diagnosis,
                _known_list(ctx.inp.resource_flavors) or [],
                _known_list(ctx.inp.admission_checks) or [],
            )
        ),
        commands=tuple(commands_for(diagnosis)),
    )


# "Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to ..." (Kueue v0.17
# pkg/scheduler/preemption; the same shape in v0.20).
_PREEMPTOR_UID = re.compile(r"\(UID: (?P<uid>[^,)\s]+)")


def preemptor_uid(workload: KubeObject | None) -> str | None:
    """The preempting Workload's UID, from the Preempted (else Evicted) condition."""
    for type_ in ("Preempted", "Evicted"):
        cond = condition(workload, type_)
        if cond is not None and cond.get("status") == "True":
            m = _PREEMPTOR_UID.search(str(cond.get("message") or ""))
            if m:
                return m.group("uid")
    return None


def _preemptor(ctx: _Context) -> Preemptor | None:
    found_uid = preemptor_uid(ctx.workload)
    if found_uid is None:
        return None
    other = _known(ctx.inp.preemptor)
    if other is None or uid(other) != found_uid:
        return Preemptor(uid=found_uid, workload=None, owner=None)
    return Preemptor(
        uid=found_uid, workload=ref(other, "Workload"), owner=_owner_from_workload(other)
    )


def _evictions(workload: KubeObject | None) -> tuple[Eviction, ...]:
    out = []
    for row in items(workload, "status", "schedulingStats", "evictions"):
        count = row.get("count")
        out.append(
            Eviction(
                reason=str(row.get("reason") or ""),
                underlying_cause=str(row.get("underlyingCause") or ""),
                count=count if isinstance(count, int) and not isinstance(count, bool) else 0,
            )
        )
    return tuple(out)


def _owner_from_workload(workload: KubeObject | None) -> ObjectRef | None:
    if workload is None:
        return None
    for owner_ref in items(workload, "metadata", "ownerReferences"):
        if owner_ref.get("controller"):
            return ObjectRef(
                kind=str(owner_ref.get("kind") or ""),
                name=str(owner_ref.get("name") or ""),
                namespace=namespace(workload),
                api_version=str(owner_ref.get("apiVersion") or "") or None,
            )
    return None


def _queue_position(ctx: _Context, stage: Stage) -> QueuePosition:
    if stage not in (Stage.WAITING_FOR_QUOTA_RESERVATION, Stage.EVICTED, Stage.PREEMPTED):
        return QueuePosition(visibility=Visibility.NOT_APPLICABLE)
    raw = ctx.inp.queue_position
    if isinstance(raw, Forbidden):
        return QueuePosition(visibility=Visibility.FORBIDDEN, detail=raw.detail)
    if isinstance(raw, Absent):
        return QueuePosition(visibility=Visibility.ABSENT, detail=raw.detail)
    if isinstance(raw, Failed):
        return QueuePosition(
            visibility=Visibility.UNAVAILABLE,
            detail=f"not reported: Kueue's visibility server failed ({raw.detail})",
        )

    def _int(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    foreign = _int(FOREIGN_ENTRIES_KEY) or 0
    detail = ""
    if foreign:
        detail = (
            f"Kueue listed {foreign} Workload(s) of other namespaces' same-named LocalQueues "
            "ahead of this one (kueue#10575); they were dropped, so positionInLocalQueue counts "
            "this namespace only; positionInClusterQueue is Kueue's and counts every namespace"
        )
    return QueuePosition(
        visibility=Visibility.AVAILABLE,
        position_in_cluster_queue=_int("positionInClusterQueue"),
        position_in_local_queue=_int("positionInLocalQueue"),
        priority=_int("priority"),
        detail=detail,
    )


# -- no Workload --------------------------------------------------------------------------


def _pods_layer(ctx: _Context) -> tuple[Stage, Layer, list[PodSchedulingProblem]]:
    pending = [p for p in ctx.pods if text(p, "status", "phase") in (None, "Pending")]
    problems = [pod_problem(p, ctx.events, ctx.nodes) for p in pending]
    if any(is_unscheduled(p) for p in pending):
        return Stage.ADMITTED_PODS_PENDING, Layer.SCHEDULER, problems
    return Stage.RUNNING, Layer.RUNTIME, problems


def _without_workload(ctx: _Context) -> Diagnosis:
    if isinstance(ctx.inp.workload, Forbidden):
        reason = Reason(
            "WorkloadNotReadable",
            "you may not read the Workload of this object, so Kueue's verdict is hidden",
            ReasonSource.OBJECT,
        )
        suspended = dig(ctx.owner, "spec", "suspend") is True
        stage = Stage.WAITING_FOR_QUOTA_RESERVATION if suspended else Stage.RUNNING
        layer = Layer.KUEUE if suspended else Layer.RUNTIME
        return _build(ctx, stage, layer, reason.message, ctx.lq_ref(), [reason])
    if ctx.owner is None:
        reason = Reason(
            "NotFoundError", "neither the object nor its Workload exists", ReasonSource.OBJECT
        )
        return _build(ctx, Stage.NO_WORKLOAD_YET, Layer.KUEUE, reason.message, None, [reason])
    owner_ref = ref(ctx.owner)
    if not ctx.queue_name:
        _, layer, problems = _pods_layer(ctx)
        reason = Reason(
            "NoQueueName",
            f"{owner_ref.kind} {owner_ref.name} has no {QUEUE_NAME_LABEL} label, so Kueue does "
            "not manage it; kube-scheduler places its Pods directly",
            ReasonSource.OBJECT,
            object=owner_ref,
        )
        return _build(ctx, Stage.NOT_MANAGED, layer, reason.message, None, [reason], pods=problems)
    reasons = [
        Reason(
            "NoWorkload",
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
    reasons.extend(_queue_object_reasons(ctx))
    return _build(
        ctx,
        Stage.NO_WORKLOAD_YET,
        Layer.KUEUE,
        reasons[0].message,
        _blocking_for(ctx, reasons) or ctx.lq_ref(),
        reasons,
    )


# -- finished / deactivated / evicted ------------------------------------------------------


def _condition_reason(
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


def _finished(ctx: _Context) -> Diagnosis:
    assert ctx.workload is not None
    reason = _condition_reason(ctx.workload, "Finished")
    assert reason is not None
    failed = reason.kueue_reason == "Failed"
    stage = Stage.FINISHED_FAILED if failed else Stage.FINISHED_SUCCEEDED
    summary = f"finished: {reason.message or reason.kueue_reason}"
    return _build(ctx, stage, Layer.RUNTIME, summary, None, [reason])


def _admission_check_reasons(ctx: _Context) -> list[Reason]:
    assert ctx.workload is not None
    checks = {name(c): c for c in _known_list(ctx.inp.admission_checks) or []}
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


def _deactivated(ctx: _Context) -> Diagnosis:
    assert ctx.workload is not None
    reasons: list[Reason] = []
    for type_ in ("Evicted", "DeactivationTarget", "Requeued"):
        cond = condition(ctx.workload, type_)
        if cond is not None and cond.get("status") == "True":
            r = _condition_reason(ctx.workload, type_)
            if r is not None:
                reasons.append(r)
    checks = [r for r in _admission_check_reasons(ctx) if r.kueue_reason == "Rejected"]
    reasons.extend(checks)
    if not reasons:
        reasons.append(
            Reason(
                "Deactivated",
                "spec.active is false: Kueue will not admit the Workload until it is reactivated",
                ReasonSource.OBJECT,
            )
        )
    blocking = checks[0].object if checks else ref(ctx.workload, "Workload")
    summary = "deactivated (spec.active=false): " + reasons[0].message
    return _build(ctx, Stage.DEACTIVATED, Layer.KUEUE, summary, blocking, reasons)


_EVICTION_OBJECTS = {
    "ClusterQueueStopped": "ClusterQueue",
    "LocalQueueStopped": "LocalQueue",
    "AdmissionCheck": "AdmissionCheck",
}


def _evicted(ctx: _Context) -> Diagnosis:
    assert ctx.workload is not None
    evicted = _condition_reason(ctx.workload, "Evicted")
    assert evicted is not None
    reasons = [evicted]
    preempted = condition_true(ctx.workload, "Preempted") or evicted.kueue_reason == "Preempted"
    blocking: ObjectRef | None = ctx.cq_ref()
    if preempted:
        p = _condition_reason(ctx.workload, "Preempted")
        if p is not None and condition_true(ctx.workload, "Preempted"):
            in_cohort = (p.kueue_reason or "").startswith("InCohort")
            if in_cohort and ctx.cohort_ref() is not None:
                blocking = ctx.cohort_ref()
            reasons.append(replace(p, object=blocking))
    else:
        kind = _EVICTION_OBJECTS.get((evicted.kueue_reason or "").split("DueTo")[0])
        if kind == "LocalQueue":
            blocking = ctx.lq_ref()
        elif kind == "AdmissionCheck":
            checks = _admission_check_reasons(ctx)
            reasons.extend(checks)
            blocking = checks[0].object if checks else blocking
        elif (evicted.kueue_reason or "").startswith("PodsReadyTimeout") and ctx.pods:
            blocking = ref(ctx.pods[0], "Pod")
    if not condition_true(ctx.workload, "QuotaReserved"):
        reasons.extend(_pending_reasons(ctx))
    stage = Stage.PREEMPTED if preempted else Stage.EVICTED
    verb = "preempted" if preempted else "evicted"
    summary = f"{verb} ({evicted.kueue_reason}): {evicted.message}"
    requeue = mapping(ctx.workload, "status", "requeueState")
    if requeue.get("requeueAt"):
        summary += f"; requeued at {requeue['requeueAt']}"
    return _build(ctx, stage, Layer.KUEUE, summary, blocking, reasons, _quota(ctx))


# -- waiting for quota ---------------------------------------------------------------------


def _pending_reasons(ctx: _Context) -> list[Reason]:
    """Reasons from QuotaReserved=False and the latest pending-type event."""
    assert ctx.workload is not None
    out: list[Reason] = []
    cond = condition(ctx.workload, "QuotaReserved")
    cond_message = ""
    if cond is not None and cond.get("status") != "True":
        cond_message = str(cond.get("message") or "")
        out.extend(
            parse_kueue_message(
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
            out.extend(parse_kueue_message(message, text(latest, "reason"), ReasonSource.EVENT))
    gated = condition(ctx.workload, "BlockedOnPreemptionGates")
    if gated is not None and gated.get("status") == "True":
        r = _condition_reason(ctx.workload, "BlockedOnPreemptionGates")
        if r is not None:
            out.append(r)
    return out


def _queue_object_reasons(ctx: _Context) -> list[Reason]:
    """What the queue objects themselves say, whether or not Kueue wrote it on the Workload."""
    out: list[Reason] = []
    lq_ref = ctx.lq_ref()
    if ctx.queue_name and isinstance(ctx.inp.local_queue, Absent):
        out.append(
            Reason(
                "LocalQueueNotFound",
                f"LocalQueue {ctx.queue_name} does not exist in namespace {ctx.namespace}",
                ReasonSource.OBJECT,
                object=lq_ref,
            )
        )
    if ctx.local_queue is not None:
        stop = text(ctx.local_queue, "spec", "stopPolicy")
        if stop and stop != "None":
            out.append(
                Reason(
                    "LocalQueueStopped",
                    f"LocalQueue {ctx.queue_name} has stopPolicy {stop}",
                    ReasonSource.OBJECT,
                    object=lq_ref,
                )
            )
        active = condition(ctx.local_queue, "Active")
        if active is not None and active.get("status") == "False":
            lq_reason = str(active.get("reason") or "")
            code = {
                "Stopped": "LocalQueueStopped",
                "ClusterQueueDoesNotExist": "ClusterQueueNotFound",
                "ClusterQueueIsInactive": "ClusterQueueInactive",
            }.get(lq_reason, "LocalQueueInactive")
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
    cq_ref = ctx.cq_ref()
    if ctx.cq_name and isinstance(ctx.inp.cluster_queue, Absent):
        out.append(
            Reason(
                "ClusterQueueNotFound",
                f"ClusterQueue {ctx.cq_name} does not exist",
                ReasonSource.OBJECT,
                object=cq_ref,
            )
        )
    if ctx.cluster_queue is not None:
        stop = text(ctx.cluster_queue, "spec", "stopPolicy")
        if stop and stop != "None":
            out.append(
                Reason(
                    "ClusterQueueStopped",
                    f"ClusterQueue {ctx.cq_name} has stopPolicy {stop}",
                    ReasonSource.OBJECT,
                    object=cq_ref,
                )
            )
        active = condition(ctx.cluster_queue, "Active")
        if active is not None and active.get("status") == "False":
            out.extend(_cluster_queue_inactive_causes(ctx, active))
    return out


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
_CQ_REASON_CODES = {
    "Terminating": Code.CLUSTER_QUEUE_TERMINATING,
    "Stopped": Code.CLUSTER_QUEUE_STOPPED,
    "FlavorNotFound": Code.FLAVOR_NOT_FOUND,
    "AdmissionCheckNotFound": Code.ADMISSION_CHECK_NOT_FOUND,
    "AdmissionCheckInactive": Code.ADMISSION_CHECK_INACTIVE,
    "TopologyNotFound": Code.TOPOLOGY_NOT_FOUND,
    "MultipleMultiKueueAdmissionChecks": Code.MULTIKUEUE_MISCONFIGURED,
    "MultiKueueAdmissionCheckAppliedPerFlavor": Code.MULTIKUEUE_MISCONFIGURED,
    "MultiKueueWithProvisioningRequest": Code.MULTIKUEUE_MISCONFIGURED,
    "CohortCycleDetected": Code.COHORT_CYCLE_DETECTED,
}
_CAUSE_TEXT = {
    Code.FLAVOR_NOT_FOUND: "references ResourceFlavor {n}, which does not exist",
    Code.ADMISSION_CHECK_NOT_FOUND: "references AdmissionCheck {n}, which does not exist",
    Code.ADMISSION_CHECK_INACTIVE: "references AdmissionCheck {n}, which is not active",
    Code.TOPOLOGY_NOT_FOUND: "uses Topology {n}, which does not exist",
}


def _cluster_queue_inactive_causes(ctx: _Context, active: KubeObject) -> list[Reason]:
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


def _queue_cannot_admit(ctx: _Context) -> bool:
    """The LocalQueue or ClusterQueue admits nothing now, whatever the quota says."""
    for obj in (ctx.local_queue, ctx.cluster_queue):
        if obj is None:
            continue
        stop = text(obj, "spec", "stopPolicy")
        active = condition(obj, "Active")
        if (stop and stop != "None") or (active is not None and active.get("status") == "False"):
            return True
    return False


def _quota(ctx: _Context) -> QuotaReport:
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
        cluster_queues=_known_list(ctx.inp.cluster_queues),
        cohorts=_known_list(ctx.inp.cohorts),
    )


_QUEUE_CODES = ("LocalQueueNotFound", "LocalQueueStopped", "LocalQueueInactive")
_CQ_CODES = ("ClusterQueueNotFound", "ClusterQueueStopped", "ClusterQueueInactive")
_FLAVOR_CODES = ("UntoleratedFlavorTaint", "FlavorNodeAffinityMismatch", "FlavorNotFound")


def _group(r: Reason) -> CodeGroup | None:
    code = Code.of(r.code)
    return code.group if code is not None else None


def _blocking_for(
    ctx: _Context, reasons: Sequence[Reason], quota: QuotaReport | None = None
) -> ObjectRef | None:
    codes = [r.code for r in reasons]
    for r in reasons:
        if r.code in _QUEUE_CODES:
            return ctx.lq_ref() or r.object
    for r in reasons:
        if r.code == "ClusterQueueNotFound":
            # The LocalQueue is what names the missing ClusterQueue: that is what to fix.
            return ctx.lq_ref() or r.object
    for r in reasons:
        if r.code == Code.CLUSTER_QUEUE_STOPPED:
            return ctx.cq_ref() or r.object
    for r in reasons:
        # What the ClusterQueue lacks (a flavor, an admission check, ...) is what to fix.
        if _group(r) is CodeGroup.QUEUE_CONFIGURATION and r.source is ReasonSource.OBJECT:
            return r.object or ctx.cq_ref()
    for r in reasons:
        if r.code in _CQ_CODES or r.code == "NamespaceNotSelected":
            return ctx.cq_ref() or r.object
    quota_codes = {"ExceedsMaxQuota", "WaitingForQuota"}
    if quota is not None and quota.lines:
        limits = [
            line.limited_by
            for line in quota.lines
            if line.verdict in (Verdict.NEVER_FITS, Verdict.MUST_WAIT)
        ]
        flavor_only = all(c in _FLAVOR_CODES for c in codes if c != "Unrecognized") and any(
            c in _FLAVOR_CODES for c in codes
        )
        if limits and not flavor_only and quota.verdict != Verdict.FITS_NOW:
            if "COHORT" in limits and "BORROWING_LIMIT" not in limits and ctx.cohort_ref():
                return ctx.cohort_ref()
            return ctx.cq_ref()
    for r in reasons:
        if r.code in _FLAVOR_CODES and r.object is not None:
            return r.object
    if any(c in quota_codes for c in codes):
        return ctx.cq_ref()
    return None


def _waiting_for_quota(ctx: _Context) -> Diagnosis:
    reasons = _pending_reasons(ctx) + _queue_object_reasons(ctx)
    quota = _quota(ctx)
    reasons = _with_workload_needs(reasons, workload_needs(ctx.workload))
    reasons = _annotate_with_quota(reasons, quota)
    if not reasons:
        reasons.append(
            Reason(
                "NotYetEvaluated",
                "Kueue has not written a reason yet: the Workload is queued and waits for its "
                "first scheduling attempt",
                ReasonSource.OBJECT,
                object=ctx.lq_ref(),
            )
        )
    blocking = _blocking_for(ctx, reasons, quota) or ctx.cq_ref() or ctx.lq_ref()
    summary = _quota_summary(ctx, reasons, quota)
    return _build(
        ctx, Stage.WAITING_FOR_QUOTA_RESERVATION, Layer.KUEUE, summary, blocking, reasons, quota
    )


def _with_workload_needs(
    reasons: list[Reason], needs: Mapping[str, Fraction] | None
) -> list[Reason]:
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


def _annotate_with_quota(reasons: list[Reason], quota: QuotaReport) -> list[Reason]:
    """Add the ClusterQueue's nominal quota to quota reasons, where the caller may read it."""
    out = []
    for r in reasons:
        if r.code in ("ExceedsMaxQuota", "WaitingForQuota") and quota.lines:
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


def _q(value: Fraction, resource: str | None) -> str:
    return format_quantity(value, resource)


def _quota_summary(ctx: _Context, reasons: Sequence[Reason], quota: QuotaReport) -> str:
    first = reasons[0]
    if first.code == Code.WAITING_FOR_QUOTA:
        # The most severe quota reason speaks (KEP-10852's precedence): a later pod set that
        # can never fit outweighs an earlier one that must wait.
        first = next((r for r in reasons if r.code == Code.EXCEEDS_MAX_QUOTA), first)
    res = first.resource
    causes = [
        r
        for r in reasons
        if _group(r) is CodeGroup.QUEUE_CONFIGURATION and r.source is ReasonSource.OBJECT
    ]
    if causes and first.code in (Code.CLUSTER_QUEUE_INACTIVE, Code.LOCAL_QUEUE_INACTIVE):
        named = "; ".join(c.message.split(" (Active=False")[0] for c in causes)
        return f"ClusterQueue {ctx.cq_name} cannot admit any Workload: {named}"
    if first.code == Code.CLUSTER_QUEUE_INACTIVE and isinstance(ctx.inp.cluster_queue, Forbidden):
        return (
            f"{first.message}; you may not read ClusterQueue {ctx.cq_name}, so the cause "
            "(its Active condition) is hidden from you: ask an admin"
        )
    if first.code == "ExceedsMaxQuota":
        req, cap = first.number("requested"), first.number("maximumCapacity")
        if req is not None and cap is not None:
            return (
                f"needs {format_quantity(req, res)} {res} at once in flavor {first.flavor}, "
                f"more than the {format_quantity(cap, res)} its ClusterQueue can ever provide"
            )
    if first.code == "UntoleratedFlavorTaint":
        taint = first.message.removeprefix("untolerated taint ").rsplit(" in flavor ", 1)[0]
        parsed = parse_taint(taint)
        shown = f"{parsed[0]}={parsed[1] or ''}:{parsed[2] or ''}" if parsed else taint
        return (
            f"no flavor can be assigned: flavor {first.flavor} is for nodes tainted {shown} "
            "and the Pod template does not tolerate that taint"
        )
    if first.code == "WaitingForQuota":
        more = first.number("moreNeeded")
        if more is not None:
            return (
                f"waits for quota: {format_quantity(more, res)} more {res} must be free "
                f"in flavor {first.flavor}"
            )
    return first.message


# -- admission checks ----------------------------------------------------------------------


def _waiting_for_checks(ctx: _Context) -> Diagnosis:
    assert ctx.workload is not None
    reasons = _admission_check_reasons(ctx)
    admitted = _condition_reason(ctx.workload, "Admitted")
    if admitted is not None and admitted.kueue_reason not in (None, "Admitted"):
        reasons.append(admitted)
    blocking = next((r.object for r in reasons if r.object is not None), ctx.cq_ref())
    summary = reasons[0].message if reasons else "quota reserved, waiting for admission checks"
    return _build(
        ctx,
        Stage.WAITING_FOR_ADMISSION_CHECKS,
        Layer.KUEUE,
        summary,
        blocking,
        reasons,
        _quota(ctx),
    )


# -- admitted ------------------------------------------------------------------------------


def _admitted(ctx: _Context) -> Diagnosis:
    assert ctx.workload is not None
    quota = _quota(ctx)
    admitted = _condition_reason(ctx.workload, "Admitted")
    base = [admitted] if admitted is not None else []
    if not ctx.pods_readable:
        ready = condition_true(ctx.workload, "PodsReady")
        reason = Reason(
            "PodsNotReadable",
            "you may not read the Pods; the stage comes from the Workload's PodsReady condition",
            ReasonSource.OBJECT,
        )
        stage = Stage.RUNNING if ready else Stage.ADMITTED_PODS_PENDING
        return _build(ctx, stage, Layer.RUNTIME, reason.message, None, [reason, *base], quota)
    if not ctx.pods:
        suspended = dig(ctx.owner, "spec", "suspend") is True
        if suspended:
            reason = Reason(
                "OwnerStillSuspended",
                "admitted, but Kueue has not unsuspended the owner yet",
                ReasonSource.OBJECT,
                object=ref(ctx.owner) if ctx.owner is not None else None,
            )
            return _build(
                ctx,
                Stage.ADMITTED_PODS_PENDING,
                Layer.KUEUE,
                reason.message,
                reason.object,
                [reason, *base],
                quota,
            )
        reason = Reason(
            "NoPodsYet",
            "admitted, but the owner's controller has not created Pods yet",
            ReasonSource.OBJECT,
        )
        return _build(
            ctx,
            Stage.ADMITTED_PODS_PENDING,
            Layer.RUNTIME,
            reason.message,
            _owner_from_workload(ctx.workload),
            [reason, *base],
            quota,
        )
    pending = [p for p in ctx.pods if text(p, "status", "phase") in (None, "Pending")]
    problems = [pod_problem(p, ctx.events, ctx.nodes) for p in pending]
    unscheduled = [pr for p, pr in zip(pending, problems, strict=True) if is_unscheduled(p)]
    if unscheduled:
        reasons = [r for pr in unscheduled for r in pr.reasons] + base
        first = unscheduled[0]
        fault = next((r for r in first.reasons if r.code == "NoNodeFits"), None)
        summary = f"admitted by Kueue; kube-scheduler cannot place Pod {first.pod.name}: " + (
            fault.message if fault else first.scheduled_message or "no PodScheduled condition yet"
        )
        return _build(
            ctx,
            Stage.ADMITTED_PODS_PENDING,
            Layer.SCHEDULER,
            summary,
            first.pod,
            reasons,
            quota,
            problems,
        )
    running = [p for p in ctx.pods if text(p, "status", "phase") == "Running"]
    if pending and not running:
        reasons = [r for pr in problems for r in pr.reasons] + base
        first = problems[0]
        node = first.node_name
        summary = f"admitted and placed on node {node}; Pod {first.pod.name} has not started"
        blocking = ObjectRef("Node", node, None, "v1") if node else first.pod
        return _build(
            ctx,
            Stage.ADMITTED_PODS_PENDING,
            Layer.RUNTIME,
            summary,
            blocking,
            reasons,
            quota,
            problems,
        )
    phases = sorted({text(p, "status", "phase") or "Unknown" for p in ctx.pods})
    summary = f"admitted and running ({len(ctx.pods)} Pod(s): {', '.join(phases)})"
    return _build(ctx, Stage.RUNNING, Layer.RUNTIME, summary, None, base, quota, problems)
