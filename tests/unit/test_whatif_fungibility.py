"""whatIf's flavorFungibility.preference (Kueue v0.17 flavorassigner.go isPreferred), pure."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kueue_graphql.diagnosis import Verdict
from kueue_graphql.whatif import ProposedPodSet, WhatIfInput, what_if


def _flavor(name: str, cpu: str) -> dict[str, Any]:
    return {"name": name, "resources": [{"name": "cpu", "nominalQuota": cpu}]}


def _queue(
    name: str, flavors: list[dict[str, Any]], used: dict[str, str], **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "cohortName": "co",
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
            **spec,
        },
        "status": {
            "reservingWorkloads": 1 if any(v != "0" for v in used.values()) else 0,
            "flavorsReservation": [
                {"name": f, "resources": [{"name": "cpu", "total": v, "borrowed": v}]}
                for f, v in used.items()
            ],
            "conditions": [{"type": "Active", "status": "True"}],
        },
    }


def _ask(preference: str | None) -> Any:
    """standard needs borrowing from the sibling; gpu is within the queue's nominal quota, but
    the sibling borrowed all of it (reclaim finds no candidate: reclaimWithinCohort Never)."""
    fungibility = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    if preference:
        fungibility["preference"] = preference
    cq = _queue(
        "cq",
        [_flavor("standard", "1"), _flavor("gpu", "2")],
        {},
        flavorFungibility=fungibility,
    )
    sibling = _queue("sibling", [_flavor("standard", "4"), _flavor("gpu", "0")], {"gpu": "2"})
    result = what_if(
        WhatIfInput(
            namespace="ns",
            local_queue={"metadata": {"name": "lq"}, "spec": {"clusterQueue": "cq"}},
            pod_sets=[ProposedPodSet("main", 1, {"cpu": Decimal(2)})],
            cluster_queue=cq,
            resource_flavors=[{"metadata": {"name": f}, "spec": {}} for f in ("standard", "gpu")],
            cluster_queues=[cq, sibling],
            cohorts=[],
            priority=0,
            priority_class=None,
            candidates=[],
            candidates_complete=True,
        )
    )
    (group,) = result.pod_sets[0].groups
    return result.verdict, group.flavor


def test_borrowing_over_preemption_borrows_in_the_first_flavor() -> None:
    assert _ask(None) == (Verdict.FITS_NOW, "standard")
    assert _ask("BorrowingOverPreemption") == (Verdict.FITS_NOW, "standard")


def test_preemption_over_borrowing_takes_the_flavor_that_does_not_borrow() -> None:
    assert _ask("PreemptionOverBorrowing") == (Verdict.MUST_WAIT, "gpu")
