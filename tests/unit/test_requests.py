"""Per-pod and aggregate requests, on Workloads captured from the real cluster.

Kueue writes its own per-pod-set totals into the Workload (`status.resourceRequests` while
pending, `status.admission...resourceUsage` once admitted); the computed totals must agree.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.core.quantity import format_quantity, parse_quantity
from kueue_graphql.core.requests import pod_requests, podset_requests, total_requests

FIXTURES = Path(__file__).parents[1] / "fixtures" / "service"


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
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
    workload = load("workload-too-big-3x1cpu.json")
    (podset,) = podset_requests(workload)
    assert podset.count == 3
    assert printed(podset.per_pod) == {"cpu": "1", "memory": "256Mi"}
    assert printed(total_requests([podset])) == {"cpu": "3", "memory": "768Mi"}


@pytest.mark.parametrize(
    "fixture",
    [
        "workload-too-big-3x1cpu.json",
        "workload-borrows-one-cpu.json",
        "workload-gpu-training.json",
    ],
)
def test_totals_agree_with_kueue(fixture: str) -> None:
    workload = load(fixture)
    assert printed(total_requests(podset_requests(workload))) == kueue_totals(workload)


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
