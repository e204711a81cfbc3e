"""One source of arithmetic (issue 21 item 3), as a property of the pure quota arithmetic.

For random ClusterQueue quotas (nominal, borrowingLimit, a cohort member that lends under an
optional lendingLimit), usage and one-pod-set requests: the quota line (kueue/quota.py), whatIf's
flavor assigner ("N more needed", as Kueue writes it) and diagnose (its summary, reasons and
next steps, given Kueue's message for that very state, or an older one with another figure)
say one figure: requested - availableNow.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_graphql.diagnosis import DiagnosisInput, diagnose
from kueue_graphql.kueue.model import Verdict
from kueue_graphql.kueue.podsets import workload_requests
from kueue_graphql.kueue.quota import assess_quota
from kueue_graphql.whatif.flavorassigner import FlavorAssigner, pod_set_requests
from kueue_graphql.whatif.model import ProposedPodSet, WhatIfInput

FLAVOR, RES = "default", "cpu"
WRITTEN = "2026-12-05T03:00:00Z"
_MORE = re.compile(r"(\S+) more needed")


def _cluster_queue(
    name: str, nominal: int, used: int, cohort: str, limits: dict[str, int]
) -> dict[str, Any]:
    quota: dict[str, Any] = {"name": RES, "nominalQuota": str(nominal)}
    quota.update({k: str(v) for k, v in limits.items()})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {},
            "resourceGroups": [
                {"coveredResources": [RES], "flavors": [{"name": FLAVOR, "resources": [quota]}]}
            ],
        },
        "status": {
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
            "flavorsReservation": [
                {"name": FLAVOR, "resources": [{"name": RES, "total": str(used), "borrowed": "0"}]}
            ],
            "flavorsUsage": [
                {"name": FLAVOR, "resources": [{"name": RES, "total": str(used), "borrowed": "0"}]}
            ],
        },
    }


def _workload(count: int, per_pod: int, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "uid": "u1", "creationTimestamp": WRITTEN},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"requests": {RES: str(per_pod)}}}
                            ]
                        }
                    },
                }
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": message,
                    "lastTransitionTime": WRITTEN,
                }
            ]
        },
    }


_LQ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "lq", "namespace": "ns"},
    "spec": {"clusterQueue": "cq"},
    "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]},
}


@st.composite
def states(draw: st.DrawFn) -> dict[str, Any]:
    nominal = draw(st.integers(0, 8))
    limits = {}
    if draw(st.booleans()):
        limits["borrowingLimit"] = draw(st.integers(0, 6))
    lender_limits = {}
    if draw(st.booleans()):
        lender_limits["lendingLimit"] = draw(st.integers(0, 6))
    lender_nominal = draw(st.integers(0, 6))
    return {
        "cq": _cluster_queue("cq", nominal, draw(st.integers(0, nominal + 4)), "co", limits),
        "lender": _cluster_queue(
            "lender", lender_nominal, draw(st.integers(0, lender_nominal)), "co", lender_limits
        ),
        "count": draw(st.integers(1, 4)),
        "per_pod": draw(st.integers(1, 4)),
        "older": draw(st.integers(1, 12)),
    }


def _kueue_message(figure: Decimal | int) -> str:
    return (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        f"{FLAVOR}, {figure} more needed"
    )


@settings(max_examples=150, deadline=None)
@given(states())
def test_quota_line_whatif_and_diagnose_say_one_figure(state: dict[str, Any]) -> None:
    cq, cqs = state["cq"], [state["cq"], state["lender"]]
    count, per_pod = state["count"], state["per_pod"]
    # The quota line.
    report = assess_quota(
        cluster_queue=cq,
        requests=workload_requests(_workload(count, per_pod, "")),
        holds_reservation=False,
        cluster_queues=cqs,
        cohorts=[],
    )
    (line,) = report.lines
    assert line.requested == count * per_pod
    assert line.available_now is not None
    needed = line.requested - line.available_now
    # whatIf's flavor assigner, as Kueue writes its message.
    ps = ProposedPodSet("main", count, {RES: Decimal(per_pod)})
    assigner = FlavorAssigner(
        WhatIfInput(
            namespace="ns",
            local_queue=_LQ,
            pod_sets=[ps],
            cluster_queue=cq,
            resource_flavors=[{"metadata": {"name": FLAVOR}}],
            cluster_queues=cqs,
            cohorts=[],
        ),
        cq,
    )
    (group,) = assigner.groups
    assignment = assigner.assign_group(ps, group, pod_set_requests(ps, covers_pods=False))
    said = [m for a in assignment.attempts for r in a.reasons for m in _MORE.findall(r)]
    if line.verdict is Verdict.MUST_WAIT:
        assert assignment.verdict is Verdict.MUST_WAIT
        assert [Decimal(s) for s in said] == [needed]
    else:
        assert assignment.verdict is line.verdict
        assert said == []
    if line.verdict is Verdict.NEVER_FITS:
        return
    # diagnose, given Kueue's message for this state (current) or an older figure.
    for figure in {needed, Decimal(state["older"])} - {Decimal(0)}:
        if figure < 0:
            continue
        d = diagnose(
            DiagnosisInput(
                workload=_workload(count, per_pod, _kueue_message(figure)),
                events=[],
                pods=[],
                local_queue=_LQ,
                cluster_queue=cq,
                cluster_queues=cqs,
                cohorts=[],
            )
        )
        current = d.summary.split(" [earlier, no longer current:")[0]
        steps = " ".join(d.next_steps)
        if needed > 0:
            assert current.startswith(f"waits for quota: {needed} more cpu ")
            # Every figure of the next steps is the same one (a step may give none: a
            # borrowingLimit's step names the limit).
            assert set(re.findall(r"(\S+) more cpu", steps)) <= {str(needed)}
            assert f"Wait: {needed} more cpu " in steps or "borrowingLimit" in steps
            assert [r.number("moreNeeded") for r in d.reasons] == [needed]
        else:
            assert "free now" in current
            assert "more needed" not in current
            assert "Wait:" not in steps
        # Kueue's figure is current exactly when it is the quota line's.
        assert ("[earlier, no longer current:" in d.summary) == (figure != needed)
