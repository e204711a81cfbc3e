"""Quota arithmetic against Kueue's resource-node rules.

HAND-MADE objects, shaped like tests/cluster/manifests/30-kueue-queues.yaml, so each expected
number can be worked out by hand from Kueue v0.17.0's resource_node.go (comments show how).
The same figures are checked on the REAL captured objects in test_diagnose_captured.py.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kueue_graphql.kueue.model import Verdict
from kueue_graphql.kueue.podsets import PodSetRequest
from kueue_graphql.kueue.quota import CohortTree, assess_quota


def cq(
    name: str,
    cpu: dict[str, str],
    cohort: str | None = None,
    reserved_cpu: str = "0",
    flavor: str = "standard",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": flavor, "resources": [{"name": "cpu", **cpu}]}],
            }
        ]
    }
    if cohort:
        spec["cohortName"] = cohort
    return {
        "metadata": {"name": name},
        "spec": spec,
        "status": {
            "flavorsReservation": [
                {"name": flavor, "resources": [{"name": "cpu", "total": reserved_cpu}]}
            ]
        },
    }


def need(cpu: str, flavor: str | None = None) -> list[PodSetRequest]:
    return [
        PodSetRequest(
            name="main",
            count=1,
            per_pod={"cpu": Decimal(cpu)},
            total={"cpu": Decimal(cpu)},
            flavors={"cpu": flavor} if flavor else {},
            source="spec",
        )
    ]


FR = ("standard", "cpu")
BORROWER = cq("borrower", {"nominalQuota": "1", "borrowingLimit": "1"}, "research", "2")
LENDER = cq("lender", {"nominalQuota": "4", "lendingLimit": "3"}, "research")
COHORTS = [
    {"metadata": {"name": "org"}, "spec": {}},
    {"metadata": {"name": "research"}, "spec": {"parentName": "org"}},
]


def test_lone_queue_never_fits_above_nominal() -> None:
    small = cq("small", {"nominalQuota": "2"})
    report = assess_quota(
        cluster_queue=small,
        requests=need("3"),
        holds_reservation=False,
        cluster_queues=None,
        cohorts=None,
    )
    [line] = report.lines
    assert (line.requested, line.nominal_quota, line.maximum_capacity) == (3, 2, 2)
    assert (line.verdict, line.limited_by, report.verdict) == (
        Verdict.NEVER_FITS,
        "NOMINAL_QUOTA",
        Verdict.NEVER_FITS,
    )


def test_borrowing_limit_reached() -> None:
    # research subtree = borrower 1 (no lendingLimit: all lent) + lender 4-1 = 4; usage 2.
    # borrower: potential = min(1 + bl 1, 0 + 4) = 2; available: parent 4-2 = 2, capped by
    # stored 1 - used-in-parent 2 + bl 1 = 0 -> 0. A 1-CPU request must wait, limit binds.
    tree = CohortTree([BORROWER, LENDER], COHORTS)
    assert tree.potential_available("borrower", FR) == 2
    assert tree.available("borrower", FR) == 0
    [own] = tree.binding_limits("borrower", FR, now=True)
    assert (own.kind, own.name, own.limit, own.value) == (
        "ClusterQueue",
        "borrower",
        "borrowingLimit",
        1,
    )
    report = assess_quota(
        cluster_queue=BORROWER,
        requests=need("1"),
        holds_reservation=False,
        cluster_queues=[BORROWER, LENDER],
        cohorts=COHORTS,
    )
    [line] = report.lines
    assert (line.verdict, line.limited_by, line.cohort) == (
        Verdict.MUST_WAIT,
        "BORROWING_LIMIT",
        "research",
    )
    assert (line.maximum_capacity, line.available_now, line.cohort_can_lend) == (2, 0, 0)


def test_borrowing_possible_when_idle() -> None:
    idle = cq("borrower", {"nominalQuota": "1", "borrowingLimit": "1"}, "research", "0")
    report = assess_quota(
        cluster_queue=idle,
        requests=need("2"),
        holds_reservation=False,
        cluster_queues=[idle, LENDER],
        cohorts=COHORTS,
    )
    [line] = report.lines
    # 1 own + 1 borrowed (the lender keeps 1 of its 4 through lendingLimit 3)
    assert (line.available_now, line.cohort_can_lend, line.verdict) == (2, 1, Verdict.FITS_NOW)
    assert (line.lending_limit, line.borrowing_limit) == (None, 1)


def test_lender_keeps_what_it_does_not_lend() -> None:
    # lender localQuota = 4 - 3 = 1, usable only by itself; the rest sits in the cohort.
    tree = CohortTree([BORROWER, LENDER], COHORTS)
    # borrower uses 2 of the cohort's 4 -> cohort has 2 left + lender's local 1
    assert tree.available("lender", FR) == 3
    # no borrowingLimit: its local 1 + the whole cohort (its 3 lent + the borrower's 1) = 5
    assert tree.potential_available("lender", FR) == 5


def test_implicit_cohort_and_unknown_members() -> None:
    # cohort named only by cohortName; without the list of members we cannot say
    a = cq("a", {"nominalQuota": "4"}, "shared", "4")
    report = assess_quota(
        cluster_queue=a,
        requests=need("1"),
        holds_reservation=False,
        cluster_queues=None,
        cohorts=None,
    )
    [line] = report.lines
    assert (line.verdict, line.available_now, line.cohort_can_lend) == (
        Verdict.UNKNOWN,
        None,
        None,
    )
    b = cq("b", {"nominalQuota": "2"}, "shared", "0")
    report = assess_quota(
        cluster_queue=a,
        requests=need("1"),
        holds_reservation=False,
        cluster_queues=[a, b],
        cohorts=[],
    )
    [line] = report.lines
    assert (line.verdict, line.available_now, line.cohort_can_lend) == (Verdict.FITS_NOW, 2, 2)


def test_admitted_workload_counts_itself() -> None:
    a = cq("a", {"nominalQuota": "4"}, None, "3")
    report = assess_quota(
        cluster_queue=a,
        requests=need("3", flavor="standard"),
        holds_reservation=True,
        cluster_queues=None,
        cohorts=None,
    )
    [line] = report.lines
    assert (line.verdict, line.reserved, line.counts_this_workload) == (Verdict.FITS_NOW, 3, True)


def test_best_flavor_wins() -> None:
    two = cq("two", {"nominalQuota": "1"})
    two["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "big", "resources": [{"name": "cpu", "nominalQuota": "8"}]}
    )
    report = assess_quota(
        cluster_queue=two,
        requests=need("3"),
        holds_reservation=False,
        cluster_queues=None,
        cohorts=None,
    )
    verdicts = {line.flavor: line.verdict for line in report.lines}
    assert verdicts == {"standard": Verdict.NEVER_FITS, "big": Verdict.FITS_NOW}
    assert report.verdict is Verdict.FITS_NOW


def _only_line(
    asker: dict[str, Any], cpu: str, members: list[dict[str, Any]], cohorts: list[dict[str, Any]]
) -> Any:
    """The one quota line of a pending `cpu` request in `asker` (members include it)."""
    report = assess_quota(
        cluster_queue=asker,
        requests=need(cpu),
        holds_reservation=False,
        cluster_queues=members,
        cohorts=cohorts,
    )
    [line] = report.lines
    return line


def test_a_member_that_lends_nothing_is_the_limit_to_raise() -> None:
    # Kueue's port case s-lending-limit-update, step 1: prod-cq and dev-cq (5 CPU each,
    # lendingLimit 0) in cohort all; wl-1 holds prod's 5, wl-2 asks 5 more. prod: local 5, used
    # 5 -> 0; the cohort holds 0 (both lend 0). Kueue: "5 more needed"; the Go test admits wl-2
    # once dev's lendingLimit goes to 5: dev keeps 5 unused that it does not lend.
    prod = cq("prod-cq", {"nominalQuota": "5", "lendingLimit": "0"}, "all", "5", "on-demand")
    dev = cq("dev-cq", {"nominalQuota": "5", "lendingLimit": "0"}, "all", flavor="on-demand")
    line = _only_line(prod, "5", [prod, dev], [])
    assert (line.verdict, line.limited_by, line.available_now) == (Verdict.MUST_WAIT, "COHORT", 0)
    [lender] = line.binding_limits
    assert (lender.kind, lender.name, lender.limit, lender.value, lender.withheld) == (
        "ClusterQueue",
        "dev-cq",
        "lendingLimit",
        0,
        5,
    )
    # Step 2 raises dev's lendingLimit to 5: then it fits, and no limit is named.
    dev = cq("dev-cq", {"nominalQuota": "5", "lendingLimit": "5"}, "all", flavor="on-demand")
    tree = CohortTree([prod, dev], [])
    assert tree.available("prod-cq", ("on-demand", "cpu")) == 5


def test_an_own_borrowing_limit_that_does_not_bind_is_not_the_limit() -> None:
    # asker: 1 CPU, borrowingLimit 10; lender: 2 CPU, lendingLimit 0. potential = min(1 + 10,
    # 0 + cohort 1) = 1: the lender's lendingLimit binds, not the asker's borrowingLimit.
    asker = cq("asker", {"nominalQuota": "1", "borrowingLimit": "10"}, "pool")
    lender = cq("lender", {"nominalQuota": "2", "lendingLimit": "0"}, "pool")
    line = _only_line(asker, "3", [asker, lender], [])
    assert (line.verdict, line.limited_by, line.maximum_capacity) == (
        Verdict.NEVER_FITS,
        "COHORT",
        1,
    )
    assert [(b.kind, b.name, b.limit, b.withheld) for b in line.binding_limits] == [
        ("ClusterQueue", "lender", "lendingLimit", 2)
    ]


def test_the_root_cohorts_own_quota_is_named_when_nothing_is_held_back() -> None:
    # Cohort pool holds 2 CPU of its own; its only member 0. potential = 0 + 2.
    member = cq("member", {"nominalQuota": "0"}, "pool")
    pool = {
        "metadata": {"name": "pool"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "standard", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]},
    }  # fmt: skip
    line = _only_line(member, "3", [member], [pool])
    assert (line.verdict, line.limited_by, line.maximum_capacity) == (
        Verdict.NEVER_FITS,
        "COHORT",
        2,
    )
    assert [(b.kind, b.name, b.limit, b.value) for b in line.binding_limits] == [
        ("Cohort", "pool", "nominalQuota", 2)
    ]
