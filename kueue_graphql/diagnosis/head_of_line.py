"""Why Kueue wrote nothing on a pending Workload: the order of its ClusterQueue's queue.

Under StrictFIFO Kueue v0.17 tries only the head of each ClusterQueue's queue (priority, then
queue time): the Workloads behind it get no QuotaReserved condition and no event until they
reach the head, however much quota is free. The visibility API still says where each stands,
and the quota arithmetic what it would need. The head is named only when the caller's own
LocalQueue list holds it (a Workload of her namespace); otherwise it is counted, never named.

BestEffortFIFO (and StrictFIFO) Workloads that did not fit, or were evicted, may carry
`status.requeueState`: how often Kueue requeued them and when it tries them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.kueue.exact import ARITHMETIC, ZERO, format_quantity
from kueue_graphql.kueue.model import (
    KubeObject,
    Number,
    ObjectRef,
    QuotaReport,
    Reason,
    ReasonSource,
    Verdict,
    known,
)
from kueue_graphql.kueue.objects import mapping, text
from kueue_graphql.kueue.pending_entry import HEAD_OF_CLUSTER_QUEUE_KEY
from kueue_graphql.kueue.vocabulary import KUEUE_API, Code

__all__ = ["STRICT_FIFO", "behind_queue_head", "quota_verdict_text", "requeue_state"]

STRICT_FIFO = "StrictFIFO"


def _int(entry: Mapping[str, Any], key: str) -> int | None:
    value = entry.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _more(requested: Decimal, available: Decimal, resource: str) -> str:
    return format_quantity(ARITHMETIC.subtract(requested, max(available, ZERO)), resource)


def quota_verdict_text(quota: QuotaReport) -> str:
    """The quota verdict of the Workload as one clause, with what it would still need."""
    if quota.verdict is None or not quota.lines:
        return f"its quota verdict is not known to you ({quota.detail or 'quota not readable'})"
    if quota.verdict is Verdict.MUST_WAIT:
        short = [
            f"{_more(line.requested, line.available_now, line.resource)} more {line.resource} "
            f"in flavor {line.flavor}"
            for line in quota.lines
            if line.verdict is Verdict.MUST_WAIT and line.available_now is not None
        ]
        return "its quota verdict: MUST_WAIT" + (f" ({', or '.join(short)})" if short else "")
    if quota.verdict is Verdict.FITS_NOW:
        return "its quota verdict: FITS_NOW (the quota it needs is free now)"
    return f"its quota verdict: {quota.verdict.value}"


def behind_queue_head(ctx: Context, quota: QuotaReport, tried: bool) -> Reason | None:
    """The head-of-line reason for a Workload behind the head of a StrictFIFO ClusterQueue,
    or (`tried` False: Kueue wrote no current reason) behind the head of a ClusterQueue the
    caller may not read; None when neither holds or its position is not known."""
    entry = known(ctx.inp.queue_position)
    if not isinstance(entry, Mapping):
        return None
    ahead = _int(entry, "positionInClusterQueue")
    if not ahead:
        return None
    if ctx.cluster_queue is not None:
        if text(ctx.cluster_queue, "spec", "queueingStrategy") != STRICT_FIFO:
            return None
        order = (
            f"ClusterQueue {ctx.cq_name} is StrictFIFO: Kueue tries only the Workload at the "
            "head of its queue and writes nothing on those behind it"
        )
    elif tried:
        return None
    else:
        order = (
            f"Kueue has not tried it yet; you may not read ClusterQueue {ctx.cq_name}, so its "
            "queueingStrategy is hidden from you: under StrictFIFO Kueue tries only the Workload "
            "at the head of its queue and writes nothing on those behind it"
        )
    in_lq = _int(entry, "positionInLocalQueue") or 0
    head = entry.get(HEAD_OF_CLUSTER_QUEUE_KEY)
    obj: ObjectRef | None = None
    if isinstance(head, str) and head:
        at_head = f"at the head: Workload {head} of the same LocalQueue {ctx.queue_name}"
        obj = ObjectRef("Workload", head, ctx.namespace, KUEUE_API)
    else:
        at_head = "at the head: a Workload of another LocalQueue (counted, not named)"
    mine = f", {in_lq} of them in its LocalQueue" if in_lq else ", none in its LocalQueue"
    message = (
        f"{order}; {ahead} Workload(s) are ahead of this one{mine}; {at_head}; "
        f"{quota_verdict_text(quota)}"
    )
    return Reason(
        Code.BEHIND_QUEUE_HEAD,
        message,
        ReasonSource.OBJECT,
        object=obj,
        numbers=(
            Number("aheadInClusterQueue", Decimal(ahead), str(ahead)),
            Number("aheadInLocalQueue", Decimal(in_lq), str(in_lq)),
        ),
    )


def requeue_state(workload: KubeObject | None) -> Reason | None:
    """Kueue's `status.requeueState` (count, requeueAt), when it has one."""
    state = mapping(workload, "status", "requeueState")
    count = state.get("count")
    at = state.get("requeueAt")
    if not isinstance(count, int) and not at:
        return None
    times = f"{count} time(s)" if isinstance(count, int) else "before"
    when = (
        f"Kueue's backoff holds it until requeueAt {at}: it is not tried before then"
        if at
        else "its backoff is over: it is tried again in its turn"
    )
    numbers = (
        (Number("requeueCount", Decimal(count), str(count)),) if isinstance(count, int) else ()
    )
    return Reason(
        Code.REQUEUE_BACKOFF,
        f"Kueue requeued the Workload {times} (status.requeueState); {when}",
        ReasonSource.OBJECT,
        numbers=numbers,
    )
