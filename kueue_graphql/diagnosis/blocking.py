"""The blocking object: the one object a reader should look at (or ask an admin to fix), chosen
from the reasons in order of what unblocks the Workload first.
"""

from __future__ import annotations

from collections.abc import Sequence

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.kueue.model import ObjectRef, QuotaReport, Reason, ReasonSource, Verdict
from kueue_graphql.kueue.vocabulary import KUEUE_API, Code, CodeGroup

__all__ = ["blocking_for", "code_group"]


_QUEUE_CODES = (Code.LOCAL_QUEUE_NOT_FOUND, Code.LOCAL_QUEUE_STOPPED, Code.LOCAL_QUEUE_INACTIVE)


_CQ_CODES = (
    Code.CLUSTER_QUEUE_NOT_FOUND,
    Code.CLUSTER_QUEUE_STOPPED,
    Code.CLUSTER_QUEUE_INACTIVE,
    Code.CLUSTER_QUEUE_TERMINATING,
)


# Causes whose blocking object is a ResourceFlavor: it repels the Pods or does not exist.
_FLAVOR_BLOCKING_CODES = (
    Code.UNTOLERATED_FLAVOR_TAINT,
    Code.FLAVOR_NODE_AFFINITY_MISMATCH,
    Code.FLAVOR_NOT_FOUND,
)


def code_group(r: Reason) -> CodeGroup | None:
    code = Code.of(r.code)
    return code.group if code is not None else None


def blocking_for(
    ctx: Context, reasons: Sequence[Reason], quota: QuotaReport | None = None
) -> ObjectRef | None:
    codes = [r.code for r in reasons]
    for r in reasons:
        if r.code in _QUEUE_CODES:
            return ctx.lq_ref() or r.object
    for r in reasons:
        if r.code == Code.CLUSTER_QUEUE_NOT_FOUND:
            # The LocalQueue is what names the missing ClusterQueue: that is what to fix.
            return ctx.lq_ref() or r.object
    for r in reasons:
        if r.code == Code.CLUSTER_QUEUE_STOPPED:
            return ctx.cq_ref() or r.object
    for r in reasons:
        # What the ClusterQueue lacks (a flavor, an admission check, ...) makes it inactive, and
        # the inactive ClusterQueue is what Kueue reports ("ClusterQueue X is inactive"): it is
        # the blocking object; the reason and the next step name what it lacks.
        if code_group(r) is CodeGroup.QUEUE_CONFIGURATION and r.source is ReasonSource.OBJECT:
            return ctx.cq_ref() or r.object
    for r in reasons:
        if r.code in _CQ_CODES or r.code == Code.NAMESPACE_NOT_SELECTED:
            return ctx.cq_ref() or r.object
    for r in reasons:
        if r.code == Code.BEHIND_QUEUE_HEAD:
            # The head Workload when the caller may read it, else its ClusterQueue.
            return r.object or ctx.cq_ref()
    quota_codes = {Code.EXCEEDS_MAX_QUOTA, Code.WAITING_FOR_QUOTA}
    if quota is not None and quota.lines:
        limits = [
            line.limited_by
            for line in quota.lines
            if line.verdict in (Verdict.NEVER_FITS, Verdict.MUST_WAIT)
        ]
        flavor_only = all(
            c in _FLAVOR_BLOCKING_CODES for c in codes if c != Code.UNRECOGNIZED
        ) and any(c in _FLAVOR_BLOCKING_CODES for c in codes)
        if limits and not flavor_only and quota.verdict != Verdict.FITS_NOW:
            if "COHORT" in limits and "BORROWING_LIMIT" not in limits:
                # The object whose limit binds, wherever it sits in the cohort tree.
                where = _binding_object(quota)
                if where is not None or ctx.cohort_ref():
                    return where or ctx.cohort_ref()
            return ctx.cq_ref()
    for r in reasons:
        if r.code in _FLAVOR_BLOCKING_CODES and r.object is not None:
            return r.object
    if any(c in quota_codes for c in codes):
        return ctx.cq_ref()
    return None


def _binding_object(quota: QuotaReport) -> ObjectRef | None:
    """The first named object whose limit makes a COHORT-limited line not fit."""
    for line in quota.lines:
        if line.verdict in (Verdict.NEVER_FITS, Verdict.MUST_WAIT) and line.limited_by == "COHORT":
            for b in line.binding_limits:
                if b.name is not None:
                    return ObjectRef(b.kind, b.name, None, KUEUE_API)
    return None
