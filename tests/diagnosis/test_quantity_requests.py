"""Quantities and Kueue's per-pod request rule (hand-made pod specs: pure arithmetic)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kueue_graphql.kueue.exact import QuantityError, format_quantity, parse_quantity
from kueue_graphql.kueue.podsets import per_pod_requests, workload_requests


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("2", Decimal(2)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("256Mi", Decimal(256 * 2**20)),
        ("1e3", Decimal(1000)),
        ("100u", Decimal("0.0001")),
        ("2k", Decimal(2000)),
    ],
)
def test_parse(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_parse_rejects_garbage() -> None:
    with pytest.raises(QuantityError):
        parse_quantity("3 cpus")


@pytest.mark.parametrize(
    ("value", "resource", "text"),
    [
        (Decimal(3), "cpu", "3"),
        (Decimal("1.5"), "cpu", "1500m"),
        (Decimal(2048), "cpu", "2048"),  # never "2Ki" CPUs
        (Decimal(768 * 2**20), "memory", "768Mi"),
        (Decimal(2 * 2**30), "memory", "2Gi"),
        (Decimal(2), "example.com/gpu", "2"),
        (Decimal(0), "memory", "0"),
    ],
)
def test_format_per_resource(value: Decimal, resource: str, text: str) -> None:
    assert format_quantity(value, resource) == text


def _c(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict:
    res: dict = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"name": "c", "resources": res}


def test_per_pod_rule() -> None:
    spec = {
        "containers": [_c({"cpu": "1"}), _c(limits={"cpu": "500m", "memory": "1Gi"})],
        "initContainers": [
            _c({"cpu": "2"}),  # classic init: 2 CPU alone, below sidecar+apps? no: max rule
            {**_c({"cpu": "250m"}), "restartPolicy": "Always"},  # sidecar adds to the app
        ],
        "overhead": {"cpu": "100m"},
    }
    got = per_pod_requests(spec)
    # apps 1.5 + sidecar 0.25 = 1.75 < classic init 2 (+0 sidecars before it) -> 2, + overhead
    assert got["cpu"] == Decimal("2.1")
    assert got["memory"] == 2**30  # the limit stands in for the missing request


def test_sidecar_before_init_counts_for_the_init() -> None:
    spec = {
        "containers": [_c({"cpu": "1"})],
        "initContainers": [
            {**_c({"cpu": "1"}), "restartPolicy": "Always"},
            _c({"cpu": "1500m"}),
        ],
    }
    # apps 1 + sidecar 1 = 2; init runs next to the sidecar: 1.5 + 1 = 2.5
    assert per_pod_requests(spec)["cpu"] == Decimal("2.5")


def test_workload_requests_multiplies_count_and_prefers_admission() -> None:
    template = {"spec": {"containers": [_c({"cpu": "1", "memory": "256Mi"})]}}
    wl = {"spec": {"podSets": [{"name": "main", "count": 3, "template": template}]}}
    [ps] = workload_requests(wl)
    assert (ps.count, ps.total["cpu"], ps.source) == (3, 3, "spec")
    assert ps.total["memory"] == 768 * 2**20
    wl["status"] = {
        "reclaimablePods": [{"name": "main", "count": 1}],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "3"}}
            ],
        },
    }
    [ps] = workload_requests(wl)
    # 3 pods admitted for 3 CPU, one reclaimed: the reservation shrinks to 2 CPU
    assert (ps.count, ps.total["cpu"], ps.flavors, ps.source) == (
        2,
        2,
        {"cpu": "f"},
        "status.admission",
    )
