"""whatIf's preemption (Kueue v0.17 pkg/scheduler/preemption, classical) on objects captured
from the real control plane just before a ported case's preemptor was created
(tests/kueue_port/capture_preemption.py): the targets must be the Workloads Kueue then
preempted, in their ClusterQueues, with the reason of Kueue's Preempted condition.

Covers reclaim within the cohort (p-cohort-reclaim, p-strict-fifo-reclaim, p-lending-limit,
f-guaranteed-preempts-one), a multi-level cohort (p-multi-level-cohort), borrowWithinCohort
with maxPriorityThreshold (p-borrow-while-preempting), whenCanPreempt: MayStopSearch
(s-preempt-before-next-flavor) and one Workload over several pod sets (s-reclaim-dynamic).
"""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.diagnosis import Verdict
from kueue_graphql.kueue.exact import parse_quantity
from kueue_graphql.kueue.quota import cohort_tree
from kueue_graphql.lookups.whatif import preemption_candidate
from kueue_graphql.whatif import ProposedPodSet, WhatIfInput, WhatIfResult, what_if
from kueue_graphql.whatif.preemption import with_targets, without_targets

CAPTURED = Path(__file__).parent.parent / "fixtures" / "issue21" / "preemption"
FILES = sorted(CAPTURED.glob("*.json"))


def _pod_sets(workload: dict[str, Any]) -> list[ProposedPodSet]:
    out = []
    for ps in workload["spec"]["podSets"]:
        requests = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
        per_pod = {r: parse_quantity(str(q)) for r, q in requests.items()}
        out.append(ProposedPodSet(ps["name"], ps["count"], per_pod))
    return out


def _ask(data: dict[str, Any], preemptor: dict[str, Any], **changes: Any) -> WhatIfResult:
    queue = preemptor["spec"]["queueName"]
    lq = next(q for q in data["localQueues"] if q["metadata"]["name"] == queue)
    cqs = data["clusterQueues"]
    cq = next(c for c in cqs if c["metadata"]["name"] == lq["spec"]["clusterQueue"])
    names = {c["metadata"]["name"] for c in cqs}
    candidates = [c for w in data["workloads"] if (c := preemption_candidate(w, names))]
    fields: dict[str, Any] = {
        "namespace": preemptor["metadata"]["namespace"],
        "local_queue": lq,
        "pod_sets": _pod_sets(preemptor),
        "cluster_queue": cq,
        "resource_flavors": data["resourceFlavors"],
        "cluster_queues": cqs,
        "cohorts": data["cohorts"],
        "priority": preemptor["spec"].get("priority") or 0,
        "candidates": candidates,
        "candidates_complete": True,
    }
    fields.update(changes)
    return what_if(WhatIfInput(**fields))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_targets_are_what_kueue_preempted(path: Path) -> None:
    data = json.loads(path.read_text())
    assert data["kueuePreempted"], "the capture saw Kueue preempt"
    for preemptor in data["create"]:
        wanted = data["kueuePreempted"].get(preemptor["metadata"]["name"], [])
        result = _ask(data, preemptor)
        got = sorted(t.workload.name for t in result.preemption_targets)
        assert got == wanted, result.summary
        assert result.verdict is Verdict.MUST_WAIT
        assert result.preempts == len(wanted)
        assert result.kueue_message is not None
        assert result.kueue_message.endswith(
            f". Pending the preemption of {len(wanted)} workload(s)"
        )
        for target in result.preemption_targets:
            held = next(w for w in data["workloads"] if w["metadata"]["uid"] == target.workload.uid)
            assert target.cluster_queue == held["status"]["admission"]["clusterQueue"]
            assert target.reason == data["kueueReasons"][target.workload.name]
            # The summary names each target where it holds quota.
            assert f"/{target.workload.name} in ClusterQueue {target.cluster_queue}" in (
                result.summary
            )


def _data(stem: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURED / f"{stem}.json").read_text())
    return data


def test_reclaim_never_leaves_the_cohort_alone() -> None:
    """reclaimWithinCohort: Never: no candidate outside the ClusterQueue, nothing preempted."""
    data = _data("p-lending-limit-step2")
    for cq in data["clusterQueues"]:
        cq["spec"]["preemption"] = {"reclaimWithinCohort": "Never"}
    result = _ask(data, data["create"][0])
    assert result.preemption_targets == ()
    assert result.preempts == 0


def test_lower_priority_reclaim_spares_equal_priority() -> None:
    """reclaimWithinCohort: LowerPriority: wl-1 (priority 0) is not below wl-3 (0), wl-2 (1)
    neither: nothing to reclaim."""
    data = _data("p-lending-limit-step2")
    for cq in data["clusterQueues"]:
        cq["spec"]["preemption"] = {"reclaimWithinCohort": "LowerPriority"}
    assert _ask(data, data["create"][0]).preemption_targets == ()
    high = {**data["create"][0], "spec": {**data["create"][0]["spec"], "priority": 5}}
    got = [t.workload.name for t in _ask(data, high).preemption_targets]
    assert got == ["wl-1"]  # the lower priority first, and it frees enough


def test_unreadable_candidates_preempt_nothing_named() -> None:
    """Only the Workloads the caller may read are simulated: without them, no target."""
    data = _data("p-cohort-reclaim-step2")
    result = _ask(data, data["create"][0], candidates=[], candidates_complete=False)
    assert result.preemption_targets == ()
    assert "you may read" in result.detail


def test_evicted_candidate_goes_first() -> None:
    """CandidatesOrdering: an evicted Workload still holding quota is taken first."""
    data = _data("s-preempt-before-next-flavor-step2")
    cqs = data["clusterQueues"]
    names = {c["metadata"]["name"] for c in cqs}
    candidates = [c for w in data["workloads"] if (c := preemption_candidate(w, names))]
    # wl-2 (priority 1) marked evicted: it goes before wl-1 (priority 0).
    marked = [replace(c, evicted=c.name == "wl-2") for c in candidates]
    got = [
        t.workload.name for t in _ask(data, data["create"][0], candidates=marked).preemption_targets
    ]
    assert got == ["wl-2"]


def test_reclaimable_pods_are_not_counted() -> None:
    """status.reclaimablePods: the Pods a Workload gave back hold no quota (Kueue's usage)."""
    data = _data("s-reclaim-dynamic-step3")
    first = data["workloads"][0]
    names = {c["metadata"]["name"] for c in data["clusterQueues"]}
    candidate = preemption_candidate(first, names)
    assert candidate is not None
    assert sum(candidate.reserved.values(), Decimal(0)) == Decimal(2)  # 3 Pods, 1 reclaimed


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_removing_then_adding_back_restores_every_usage(path: Path) -> None:
    """The snapshot's RemoveWorkload then AddWorkload (fillBackWorkloads) is the identity on
    every ClusterQueue's and Cohort's usage, lending limits included."""
    data = json.loads(path.read_text())
    names = {c["metadata"]["name"] for c in data["clusterQueues"]}
    tree = cohort_tree(data["clusterQueues"][0], data["clusterQueues"], data["cohorts"])
    assert tree is not None
    keys = [tree.cluster_queue_node(n) for n in names]
    keys += [c for n in names for c in tree.path_parent_to_root(n)]
    for w in data["workloads"]:
        candidate = preemption_candidate(w, names)
        if candidate is None:
            continue
        gone = without_targets(tree, "", [candidate])
        back = with_targets(gone, "", [candidate])
        for key in keys:
            for fr in candidate.reserved:
                assert back.usage(key, fr) == tree.usage(key, fr), (key, fr)
