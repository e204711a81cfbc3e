"""whatIf's within-ClusterQueue preemption (Kueue v0.17 pkg/scheduler/preemption), pure."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kueue_graphql.diagnosis import Absent, Verdict
from kueue_graphql.whatif import (
    PreemptionCandidate,
    ProposedPodSet,
    WhatIfInput,
    what_if,
)


def _cq(preemption: dict[str, str] | None, used: str = "2") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": "standard", "resources": [{"name": "cpu", "nominalQuota": "2"}]}
                ],
            }
        ],
    }
    if preemption:
        spec["preemption"] = preemption
    return {
        "metadata": {"name": "cq"},
        "spec": spec,
        "status": {
            "reservingWorkloads": 2,
            "flavorsReservation": [
                {"name": "standard", "resources": [{"name": "cpu", "total": used, "borrowed": "0"}]}
            ],
            "conditions": [{"type": "Active", "status": "True"}],
        },
    }


def _holder(priority: int, at: str, cpu: int = 1) -> PreemptionCandidate:
    return PreemptionCandidate(priority, at, {("standard", "cpu"): Decimal(cpu)})


def _ask(preemption: dict[str, str] | None, priority: int, cpu: int = 1, **more: Any) -> Any:
    inp = WhatIfInput(
        namespace="ns",
        local_queue={"metadata": {"name": "lq"}, "spec": {"clusterQueue": "cq"}},
        pod_sets=[ProposedPodSet("main", 1, {"cpu": Decimal(cpu)})],
        cluster_queue=_cq(preemption),
        resource_flavors=[{"metadata": {"name": "standard"}, "spec": {}}],
        cluster_queues=Absent("not in a cohort"),
        cohorts=Absent("not in a cohort"),
        priority=priority,
        priority_class="high" if priority else None,
        candidates=[_holder(10, "2026-12-03T10:00:00Z"), _holder(10, "2026-12-03T10:05:00Z")],
        **{"candidates_complete": True, **more},
    )
    return what_if(inp)


LOWER = {"withinClusterQueue": "LowerPriority"}


def test_higher_priority_preempts_the_minimal_set() -> None:
    result = _ask(LOWER, 1000)
    assert result.verdict is Verdict.MUST_WAIT
    assert result.preempts == 1
    assert result.kueue_message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "standard, 1 more needed. Pending the preemption of 1 workload(s)"
    )
    assert "preempt 1" in result.summary
    two = _ask(LOWER, 1000, cpu=2)
    assert two.preempts == 2


def test_same_or_lower_priority_or_no_policy_waits() -> None:
    for policy, priority in (
        (LOWER, 10),
        (LOWER, 0),
        (None, 1000),
        ({"withinClusterQueue": "Never"}, 1000),
    ):
        result = _ask(policy, priority)
        assert result.verdict is Verdict.MUST_WAIT, (policy, priority)
        assert result.preempts == 0
        assert "Pending the preemption" not in (result.kueue_message or "")


def test_equal_priority_is_older_so_lower_or_newer_equal_takes_lower_only() -> None:
    result = _ask({"withinClusterQueue": "LowerOrNewerEqualPriority"}, 10)
    assert result.preempts == 0
    assert _ask({"withinClusterQueue": "LowerOrNewerEqualPriority"}, 11).preempts == 1


def test_above_nominal_never_preempts() -> None:
    result = _ask(LOWER, 1000, cpu=3)
    assert result.verdict is Verdict.NEVER_FITS
    assert result.preempts == 0


def test_incomplete_candidates_are_said() -> None:
    inp_result = _ask(LOWER, 1000, candidates_complete=False)
    assert inp_result.preempts == 1
    assert "other namespaces' admitted Workloads" in inp_result.detail
