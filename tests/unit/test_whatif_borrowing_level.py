"""whatIf's borrowing level and granular mode (Kueue v0.17 flavorassigner.go, with
preemption/classical/hierarchical_preemption.go FindHeightOfLowestSubtreeThatFits), pure.

The trees are built from objects as the API server returns them; the expected levels are worked
out by hand from Kueue's definitions (height of the lowest subtree whose quota takes the
request, counted from the leaves), and the flavor choices are those the real Kueue made for the
same objects in tests/service/test_whatif_oracle.py.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kueue_graphql.kueue.model import Verdict
from kueue_graphql.kueue.quota import CohortTree
from kueue_graphql.whatif import PreemptionCandidate, ProposedPodSet, WhatIfInput, modes, what_if
from kueue_graphql.whatif.borrowing import level_after_preemption, lowest_subtree_that_fits
from kueue_graphql.whatif.modes import BEST, WORST, GranularMode, PreemptionMode
from tests.diagnosis.captured import load

CPU = "cpu"


def _resources(quotas: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    return [{"name": r, **q} for r, q in quotas.items()]


def _queue(
    name: str,
    cohort: str | None,
    flavors: dict[str, dict[str, dict[str, str]]],
    used: dict[tuple[str, str], str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    covered = sorted({r for quotas in flavors.values() for r in quotas})
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            **({"cohortName": cohort} if cohort else {}),
            "resourceGroups": [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {"name": f, "resources": _resources(q)} for f, q in flavors.items()
                    ],
                }
            ],
            **spec,
        },
        "status": {
            "flavorsReservation": [
                {"name": f, "resources": [{"name": r, "total": v}]}
                for (f, r), v in (used or {}).items()
            ],
            "conditions": [{"type": "Active", "status": "True"}],
        },
    }


def _cohort(
    name: str, parent: str | None, flavors: dict[str, dict[str, dict[str, str]]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if flavors:
        covered = sorted({r for quotas in flavors.values() for r in quotas})
        spec["resourceGroups"] = [
            {
                "coveredResources": covered,
                "flavors": [{"name": f, "resources": _resources(q)} for f, q in flavors.items()],
            }
        ]
    return {"metadata": {"name": name}, "spec": spec}


def _n(cpu: str, **more: str) -> dict[str, dict[str, str]]:
    return {CPU: {"nominalQuota": cpu}, **{k: {"nominalQuota": v} for k, v in more.items()}}


# The oracle's second tree: standard quota at the root, gpu-a100 quota in the middle cohort.
ROOT = _cohort("root", None, {"standard": _n("4")})
MID = _cohort("mid", "root", {"gpu-a100": _n("2")})


def _level_queue(name: str, **spec: Any) -> dict[str, Any]:
    return _queue(name, "mid", {"standard": _n("1"), "gpu-a100": _n("1")}, **spec)


def _sibling(gpu_used: str = "0") -> dict[str, Any]:
    return _queue("sibling", "root", {"gpu-a100": _n("0")}, {("gpu-a100", CPU): gpu_used})


def _ask(
    cq: dict[str, Any],
    queues: list[dict[str, Any]],
    cohorts: list[dict[str, Any]],
    cpu: str,
    **more: Any,
) -> Any:
    flavors = sorted({str(f["name"]) for g in cq["spec"]["resourceGroups"] for f in g["flavors"]})
    return what_if(
        WhatIfInput(
            namespace="ns",
            local_queue={
                "metadata": {"name": "lq"},
                "spec": {"clusterQueue": cq["metadata"]["name"]},
            },
            pod_sets=[ProposedPodSet("main", 1, {CPU: Decimal(cpu)})],
            cluster_queue=cq,
            resource_flavors=[{"metadata": {"name": f}, "spec": {}} for f in flavors],
            cluster_queues=queues,
            cohorts=cohorts,
            **more,
        )
    )


# -- FindHeightOfLowestSubtreeThatFits -------------------------------------------------------


def _oracle_tree(cq: dict[str, Any], sibling_gpu_used: str = "0") -> CohortTree:
    """As in the oracle: two queues of standard 1 + gpu-a100 1 in the middle cohort."""
    return CohortTree([cq, _level_queue("other"), _sibling(sibling_gpu_used)], [ROOT, MID])


def test_levels_in_a_two_level_tree() -> None:
    tree = _oracle_tree(_level_queue("cq"))
    fits = lowest_subtree_that_fits
    # Within the queue's own nominal quota: no borrowing (and reclaiming is possible: a parent).
    assert fits(tree, "cq", ("standard", CPU), Decimal(1)) == (0, True)
    # standard: the middle cohort holds only the queues' 1 + 1; the root's 4 take 3 CPU.
    assert fits(tree, "cq", ("standard", CPU), Decimal(2)) == (1, True)
    assert fits(tree, "cq", ("standard", CPU), Decimal(3)) == (2, False)
    # gpu-a100: the middle cohort's own 2 plus the queues' 1 + 1.
    assert fits(tree, "cq", ("gpu-a100", CPU), Decimal(3)) == (1, True)
    assert fits(tree, "cq", ("gpu-a100", CPU), Decimal(4)) == (1, True)
    # Beyond every subtree: the root's height, nothing left to reclaim from above.
    assert fits(tree, "cq", ("gpu-a100", CPU), Decimal(5)) == (2, False)


def test_level_counts_usage_of_the_subtree() -> None:
    """The sibling under the root borrows all of the tree's gpu-a100 quota: the middle cohort
    still holds the request (its usage is within its subtree quota), so the level stays 1."""
    tree = _oracle_tree(_level_queue("cq"), sibling_gpu_used="4")
    assert tree.available("cq", ("gpu-a100", CPU)) == 0
    assert lowest_subtree_that_fits(tree, "cq", ("gpu-a100", CPU), Decimal(3)) == (1, True)


def test_level_is_a_height_not_a_distance() -> None:
    """A queue directly under the root borrows from its own cohort, but the root's height is
    2 when a child cohort has queues of its own (getNodeHeight counts from the leaves)."""
    direct = _queue("direct", "root", {"standard": _n("1")})
    tree = CohortTree([direct, _level_queue("cq")], [ROOT, MID])
    assert lowest_subtree_that_fits(tree, "direct", ("standard", CPU), Decimal(2)) == (2, False)
    flat = CohortTree([direct], [ROOT])
    assert lowest_subtree_that_fits(flat, "direct", ("standard", CPU), Decimal(2)) == (1, False)


def test_no_cohort_never_borrows() -> None:
    alone = _queue("alone", None, {"standard": _n("1")})
    tree = CohortTree([alone], [])
    assert lowest_subtree_that_fits(tree, "alone", ("standard", CPU), Decimal(5)) == (0, False)


def test_captured_research_tree() -> None:
    """Captured from the real control plane (borrows-one-cpu): org > research > the borrower
    (nominal 1 CPU, 2 reserved) and the lender (4 CPU, lendingLimit 3: it keeps 1, research
    holds 3 + 1 = 4 CPU, 2 of them used by the borrower)."""
    data = load("borrows-one-cpu")
    fits = lowest_subtree_that_fits
    tree = CohortTree(data["clusterQueues"], data["cohorts"])
    cpu, memory = ("standard", CPU), ("standard", "memory")
    assert fits(tree, "cq-research-borrower", memory, Decimal(2**30)) == (0, True)
    assert fits(tree, "cq-research-borrower", cpu, Decimal(2)) == (1, True)
    # org holds no quota of its own: what research cannot take, no subtree takes.
    assert fits(tree, "cq-research-borrower", cpu, Decimal(3)) == (2, False)
    assert fits(tree, "cq-research-lender", cpu, Decimal(4)) == (0, True)
    # Beyond its nominal quota the lender needs 5 - 1 kept locally = 4 from research: 2 + 4 > 4.
    assert fits(tree, "cq-research-lender", cpu, Decimal(5)) == (2, False)
    assert fits(tree.without_usage("cq-research-borrower", cpu, Decimal(2)),
                "cq-research-lender", cpu, Decimal(5)) == (1, True)  # fmt: skip


def test_level_after_preemption_frees_the_targets_usage() -> None:
    """SimulatePreemption's borrowAfterPreemptions: with 1 of 1 CPU used, 1 more borrows from
    the middle cohort; once the Workload holding it is removed, it fits the queue's own quota."""
    tree = _oracle_tree(_level_queue("cq", used={("standard", CPU): "1"}))
    fr = ("standard", CPU)
    assert lowest_subtree_that_fits(tree, "cq", fr, Decimal(1)) == (1, True)
    target = PreemptionCandidate(priority=0, admitted_at="t", reserved={fr: Decimal(1)})
    assert level_after_preemption(tree, "cq", fr, Decimal(1), [target]) == 0
    assert level_after_preemption(tree, "cq", fr, Decimal(1), []) == 1


# -- isPreferred / shouldTryNextFlavor ---------------------------------------------------------

FIT1 = GranularMode(PreemptionMode.FIT, 1)
FIT2 = GranularMode(PreemptionMode.FIT, 2)
PREEMPT0 = GranularMode(PreemptionMode.PREEMPT, 0)
NO_CANDIDATES1 = GranularMode(PreemptionMode.NO_PREEMPTION_CANDIDATES, 1)


@pytest.mark.parametrize(
    ("a", "b", "preference", "preferred"),
    [
        (FIT1, FIT2, None, True),
        (FIT2, FIT1, None, False),
        (FIT2, PREEMPT0, None, True),
        (FIT2, PREEMPT0, "BorrowingOverPreemption", True),
        (FIT2, PREEMPT0, "PreemptionOverBorrowing", False),
        (PREEMPT0, FIT2, "PreemptionOverBorrowing", True),
        (NO_CANDIDATES1, FIT2, "PreemptionOverBorrowing", True),
        (FIT1, FIT1, None, False),
        (WORST, FIT2, None, False),
        (NO_CANDIDATES1, WORST, None, True),
    ],
)
def test_is_preferred(
    a: GranularMode, b: GranularMode, preference: str | None, preferred: bool
) -> None:
    fungibility = {"preference": preference} if preference else {}
    assert modes.is_preferred(a, b, fungibility) is preferred


@pytest.mark.parametrize(
    ("mode", "fungibility", "next_flavor"),
    [
        (BEST, {"whenCanBorrow": "TryNextFlavor"}, False),
        (FIT1, {}, False),  # whenCanBorrow defaults to MayStopSearch
        (FIT1, {"whenCanBorrow": "TryNextFlavor"}, True),
        (PREEMPT0, {}, True),  # whenCanPreempt defaults to TryNextFlavor
        (PREEMPT0, {"whenCanPreempt": "MayStopSearch"}, False),
        # A preemption that also borrows goes on under whenCanBorrow: TryNextFlavor, even with
        # whenCanPreempt: MayStopSearch.
        (
            GranularMode(PreemptionMode.PREEMPT, 1),
            {"whenCanPreempt": "MayStopSearch", "whenCanBorrow": "TryNextFlavor"},
            True,
        ),
        (NO_CANDIDATES1, {"whenCanPreempt": "MayStopSearch"}, True),
        (WORST, {}, True),
    ],
)
def test_should_try_next_flavor(
    mode: GranularMode, fungibility: dict[str, str], next_flavor: bool
) -> None:
    assert modes.should_try_next_flavor(mode, fungibility) is next_flavor


# -- the flavor search with levels -------------------------------------------------------------


def test_try_next_flavor_prefers_the_lower_borrowing_level() -> None:
    """Both flavors fit only by borrowing: standard from the root (level 2), gpu-a100 from
    the middle cohort (level 1). Kueue picks gpu-a100 (oracle case "borrow from the parent over
    the grandparent"); as yes/no both borrow and the first would stay."""
    cq = _level_queue("cq", flavorFungibility={"whenCanBorrow": "TryNextFlavor"})
    result = _ask(cq, [cq, _sibling()], [ROOT, MID], "3")
    (group,) = result.pod_sets[0].groups
    assert (result.verdict, group.flavor, group.borrows) == (Verdict.FITS_NOW, "gpu-a100", True)
    assert group.borrowing_level == 1
    assert [(a.flavor, a.borrowing_level) for a in group.attempts] == [
        ("standard", 2),
        ("gpu-a100", 1),
    ]


def test_may_stop_search_keeps_the_first_flavor_that_borrows() -> None:
    cq = _level_queue("cq")
    result = _ask(cq, [cq, _sibling()], [ROOT, MID], "3")
    (group,) = result.pod_sets[0].groups
    assert (group.flavor, group.borrowing_level, len(group.attempts)) == ("standard", 2, 1)


def test_preemption_over_borrowing_ranks_the_level_first() -> None:
    """gpu-a100 only by reclaiming at level 1 (no candidate), standard fits at level 2: with
    PreemptionOverBorrowing Kueue takes gpu-a100 and waits (oracle case)."""
    fungibility = {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "PreemptionOverBorrowing",
    }
    cq = _level_queue("cq", flavorFungibility=fungibility)
    queues = [cq, _sibling(gpu_used="4")]
    result = _ask(cq, queues, [ROOT, MID], "3")
    (group,) = result.pod_sets[0].groups
    assert (result.verdict, group.flavor) == (Verdict.MUST_WAIT, "gpu-a100")
    assert result.kueue_message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "gpu-a100, 3 more needed"
    )
    default = _level_queue("cq", flavorFungibility={**fungibility, "preference": None})
    result = _ask(default, [default, _sibling(gpu_used="4")], [ROOT, MID], "3")
    assert (result.verdict, result.pod_sets[0].groups[0].flavor) == (Verdict.FITS_NOW, "standard")


def test_preemption_over_borrowing_counts_the_level_after_preemption() -> None:
    """standard is full with a lower-priority Workload: preempting it leaves the request within
    the queue's nominal quota (level 0 after preemption, SimulatePreemption), while gpu-a100
    fits by borrowing at level 1. PreemptionOverBorrowing prefers the preemption."""
    fungibility = {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "PreemptionOverBorrowing",
    }
    used = {("standard", CPU): "1"}
    cq = _queue(
        "cq",
        "mid",
        {"standard": _n("1"), "gpu-a100": _n("0")},
        used,
        flavorFungibility=fungibility,
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    lonely_root = _cohort("root", None)
    mid = _cohort("mid", "root", {"gpu-a100": _n("2")})
    victim = PreemptionCandidate(
        priority=0, admitted_at="2026-01-01T00:00:00Z", reserved={("standard", CPU): Decimal(1)}
    )
    result = _ask(cq, [cq], [lonely_root, mid], "1", priority=10, candidates=[victim])
    (group,) = result.pod_sets[0].groups
    assert (result.verdict, group.flavor, group.preempts) == (Verdict.MUST_WAIT, "standard", 1)
    assert [(a.flavor, a.borrowing_level) for a in group.attempts] == [
        ("standard", 0),
        ("gpu-a100", 1),
    ]


def test_the_highest_level_among_resources_is_the_flavors() -> None:
    """cpu borrows from the root (level 2), memory from the middle cohort (level 1): the
    flavor's level is the highest (maxBorrow), and its mode the least preferred."""
    cq = _queue("cq", "mid", {"standard": _n("1", memory="1Gi")})
    root = _cohort("root", None, {"standard": _n("4", memory="1Gi")})
    mid = _cohort("mid", "root", {"standard": _n("0", memory="4Gi")})
    result = what_if(
        WhatIfInput(
            namespace="ns",
            local_queue={"metadata": {"name": "lq"}, "spec": {"clusterQueue": "cq"}},
            pod_sets=[ProposedPodSet("main", 1, {CPU: Decimal(2), "memory": Decimal(2**31)})],
            cluster_queue=cq,
            resource_flavors=[{"metadata": {"name": "standard"}, "spec": {}}],
            cluster_queues=[cq],
            cohorts=[root, mid],
        )
    )
    (group,) = result.pod_sets[0].groups
    assert (result.verdict, group.borrowing_level) == (Verdict.FITS_NOW, 2)


def test_unreadable_cohort_leaves_the_level_unknown() -> None:
    cq = _level_queue("cq")
    result = _ask(cq, [cq], [ROOT, MID], "3")
    result_unknown = what_if(
        WhatIfInput(
            namespace="ns",
            local_queue={"metadata": {"name": "lq"}, "spec": {"clusterQueue": "cq"}},
            pod_sets=[ProposedPodSet("main", 1, {CPU: Decimal(3)})],
            cluster_queue=cq,
            resource_flavors=[
                {"metadata": {"name": f}, "spec": {}} for f in ("standard", "gpu-a100")
            ],
        )
    )
    assert result.pod_sets[0].groups[0].borrowing_level == 2
    (group,) = result_unknown.pod_sets[0].groups
    assert result_unknown.verdict is Verdict.UNKNOWN
    assert [a.borrowing_level for a in group.attempts] == [None, None]


def test_numbers_hidden_hide_the_level() -> None:
    cq = _level_queue("cq", flavorFungibility={"whenCanBorrow": "TryNextFlavor"})
    result = _ask(cq, [cq, _sibling()], [ROOT, MID], "3", show_numbers=False)
    (group,) = result.pod_sets[0].groups
    assert (group.flavor, group.borrows, group.borrowing_level) == ("gpu-a100", True, None)
    assert [a.borrowing_level for a in group.attempts] == [None, None]
