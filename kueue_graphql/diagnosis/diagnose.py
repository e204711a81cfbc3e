"""The verdict: stage, layer, blocking object and reasons, from already-loaded objects.

Order of questions, as the admission path runs: is the object under Kueue at all; has Kueue
made a Workload; has the Workload finished, been deactivated, evicted or preempted; does it
hold a quota reservation; are its admission checks satisfied; are its Pods placed by
kube-scheduler; are they running.
"""

from __future__ import annotations

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.model import Diagnosis, DiagnosisInput
from kueue_graphql.diagnosis.stages.admitted import admitted
from kueue_graphql.diagnosis.stages.ended import deactivated, evicted, finished
from kueue_graphql.diagnosis.stages.no_workload import without_workload
from kueue_graphql.diagnosis.stages.waiting import waiting_for_checks, waiting_for_quota
from kueue_graphql.kueue.objects import condition_true, dig

__all__ = ["diagnose"]


def diagnose(inp: DiagnosisInput) -> Diagnosis:
    """Diagnose one Workload (or the owner object that should have one)."""
    ctx = Context(inp)
    if ctx.workload is None:
        return without_workload(ctx)
    wl = ctx.workload
    if condition_true(wl, "Finished"):
        return finished(ctx)
    if dig(wl, "spec", "active") is False:
        return deactivated(ctx)
    if condition_true(wl, "Evicted"):
        return evicted(ctx)
    if not condition_true(wl, "QuotaReserved"):
        return waiting_for_quota(ctx)
    if not condition_true(wl, "Admitted"):
        return waiting_for_checks(ctx)
    return admitted(ctx)
