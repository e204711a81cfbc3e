"""Issue 21, class "Limits set elsewhere in the cohort tree", on objects captured from the real
control plane (tests/fixtures/captured/lending-limits.json, Kueue v0.17.0):

- cohort lend-cohort: lend-a (nominal 2, lendingLimit 0), lend-b (nominal 1). b-three asks 3 CPU
  in lend-b; Kueue: "... > maximum capacity (1)": lend-a's lendingLimit keeps its 2 CPU out.
- Cohort lend-root > Cohort lend-child (nominal 0, borrowingLimit 1) > lend-c (nominal 1), and
  lend-d (nominal 4) in lend-root. c-three asks 3 CPU in lend-c; Kueue: "maximum capacity (2)":
  lend-child's borrowingLimit binds, not lend-c's own quota.
- cohort lend-cohort2: lend-e (nominal 2, lendingLimit 1, unused), lend-g (nominal 1, 1 CPU
  held by g-holder). g-two asks 2 CPU; Kueue: "1 more needed": lend-e keeps 1 CPU unused that
  it does not lend.

Each answer must name the object and the limit that binds, with its figure, and the lever.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from kueue_graphql.diagnosis import Absent, DiagnosisInput, Verdict, diagnose
from kueue_graphql.whatif import WhatIfInput, pod_sets_from_job, what_if
from tests.diagnosis.captured import CAPTURED

DATA: dict[str, Any] = json.loads((CAPTURED / "lending-limits.json").read_text())
FLAVOR = "lend-f"


def _by_name(kind: str) -> dict[str, Any]:
    return {o["metadata"]["name"]: o for o in DATA[kind]}


def _cq_of(workload: dict[str, Any]) -> dict[str, Any]:
    queue = workload["spec"]["queueName"]
    return _by_name("clusterQueues")[{"lq-b": "lend-b", "lq-c": "lend-c", "lq-g": "lend-g"}[queue]]


def _local_queue(workload: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": workload["spec"]["queueName"], "namespace": "lend-oracle"},
        "spec": {"clusterQueue": _cq_of(workload)["metadata"]["name"]},
    }


def _diagnose(name: str) -> Any:
    wl = _by_name("workloads")[name]
    return diagnose(
        DiagnosisInput(
            workload=wl,
            events=[],
            pods=[],
            local_queue=_local_queue(wl),
            cluster_queue=_cq_of(wl),
            cluster_queues=DATA["clusterQueues"],
            cohorts=DATA["cohorts"],
            resource_flavors=DATA["resourceFlavors"],
            admission_checks=[],
            nodes=[],
        )
    )


def _what_if(name: str, **changes: Any) -> Any:
    wl = _by_name("workloads")[name]
    job = {"metadata": {"namespace": "lend-oracle"}, "spec": {"parallelism": 1, "template":
           wl["spec"]["podSets"][0]["template"]}}  # fmt: skip
    fields: dict[str, Any] = {
        "namespace": "lend-oracle",
        "local_queue": _local_queue(wl),
        "pod_sets": pod_sets_from_job(job),
        "cluster_queue": _cq_of(wl),
        "resource_flavors": DATA["resourceFlavors"],
        "cluster_queues": DATA["clusterQueues"],
        "cohorts": DATA["cohorts"],
        "namespace_labels": Absent("no namespaceSelector to check"),
    }
    fields.update(changes)
    return what_if(WhatIfInput(**fields))


def _limits(line: Any) -> list[tuple[Any, ...]]:
    return [(b.kind, b.name, b.limit, b.value, b.withheld) for b in line.binding_limits]


def _kueue_message(name: str) -> str:
    wl = _by_name("workloads")[name]
    return next(c["message"] for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")


CASES = {
    # workload: (verdict, Kueue's figure, the limit that binds, words in the summary)
    "b-three": (
        Verdict.NEVER_FITS,
        "maximum capacity (1)",
        ("ClusterQueue", "lend-a", "lendingLimit", Decimal(0), Decimal(2)),
        "ClusterQueue lend-a keeps 2 cpu of its quota from the cohort (lendingLimit 0 cpu)",
    ),
    "c-three": (
        Verdict.NEVER_FITS,
        "maximum capacity (2)",
        ("Cohort", "lend-child", "borrowingLimit", Decimal(1), None),
        "Cohort lend-child borrows at most 1 cpu from its parent cohort (borrowingLimit)",
    ),
    "g-two": (
        Verdict.MUST_WAIT,
        "1 more needed",
        ("ClusterQueue", "lend-e", "lendingLimit", Decimal(1), Decimal(1)),
        "ClusterQueue lend-e keeps 1 cpu unused that it does not lend (lendingLimit 1 cpu)",
    ),
}


@pytest.mark.parametrize("workload", sorted(CASES))
def test_diagnosis_names_the_limit_where_it_binds(workload: str) -> None:
    verdict, kueue_says, binding, words = CASES[workload]
    assert kueue_says in _kueue_message(workload)  # the captured state is Kueue's verdict
    kind, name, limit = binding[:3]
    d = _diagnose(workload)
    assert words in d.summary, d.summary
    levers = [s for s in d.next_steps if f"raise the {limit} of {kind}" in s]
    assert len(levers) == 1, d.next_steps
    assert f"{kind} {name} in flavor {FLAVOR}" in levers[0]
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == (kind, name)
    [line] = d.quota.lines
    assert (line.verdict, line.limited_by) == (verdict, "COHORT")
    assert _limits(line) == [binding]
    # The borrower's own nominal quota is not the lever shown first.
    assert d.next_steps.index(levers[0]) < next(
        (i for i, s in enumerate(d.next_steps) if "nominalQuota of ClusterQueue" in s),
        len(d.next_steps),
    )


@pytest.mark.parametrize("workload", sorted(CASES))
def test_what_if_names_the_limit_where_it_binds(workload: str) -> None:
    verdict, _, binding, words = CASES[workload]
    kind, name, limit = binding[:3]
    answer = _what_if(workload)
    assert answer.verdict is verdict
    assert words in answer.summary, answer.summary
    assert any(f"raise the {limit} of {kind} {name}" in s for s in answer.next_steps), (
        answer.next_steps
    )
    [line] = answer.lines
    assert _limits(line) == [binding]


def test_what_if_under_the_disclosure_policy_gives_the_limit_without_the_name() -> None:
    answer = _what_if("b-three", names_shown=False)
    [line] = answer.lines
    assert _limits(line) == [("ClusterQueue", None, "lendingLimit", Decimal(0), Decimal(2))]
    assert "lend-a" not in answer.summary + " ".join(answer.next_steps)
    assert "another ClusterQueue of cohort lend-cohort (name not disclosed)" in answer.summary


def test_lines_that_fit_name_no_limit() -> None:
    answer = _what_if("g-two", cluster_queue=_by_name("clusterQueues")["lend-e"])
    assert answer.verdict is Verdict.FITS_NOW
    assert all(_limits(line) == [] for line in answer.lines)
