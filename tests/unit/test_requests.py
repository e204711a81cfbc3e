"""Per-pod and aggregate requests, on Workloads captured from the real cluster.

Kueue writes its own per-pod-set totals into the Workload (`status.resourceRequests` while
pending, `status.admission...resourceUsage` once admitted); the computed totals must agree.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.kueue.quantity import format_quantity, parse_quantity
from kueue_graphql.kueue.requests import (
    kueue_podset_requests,
    pod_requests,
    spec_podset_requests,
    total_requests,
)

CAPTURED = Path(__file__).parents[1] / "fixtures" / "captured"


def load(scenario: str) -> dict[str, Any]:
    """The scenario's Workload, from tests/diagnosis/capture_fixtures.py's capture."""
    loaded: dict[str, Any] = json.loads((CAPTURED / f"{scenario}.json").read_text())["workload"]
    return loaded


def printed(resources: dict[str, Any]) -> dict[str, str]:
    return {name: format_quantity(q) for name, q in resources.items()}


def kueue_totals(workload: dict[str, Any]) -> dict[str, str]:
    status = workload["status"]
    if status.get("admission"):
        usage = status["admission"]["podSetAssignments"][0]["resourceUsage"]
    else:
        usage = status["resourceRequests"][0]["resources"]
    return {name: format_quantity(parse_quantity(v)) for name, v in usage.items()}


def test_too_big_needs_three_cpus_at_once() -> None:
    workload = load("too-big-3x1cpu")
    (podset,) = spec_podset_requests(workload)
    assert podset.count == 3
    assert printed(podset.per_pod) == {"cpu": "1", "memory": "256Mi"}
    assert printed(total_requests([podset])) == {"cpu": "3", "memory": "768Mi"}


@pytest.mark.parametrize(
    "scenario",
    [
        "too-big-3x1cpu",
        "borrows-one-cpu",
        "gpu-training",
    ],
)
def test_totals_agree_with_kueue(scenario: str) -> None:
    workload = load(scenario)
    assert printed(total_requests(spec_podset_requests(workload))) == kueue_totals(workload)


def test_limits_stand_in_for_missing_requests() -> None:
    spec = {"containers": [{"resources": {"limits": {"cpu": "2"}}}]}
    assert printed(pod_requests(spec)) == {"cpu": "2"}


def test_init_container_peak_and_sidecars_and_overhead() -> None:
    spec = {
        "containers": [{"resources": {"requests": {"cpu": "1"}}}],
        "initContainers": [
            {"resources": {"requests": {"cpu": "3"}}},
            {"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        ],
        "overhead": {"cpu": "100m"},
    }
    # max(app 1 + sidecar 0.5, init 3) + overhead 0.1
    assert printed(pod_requests(spec)) == {"cpu": "3100m"}


@pytest.mark.parametrize(
    "scenario",
    [
        "too-big-3x1cpu",
        "borrows-one-cpu",
        "gpu-training",
    ],
)
def test_kueue_view_reads_what_kueue_recorded(scenario: str) -> None:
    workload = load(scenario)
    (podset,) = kueue_podset_requests(workload)
    assert podset.source == (
        "status.admission" if workload["status"].get("admission") else "status.resourceRequests"
    )
    assert printed(podset.total) == kueue_totals(workload)
    assert printed(total_requests([podset])) == printed(
        total_requests(spec_podset_requests(workload))
    )


def test_pod_level_requests_replace_the_containers_for_cpu_memory_hugepages() -> None:
    spec = {
        "containers": [
            {"resources": {"requests": {"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"}}}
        ],
        "resources": {
            "requests": {"cpu": "3", "hugepages-2Mi": "4Mi", "example.com/gpu": "2"},
            "limits": {"memory": "4Gi"},
        },
        "overhead": {"cpu": "100m"},
    }
    # cpu and hugepages from the pod level (+ overhead); other resources from the containers;
    # a pod-level limit is not a request (only a Pod's defaulting would make it one).
    assert printed(pod_requests(spec)) == {
        "cpu": "3100m",
        "memory": "1Gi",
        "hugepages-2Mi": "4Mi",
        "example.com/gpu": "1",
    }


def test_sidecars_count_as_app_containers_and_run_next_to_later_inits() -> None:
    spec = {
        "containers": [{"resources": {"requests": {"cpu": "1"}}}],
        "initContainers": [
            {"restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"resources": {"requests": {"cpu": "1500m"}}},
        ],
    }
    # app 1 + sidecar 1 = 2 < init 1.5 next to the sidecar 1 = 2.5
    assert printed(pod_requests(spec)) == {"cpu": "2500m"}


def test_unreadable_quantities_are_skipped() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "lots", "memory": "1Gi"}}}, "junk"]}
    assert printed(pod_requests(spec)) == {"memory": "1Gi"}


def _workload(count: int, status: dict[str, Any]) -> dict[str, Any]:
    template = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}
    return {
        "spec": {"podSets": [{"name": "main", "count": count, "template": template}]},
        "status": status,
    }


def test_spec_view_ignores_status_kueue_view_follows_it() -> None:
    workload = _workload(
        3,
        {
            "reclaimablePods": [{"name": "main", "count": 1}],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}}
                ],
            },
        },
    )
    (spec,) = spec_podset_requests(workload)
    assert (spec.count, printed(spec.total), spec.source) == (3, {"cpu": "3"}, "spec")
    (kueue,) = kueue_podset_requests(workload)
    # Kueue scales the reservation in milli-CPU integers: 1000m // 3 * 2 = 666m
    assert (kueue.count, printed(kueue.total), kueue.flavors, kueue.source) == (
        2,
        {"cpu": "666m"},
        {"cpu": "f"},
        "status.admission",
    )


def test_kueue_view_all_pods_reclaimed_releases_everything() -> None:
    workload = _workload(
        2,
        {
            "reclaimablePods": [{"name": "main", "count": 2}],
            "admission": {"podSetAssignments": [{"name": "main", "resourceUsage": {"cpu": "2"}}]},
        },
    )
    (kueue,) = kueue_podset_requests(workload)
    assert (kueue.count, printed(kueue.total)) == (0, {"cpu": "0"})


def test_kueue_view_keeps_a_partial_admission_count() -> None:
    workload = _workload(
        4,
        {
            "admission": {
                "podSetAssignments": [{"name": "main", "count": 2, "resourceUsage": {"cpu": "2"}}]
            }
        },
    )
    (kueue,) = kueue_podset_requests(workload)
    assert (kueue.count, printed(kueue.total)) == (2, {"cpu": "2"})


def test_kueue_view_pending_uses_resource_requests_then_spec_minus_reclaimable() -> None:
    recorded = _workload(2, {"resourceRequests": [{"name": "main", "resources": {"cpu": "2100m"}}]})
    (kueue,) = kueue_podset_requests(recorded)
    assert (printed(kueue.total), kueue.source) == ({"cpu": "2100m"}, "status.resourceRequests")
    bare = _workload(3, {"reclaimablePods": [{"name": "main", "count": 1}]})
    (kueue,) = kueue_podset_requests(bare)
    assert (kueue.count, printed(kueue.total), kueue.source) == (2, {"cpu": "2"}, "spec")
