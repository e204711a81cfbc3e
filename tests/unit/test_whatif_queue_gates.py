"""whatIf's queue gates that hold a Workload whatever its size (issue 21): a ClusterQueue's
namespaceSelector against the Namespace's labels as the caller read them, and a ClusterQueue
being deleted (Kueue's cache: terminating, inactive, although its Active condition is not
rewritten while the finalizer holds)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kueue_graphql.kueue.model import Forbidden, Observed, Verdict
from kueue_graphql.whatif import ProposedPodSet, WhatIfInput, WhatIfResult, what_if

ABSENT_SELECTOR = object()


def _cq(selector: Any = ABSENT_SELECTOR, **metadata: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "5"}]}
                ],
            }
        ]
    }
    if selector is not ABSENT_SELECTOR:
        spec["namespaceSelector"] = selector
    return {
        "metadata": {"name": "cq", **metadata},
        "spec": spec,
        "status": {"conditions": [{"type": "Active", "status": "True"}]},
    }


ON_DEMAND = [{"metadata": {"name": "on-demand"}, "spec": {}}]


def _ask(
    cq: dict[str, Any],
    labels: Observed[dict[str, str]],
    flavors: Observed[list[dict[str, Any]]] = ON_DEMAND,
) -> WhatIfResult:
    return what_if(
        WhatIfInput(
            namespace="team",
            local_queue={
                "metadata": {"name": "lq", "namespace": "team"},
                "spec": {"clusterQueue": "cq"},
            },
            pod_sets=[ProposedPodSet("main", 1, {"cpu": Decimal(1)})],
            cluster_queue=cq,
            resource_flavors=flavors,
            cluster_queues=[cq],
            cohorts=[],
            namespace_labels=labels,
        )
    )


ENG = {"matchExpressions": [{"key": "dep", "operator": "In", "values": ["eng"]}]}


def test_a_namespace_the_selector_excludes_never_fits() -> None:
    result = _ask(_cq(ENG), {"dep": "ops"})
    assert (result.verdict, result.limited_by) == (Verdict.NEVER_FITS, "NAMESPACE_NOT_SELECTED")
    assert result.kueue_message == "Workload namespace doesn't match ClusterQueue selector"
    assert "excludes namespace team" in result.summary


def test_a_selected_namespace_fits() -> None:
    assert _ask(_cq(ENG), {"dep": "eng"}).verdict is Verdict.FITS_NOW
    assert _ask(_cq({}), Forbidden("no read needed")).verdict is Verdict.FITS_NOW


def test_a_null_selector_selects_no_namespace() -> None:
    result = _ask(_cq(), Forbidden("not read"))
    assert (result.verdict, result.limited_by) == (Verdict.NEVER_FITS, "NAMESPACE_NOT_SELECTED")


def test_an_unreadable_namespace_claims_no_verdict() -> None:
    """Before: the selector was skipped and the answer said FITS_NOW (s-namespace-selector)."""
    result = _ask(_cq(ENG), Forbidden('namespaces "team" is forbidden'))
    assert (result.verdict, result.limited_by) == (Verdict.UNKNOWN, "NAMESPACE_NOT_READABLE")
    assert result.kueue_message is None
    assert "you may not get Namespace team" in result.summary
    assert "namespaceSelector" in result.summary
    assert any("namespaces/team" in step for step in result.next_steps)


def test_a_cluster_queue_being_deleted_admits_nothing() -> None:
    """Before: FITS_NOW, as its Active condition still said True (s-deleted-cq-freezes)."""
    cq = _cq(
        {}, deletionTimestamp="2026-12-05T02:00:00Z", finalizers=["kueue.x-k8s.io/resource-in-use"]
    )
    result = _ask(cq, Forbidden("no read needed"))
    assert (result.verdict, result.limited_by) == (Verdict.QUEUE_INACTIVE, "CLUSTER_QUEUE_DELETING")
    assert result.kueue_message == "ClusterQueue cq is inactive"
    assert "being deleted" in result.summary
    assert any("another LocalQueue" in step for step in result.next_steps)


def _ask_with_flavors(flavors: Observed[list[dict[str, Any]]]) -> WhatIfResult:
    # Active=True: Kueue has not written its status since the ClusterQueue changed.
    return _ask(_cq(), {}, flavors)


def test_a_cluster_queue_naming_a_missing_flavor_is_inactive() -> None:
    # s-inactive-until-flavor (fresh-clone run of a9efcbf): whatIf asked before Kueue wrote the
    # ClusterQueue's Active=False said "flavor ... not found"; Kueue says it is inactive.
    result = _ask_with_flavors([{"metadata": {"name": "spot"}, "spec": {}}])
    assert result.verdict is Verdict.QUEUE_INACTIVE
    assert result.limited_by == "CLUSTER_QUEUE_INACTIVE"
    assert result.kueue_message == "ClusterQueue cq is inactive"


def test_flavors_the_caller_may_not_list_claim_no_inactive_queue() -> None:
    result = _ask_with_flavors(Forbidden("list resourceflavors"))
    assert result.limited_by != "CLUSTER_QUEUE_INACTIVE"
