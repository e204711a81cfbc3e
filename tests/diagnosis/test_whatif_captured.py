"""whatIf's pure flavor assignment on objects captured from the real control plane.

For every captured scenario whose Workload Kueue left pending (it holds no quota, so the captured
ClusterQueue status is the state Kueue decided on), what_if on the captured Job's pod template
must reach the QuotaReserved=False message Kueue wrote for that Workload, word for word. The
other cases start from captured objects and change one thing, named in the test.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from kueue_graphql.diagnosis import Absent, Forbidden, Verdict
from kueue_graphql.whatif import (
    ProposedPodSet,
    WhatIfInput,
    WhatIfResult,
    pod_sets_from_job,
    what_if,
)
from tests.diagnosis.captured import load

PENDING = [
    "too-big-3x1cpu",
    "no-spot-toleration",
    "over-borrowing-limit",
    "waits-on-stopped-queue",
    "waits-on-missing-clusterqueue",
    "low-priority-victim",
]


def _input(data: dict[str, Any], **changes: Any) -> WhatIfInput:
    fields: dict[str, Any] = {
        "namespace": data["job"]["metadata"]["namespace"],
        "local_queue": data["localQueue"],
        "pod_sets": pod_sets_from_job(data["job"]),
        "cluster_queue": data["clusterQueue"]
        if data["clusterQueue"] is not None
        else Absent("not found"),
        "resource_flavors": data["resourceFlavors"],
        "cluster_queues": data["clusterQueues"],
        "cohorts": data["cohorts"],
        "namespace_labels": Absent("no namespaceSelector to check"),
    }
    fields.update(changes)
    return WhatIfInput(**fields)


def _quota_reserved(data: dict[str, Any]) -> dict[str, Any]:
    for cond in data["workload"]["status"]["conditions"]:
        if cond["type"] == "QuotaReserved":
            return dict(cond)
    raise AssertionError("no QuotaReserved condition captured")


@pytest.mark.parametrize("scenario", PENDING)
def test_kueue_message_of_pending_scenarios(scenario: str) -> None:
    data = load(scenario)
    cond = _quota_reserved(data)
    assert cond["status"] == "False"
    result = what_if(_input(data))
    assert result.kueue_message == cond["message"]
    expected = Verdict.QUEUE_INACTIVE if cond["reason"] == "Inadmissible" else None
    if expected is not None:
        assert result.verdict is expected
    else:
        assert result.verdict in (Verdict.NEVER_FITS, Verdict.MUST_WAIT)


def test_verdicts_of_pending_scenarios() -> None:
    verdicts = {s: what_if(_input(load(s))).verdict for s in PENDING}
    assert verdicts == {
        "too-big-3x1cpu": Verdict.NEVER_FITS,
        "no-spot-toleration": Verdict.NEVER_FITS,
        "over-borrowing-limit": Verdict.MUST_WAIT,
        "waits-on-stopped-queue": Verdict.QUEUE_INACTIVE,
        "waits-on-missing-clusterqueue": Verdict.QUEUE_INACTIVE,
        "low-priority-victim": Verdict.MUST_WAIT,
    }


def test_taint_names_the_toleration_to_add() -> None:
    result = what_if(_input(load("no-spot-toleration")))
    group = result.pod_sets[0].groups[0]
    assert (group.limited_by, group.flavor) == ("FLAVOR_TAINT", None)
    assert any("kueue-graphql.example/spot" in step for step in result.next_steps)


def test_toleration_makes_the_spot_flavor_fit() -> None:
    data = load("no-spot-toleration")
    (ps,) = pod_sets_from_job(data["job"])
    tolerant = ProposedPodSet(
        name=ps.name,
        count=ps.count,
        per_pod=ps.per_pod,
        tolerations=({"key": "kueue-graphql.example/spot", "operator": "Exists"},),
    )
    result = what_if(_input(data, pod_sets=[tolerant]))
    assert result.verdict is Verdict.FITS_NOW
    assert result.pod_sets[0].groups[0].flavor == "spot-tainted"


def test_borrowing_scenario_fits_by_borrowing_on_the_captured_lender() -> None:
    # borrows-one-cpu is admitted (2 CPU against 1 nominal); ask for the same on a copy of its
    # ClusterQueue with that reservation taken away: Kueue's answer was "borrow".
    data = load("borrows-one-cpu")
    cq = copy.deepcopy(data["clusterQueue"])
    cq["status"]["flavorsReservation"] = []
    others = [c for c in data["clusterQueues"] if c["metadata"]["name"] != cq["metadata"]["name"]]
    result = what_if(_input(data, cluster_queue=cq, cluster_queues=[*others, cq]))
    assert result.verdict is Verdict.FITS_NOW
    group = result.pod_sets[0].groups[0]
    assert (group.flavor, group.borrows) == ("standard", True)


def test_numbers_hidden_leave_verdict_and_flavor() -> None:
    data = load("too-big-3x1cpu")
    shown = what_if(_input(data))
    hidden = what_if(_input(data, show_numbers=False, hidden_because="policy: verdict only"))
    assert (hidden.verdict, hidden.limited_by) == (shown.verdict, shown.limited_by)
    assert hidden.lines == ()
    assert hidden.kueue_message is not None
    assert hidden.kueue_message == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor standard"
    )


def test_cluster_queue_forbidden_gives_unknown_without_numbers() -> None:
    data = load("too-big-3x1cpu")
    result = what_if(
        _input(
            data,
            cluster_queue=Forbidden("alice may not read it"),
            resource_flavors=Forbidden("no"),
            cluster_queues=Forbidden("no"),
            cohorts=Forbidden("no"),
            show_numbers=False,
            hidden_because="you may not read ClusterQueue cq-small-2cpu",
        )
    )
    assert (result.verdict, result.limited_by) == (Verdict.UNKNOWN, "NOT_DISCLOSED")
    assert result.lines == ()
    assert result.kueue_message is None


def _second_flavor(data: dict[str, Any], when_can_preempt: str) -> dict[str, Any]:
    """The captured cq-preemption (full: high-priority-preemptor holds its 2 CPU; preemption
    withinClusterQueue LowerPriority) with a second, empty flavor after the first."""
    cq = copy.deepcopy(data["clusterQueue"])
    group = cq["spec"]["resourceGroups"][0]
    group["flavors"].append(
        {
            "name": "gpu-a100",
            "resources": [
                {"name": "cpu", "nominalQuota": "4"},
                {"name": "memory", "nominalQuota": "16Gi"},
            ],
        }
    )
    cq["spec"]["flavorFungibility"] = {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": when_can_preempt,
    }
    return cq


@pytest.mark.parametrize("when_can_preempt", ["MayStopSearch", "TryNextFlavor"])
def test_preemption_possible_still_tries_the_next_flavor(when_can_preempt: str) -> None:
    # Kueue v0.17 shouldTryNextFlavor: a preemption whose simulation finds no candidates
    # (noPreemptionCandidates) goes on to the next flavor whatever whenCanPreempt says; the
    # oracle test saw Kueue admit on the second flavor with MayStopSearch. Before the fix
    # whatIf stopped at the first flavor and answered MUST_WAIT.
    data = load("high-priority-preemptor")
    cq = _second_flavor(data, when_can_preempt)
    one_cpu = ProposedPodSet("main", 1, {"cpu": Decimal(1)})
    result: WhatIfResult = what_if(_input(data, cluster_queue=cq, pod_sets=[one_cpu]))
    assert result.verdict is Verdict.FITS_NOW
    group = result.pod_sets[0].groups[0]
    assert group.flavor == "gpu-a100"
    assert [a.flavor for a in group.attempts] == ["standard", "gpu-a100"]
    assert group.attempts[0].verdict is Verdict.MUST_WAIT
    if when_can_preempt == "MayStopSearch":
        assert group.preempts_first_in == "standard"
        assert "preempt in flavor standard" in result.summary
    else:
        assert group.preempts_first_in is None


def test_preemption_possible_and_no_other_flavor_must_wait() -> None:
    data = load("high-priority-preemptor")
    one_cpu = ProposedPodSet("main", 1, {"cpu": Decimal(1)})
    result = what_if(_input(data, pod_sets=[one_cpu]))
    assert result.verdict is Verdict.MUST_WAIT
    group = result.pod_sets[0].groups[0]
    assert (group.flavor, group.may_preempt) == ("standard", True)
    assert result.kueue_message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "standard, 1 more needed"
    )


def test_earlier_pod_sets_count_against_later_ones() -> None:
    data = load("too-big-3x1cpu")  # cq-small-2cpu: 2 CPU nominal, nothing reserved
    first = ProposedPodSet("main", 1, {"cpu": Decimal(1)})
    workers = ProposedPodSet("workers", 2, {"cpu": Decimal(1)})
    result = what_if(_input(data, pod_sets=[first, workers]))
    assert result.verdict is Verdict.NEVER_FITS
    assert result.kueue_message == (
        "couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor "
        "standard, previously considered podsets requests (1) + current podset request (2) > "
        "maximum capacity (2)"
    )
