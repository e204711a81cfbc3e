"""Which of the reasons Kueue wrote on a Workload are older than the last change that matters.

Kueue does not rewrite every reason when the world changes: a Workload's latest `Pending` event
("insufficient unused quota ...") stays the latest after its LocalQueue or ClusterQueue is
stopped or deactivated (Kueue makes no scheduling attempt there, so writes no new event), and a
QuotaReserved=False message saying "LocalQueue lq is inactive" stays until the next attempt after
the queue is resumed. A reason written before such a change is earlier, not current:

- a scheduling attempt's result (quota, flavors) written before the queue stopped admitting
  (its `Active` condition went False);
- a "queue is inactive/stopped" reason written before that queue became active again;
- an event written before the Workload's own last transition (QuotaReserved, Evicted,
  Requeued): it belongs to an earlier wait;
- a quota reason whose "N more needed" is not the ClusterQueue's current arithmetic (the quota
  line's requested - availableNow): Kueue wrote it at its last attempt for this Workload and does
  not rewrite it when the ClusterQueue's usage changes without a new attempt (another Workload
  admitted, or one evicted or finished, since). The quota line's figure is the current one: a
  reason from it takes the earlier one's place (`outdated_by_usage`), so the summary and the next
  steps use one arithmetic. Only a one-pod-set Workload is compared: for a later pod set Kueue's
  figure adds what the earlier ones take, the quota line all of them.

Kubernetes times have whole seconds (events may have microseconds): a reason written in the same
second as a queue's change is taken as earlier (Kueue makes no attempt on a stopped queue, and
writes "inactive" only while the queue is), one written in the same second as the Workload's own
transition as current (the transition and the event are written by one attempt).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.kueue.exact import format_quantity
from kueue_graphql.kueue.model import (
    KubeObject,
    Number,
    QuotaLine,
    QuotaReport,
    Reason,
    ReasonSource,
    Visibility,
)
from kueue_graphql.kueue.objects import condition, parse_time
from kueue_graphql.kueue.vocabulary import Code, CodeGroup, WorkloadCondition

__all__ = ["Change", "EarlierReason", "earlier_summary", "outdated_by_usage", "superseded_by"]


@dataclass(frozen=True)
class Change:
    """A change after which a reason of the Workload no longer holds."""

    what: str
    at: datetime
    at_text: str
    admits: bool = False
    """A queue that admits again after it (Active=True); False: stopped or inactive."""
    at_known: bool = True
    """False for a usage change: Kueue's status has no time for it (`at` is then the reason's
    own time, the change came after)."""


@dataclass(frozen=True)
class EarlierReason:
    reason: Reason
    written_at: str
    change: Change


# Reasons that report what a queue is (not an attempt's result), per queue kind.
_LOCAL_QUEUE_STATE = (Code.LOCAL_QUEUE_STOPPED, Code.LOCAL_QUEUE_INACTIVE)
_CLUSTER_QUEUE_STATE = (
    Code.CLUSTER_QUEUE_STOPPED,
    Code.CLUSTER_QUEUE_INACTIVE,
    Code.CLUSTER_QUEUE_TERMINATING,
)
# Groups of the reasons a scheduling attempt writes.
_ATTEMPT_GROUPS = (CodeGroup.QUOTA, CodeGroup.FLAVOR)


def _active_change(kind: str, name: str | None, queue: KubeObject | None) -> Change | None:
    active = condition(queue, "Active")
    if active is None:
        return None
    raw = active.get("lastTransitionTime")
    at = parse_time(raw)
    if at is None:
        return None
    admits = active.get("status") == "True"
    now = "was stopped" if active.get("reason") == "Stopped" else "became inactive"
    if admits:
        now = "became active"
    return Change(f"{kind} {name} {now}", at, str(raw), admits)


def _workload_change(workload: KubeObject | None) -> Change | None:
    """The Workload's own latest transition of QuotaReserved, Evicted or Requeued."""
    latest: Change | None = None
    for type_ in (
        WorkloadCondition.QUOTA_RESERVED,
        WorkloadCondition.EVICTED,
        WorkloadCondition.REQUEUED,
    ):
        cond: Mapping[str, Any] | None = condition(workload, type_)
        if cond is None:
            continue
        raw = cond.get("lastTransitionTime")
        at = parse_time(raw)
        if at is not None and (latest is None or at > latest.at):
            what = f"the Workload's {type_} condition changed to {cond.get('status')}"
            latest = Change(what, at, str(raw))
    return latest


def superseded_by(ctx: Context, reason: Reason, written_at: str) -> Change | None:
    """The change that makes `reason` (written on the Workload at `written_at`) earlier, or
    None when it is current (or its time is unknown)."""
    written = parse_time(written_at)
    if written is None:
        return None
    code = Code.of(reason.code)
    lq = _active_change("LocalQueue", ctx.queue_name, ctx.local_queue)
    cq = _active_change("ClusterQueue", ctx.cq_name, ctx.cluster_queue)
    attempt = code is not None and code.group in _ATTEMPT_GROUPS
    found: list[Change] = []
    # The ClusterQueue first: a stopped ClusterQueue makes its LocalQueues inactive too.
    for change, state_codes in ((cq, _CLUSTER_QUEUE_STATE), (lq, _LOCAL_QUEUE_STATE)):
        if change is None:
            continue
        if not change.admits and attempt and written <= change.at:
            found.append(change)
        if change.admits and code in state_codes and written <= change.at:
            found.append(change)
    if found:
        # The first change after the reason is the one that ended it.
        return min(found, key=lambda c: c.at)
    if reason.source is ReasonSource.EVENT:
        own = _workload_change(ctx.workload)
        if own is not None and written < own.at:
            return own
    return None


def _line(quota: QuotaReport, reason: Reason) -> QuotaLine | None:
    return next(
        (x for x in quota.lines if (x.flavor, x.resource) == (reason.flavor, reason.resource)),
        None,
    )


def outdated_by_usage(
    reason: Reason, written_at: str, quota: QuotaReport, pod_sets: int
) -> tuple[EarlierReason, Reason] | None:
    """Kueue's quota reason whose "N more needed" is not the quota line's requested -
    availableNow, as an earlier reason, with the current reason from the quota line; None when
    it is current, or cannot be compared (several pod sets, a figure the caller may not read)."""
    said = reason.number("moreNeeded")
    if reason.code != Code.WAITING_FOR_QUOTA or said is None or pod_sets != 1:
        return None
    line = _line(quota, reason) if quota.visibility is Visibility.AVAILABLE else None
    if line is None or line.available_now is None or line.counts_this_workload:
        return None
    needed = line.requested - line.available_now
    if needed == said:
        return None
    res, q = line.resource, _quantity_of(line.resource)
    now = f"{q(needed)} more {res} needed" if needed > 0 else f"the {q(line.requested)} {res} fit"
    what = (
        f"ClusterQueue {quota.cluster_queue}'s usage changed without a new attempt for this "
        f"Workload (now {q(line.reserved)} {res} reserved, {q(line.available_now)} available "
        f"in flavor {line.flavor}: {now})"
    )
    at = parse_time(written_at) or datetime.min.replace(tzinfo=UTC)
    earlier = EarlierReason(reason, written_at, Change(what, at, written_at, at_known=False))
    if needed > 0:
        current = Reason(
            Code.WAITING_FOR_QUOTA,
            f"insufficient unused quota for {res} in flavor {line.flavor}, {q(needed)} more "
            f"needed (from ClusterQueue {quota.cluster_queue}'s current usage)",
            ReasonSource.OBJECT,
            resource=res,
            flavor=line.flavor,
            pod_set=reason.pod_set,
            object=reason.object,
            numbers=(Number("moreNeeded", needed, q(needed)),),
            # Kueue's condition reason still holds (it waits for quota); only its figure is old.
            kueue_reason=reason.kueue_reason,
        )
    else:
        current = Reason(
            Code.PENDING_EVALUATION,
            f"the {q(line.requested)} {res} it needs are free now in flavor {line.flavor} of "
            f"ClusterQueue {quota.cluster_queue} ({q(line.available_now)} available): Kueue "
            "admits it at its next attempt for it",
            ReasonSource.OBJECT,
            resource=res,
            flavor=line.flavor,
            pod_set=reason.pod_set,
            object=reason.object,
        )
    return earlier, current


def _quantity_of(resource: str) -> Callable[[Decimal], str]:
    return lambda value: format_quantity(value, resource)


def earlier_summary(earlier: list[EarlierReason]) -> str:
    """What the summary says about reasons that are no longer current."""
    if not earlier:
        return ""
    said = "; ".join(
        f"{e.reason.message} (Kueue's earlier attempt, written {e.written_at}; since then "
        f"{e.change.what})"
        if not e.change.at_known
        else f"{e.reason.message} (written {e.written_at}, before {e.change.what} at "
        f"{e.change.at_text})"
        for e in earlier
    )
    return f" [earlier, no longer current: {said}]"
