"""An admitted topology-aware (TAS) Workload whose Node failed: what Kueue does about it.

Facts the Workload itself carries (status.unhealthyNodes, a NodeFailures eviction and its
message, which name the Nodes) are told to whoever may read the Workload. A Node's own state
(NotReady since when, its taints) only to a caller who may list Nodes. See
kueue_graphql/kueue/node_failure.py for Kueue v0.17.0's rules, as observed.
"""

from __future__ import annotations

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.kueue.model import ObjectRef, Reason, ReasonSource
from kueue_graphql.kueue.node_failure import (
    NODE_FAILURES,
    NodeTrouble,
    node_failure_eviction,
    troubled_nodes,
    unhealthy_nodes,
)
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["node_failure_reasons"]

_KUEUE_RULE = (
    "Kueue replaces a failed Node in the topology assignment once the Workload's Pods on it have "
    "terminated (or, when Kueue next looks at it, 30 s after it went NotReady); if no Node fits "
    "it evicts the Workload (NodeFailures) and requeues it"
)


def _trouble_text(t: NodeTrouble) -> str:
    parts = []
    if t.ready != "True":
        since = f" since {t.since}" if t.since else ""
        why = f" ({t.ready_reason})" if t.ready_reason else ""
        parts.append(f"NotReady (Ready={t.ready}){since}{why}")
    if t.taints:
        parts.append("tainted " + ", ".join(t.taints))
    where = "of its topology assignment" if t.assigned else "holding its Pods"
    pods = f"; {len(t.pods)} of its Pod(s) are bound there" if t.pods else ""
    return f"Node {t.node} {where} is {' and '.join(parts)}{pods}"


def node_failure_reasons(ctx: Context) -> list[Reason]:
    """Why a Node under the admitted Workload matters, and what Kueue is doing about it."""
    wl = ctx.workload
    if wl is None:
        return []
    out: list[Reason] = []
    replacing = unhealthy_nodes(wl)
    if replacing:
        out.append(
            Reason(
                Code.TOPOLOGY_NODE_REPLACEMENT,
                f"Kueue marked Node(s) {', '.join(replacing)} of the topology assignment as "
                "failed (status.unhealthyNodes) and its scheduler is looking for a replacement; "
                "if it finds none at the first try it evicts the Workload (NodeFailures)",
                ReasonSource.OBJECT,
            )
        )
    eviction = node_failure_eviction(wl)
    if eviction is not None:
        when = f" at {eviction.at}" if eviction.at else ""
        after = (
            "" if eviction.current else "; Kueue requeued it and has reserved quota for it again"
        )
        out.append(
            Reason(
                Code.NODE_FAILURES,
                f"Kueue evicted the Workload{when}: {eviction.message}{after}",
                ReasonSource.OBJECT,
                kueue_reason=NODE_FAILURES,
            )
        )
    if ctx.nodes:
        for trouble in troubled_nodes(wl, ctx.pods, ctx.nodes):
            out.append(
                Reason(
                    Code.TOPOLOGY_NODE_UNHEALTHY,
                    f"{_trouble_text(trouble)}: {_KUEUE_RULE}",
                    ReasonSource.OBJECT,
                    object=ObjectRef("Node", trouble.node, None, "v1"),
                )
            )
    return out
