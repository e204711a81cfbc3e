"""The Diagnosis built from a stage's verdict: reasons without repeats, the queue position, the
preemptor, evictions, the owner, then next steps and commands (remedies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.evidence import preemptor_uid
from kueue_graphql.diagnosis.model import (
    Diagnosis,
    Eviction,
    Layer,
    PodSchedulingProblem,
    Preemptor,
    QueuePosition,
    Stage,
    TopologyFit,
)
from kueue_graphql.diagnosis.remedies import commands_for, next_steps_for
from kueue_graphql.kueue.model import (
    Absent,
    Failed,
    Forbidden,
    KubeObject,
    ObjectRef,
    QuotaReport,
    Reason,
    ReasonSource,
    Visibility,
    known,
)
from kueue_graphql.kueue.objects import (
    items,
    namespace,
    ref,
    uid,
)
from kueue_graphql.kueue.pending_entry import FOREIGN_ENTRIES_KEY, POSITION_BEYOND_KEY

__all__ = ["build", "owner_from_workload"]


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


def build(
    ctx: Context,
    stage: Stage,
    layer: Layer,
    summary: str,
    blocking: ObjectRef | None,
    reasons: Sequence[Reason],
    quota: QuotaReport | None = None,
    pods: Sequence[PodSchedulingProblem] = (),
    topology: Sequence[TopologyFit] = (),
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
        owner=ref(ctx.owner) if ctx.owner is not None else owner_from_workload(ctx.workload),
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
        topology=tuple(topology),
    )
    return replace(
        diagnosis,
        next_steps=tuple(
            next_steps_for(
                diagnosis,
                known(ctx.inp.resource_flavors) or [],
                known(ctx.inp.admission_checks) or [],
            )
        ),
        commands=tuple(commands_for(diagnosis)),
    )


def _preemptor(ctx: Context) -> Preemptor | None:
    found_uid = preemptor_uid(ctx.workload)
    if found_uid is None:
        return None
    other = known(ctx.inp.preemptor)
    if other is None or uid(other) != found_uid:
        return Preemptor(uid=found_uid, workload=None, owner=None)
    return Preemptor(
        uid=found_uid, workload=ref(other, "Workload"), owner=owner_from_workload(other)
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


def owner_from_workload(workload: KubeObject | None) -> ObjectRef | None:
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


def _queue_position(ctx: Context, stage: Stage) -> QueuePosition:
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

    beyond = _int(POSITION_BEYOND_KEY)
    if beyond is not None:
        return QueuePosition(
            visibility=Visibility.AVAILABLE,
            position_beyond=beyond,
            detail=f"position beyond {beyond}: pending, behind more than the first {beyond} "
            "entries of the LocalQueue's pending list, the most read for one position (Kueue's "
            "list also counts same-named LocalQueues of other namespaces, kueue#10575); the "
            "`cache` read mode gives every position",
        )
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
