"""The admitted stage: Pods not readable, not created yet, not placed by kube-scheduler, not
started, or running.
"""

from __future__ import annotations

from dataclasses import replace

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.evidence import (
    condition_reason,
    quota_report,
)
from kueue_graphql.diagnosis.model import Diagnosis, Layer, Stage
from kueue_graphql.diagnosis.node_failure import node_failure_reasons
from kueue_graphql.diagnosis.pods import is_unscheduled, pod_problem
from kueue_graphql.diagnosis.report import build, owner_from_workload
from kueue_graphql.kueue.model import KubeObject, ObjectRef, Reason, ReasonSource
from kueue_graphql.kueue.objects import (
    condition_true,
    dig,
    items,
    ref,
    text,
)
from kueue_graphql.kueue.owners import no_child_yet, owner_facts
from kueue_graphql.kueue.topology import SCHEDULING_GATE
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["admitted"]


def _topology_gated(pod: KubeObject) -> bool:
    return any(g.get("name") == SCHEDULING_GATE for g in items(pod, "spec", "schedulingGates"))


def admitted(ctx: Context) -> Diagnosis:
    """The stage of the Pods; a failed Node under a TAS Workload (Kueue replacing it, or having
    evicted the Workload for it, or a Node a node reader sees NotReady or tainted) leads."""
    failures = node_failure_reasons(ctx)
    found = _admitted(ctx, failures)
    if not failures:
        return found
    first = failures[0]
    replacing = first.code == Code.TOPOLOGY_NODE_REPLACEMENT
    return replace(
        found,
        summary=f"{first.message}; {found.summary}",
        layer=Layer.KUEUE if replacing else found.layer,
        blocking_object=next((r.object for r in failures if r.object), found.blocking_object),
    )


def _admitted(ctx: Context, failures: list[Reason]) -> Diagnosis:
    assert ctx.workload is not None
    quota = quota_report(ctx)
    admitted = condition_reason(ctx.workload, "Admitted")
    base = [*failures, *([admitted] if admitted is not None else [])]
    if not ctx.pods_readable:
        ready = condition_true(ctx.workload, "PodsReady")
        reason = Reason(
            Code.PODS_NOT_READABLE,
            "you may not read the Pods; the stage comes from the Workload's PodsReady condition",
            ReasonSource.OBJECT,
        )
        stage = Stage.RUNNING if ready else Stage.ADMITTED_PODS_PENDING
        return build(ctx, stage, Layer.RUNTIME, reason.message, None, [reason, *base], quota)
    if not ctx.pods:
        owner = owner_from_workload(ctx.workload)
        facts = owner_facts(owner.kind) if owner is not None else None
        suspended = dig(ctx.owner, "spec", "suspend") is True
        if suspended:
            what = f"{owner.kind} {owner.name}" if owner is not None else "the owner"
            reason = Reason(
                Code.OWNER_STILL_SUSPENDED,
                f"admitted, but Kueue has not unsuspended {what} yet (spec.suspend is true)",
                ReasonSource.OBJECT,
                object=ref(ctx.owner) if ctx.owner is not None else None,
            )
            return build(
                ctx,
                Stage.ADMITTED_PODS_PENDING,
                Layer.KUEUE,
                reason.message,
                reason.object,
                [reason, *base],
                quota,
            )
        message = "admitted, but the owner's controller has not created Pods yet"
        missing = no_child_yet(ctx.owner)
        if owner is not None and missing is not None:
            message = f"admitted, but {owner.kind} {owner.name} has {missing}"
        elif owner is not None and facts is not None:
            message = (
                f"admitted, but no Pod of {owner.kind} {owner.name} exists yet: "
                f"{facts.pods_created_by} has not created them"
            )
        reason = Reason(Code.NO_PODS_YET, message, ReasonSource.OBJECT, object=owner)
        return build(
            ctx,
            Stage.ADMITTED_PODS_PENDING,
            Layer.RUNTIME,
            reason.message,
            owner,
            [reason, *base],
            quota,
        )
    pending = [p for p in ctx.pods if text(p, "status", "phase") in (None, "Pending")]
    gated = [p for p in pending if _topology_gated(p)]
    if gated:
        # Kueue's TAS ungater (pkg/controller/tas/topology_ungater.go) lifts the gate once it
        # has set the Pod's node selector to its domain: until then kube-scheduler waits.
        pod = ref(gated[0], "Pod")
        reason = Reason(
            Code.TOPOLOGY_GATED,
            f"admitted by Kueue; {len(gated)} Pod(s) such as {pod.name} still carry Kueue's "
            f"scheduling gate {SCHEDULING_GATE}: Kueue lifts it, with the node selector of the "
            "topology domain it assigned, before kube-scheduler may place the Pod",
            ReasonSource.OBJECT,
            object=pod,
        )
        return build(
            ctx,
            Stage.ADMITTED_PODS_PENDING,
            Layer.KUEUE,
            reason.message,
            pod,
            [reason, *base],
            quota,
        )
    problems = [pod_problem(p, ctx.events, ctx.nodes) for p in pending]
    unscheduled = [pr for p, pr in zip(pending, problems, strict=True) if is_unscheduled(p)]
    if unscheduled:
        reasons = [r for pr in unscheduled for r in pr.reasons] + base
        first = unscheduled[0]
        fault = next((r for r in first.reasons if r.code == Code.NO_NODE_FITS), None)
        summary = f"admitted by Kueue; kube-scheduler cannot place Pod {first.pod.name}: " + (
            fault.message if fault else first.scheduled_message or "no PodScheduled condition yet"
        )
        return build(
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
        return build(
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
    return build(ctx, Stage.RUNNING, Layer.RUNTIME, summary, None, base, quota, problems)
