"""One amount type in the schema (issue 20, item 4): every amount is a `Quantity`; the flat text
and number fields it replaced answer the same for one release, marked deprecated.

Checked on the ClusterQueues, LocalQueues and Nodes captured from the real control plane."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from graphql import GraphQLObjectType, get_named_type

from kueue_graphql.graph.clusterqueue import resource_groups
from kueue_graphql.graph.common import flavor_usages
from kueue_graphql.graph.quantity import Quantity, resource_list
from kueue_graphql.graph.schema import build_schema

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured"


def _captured() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(CAPTURED.glob("*.json")) if p.stem[0] != "V"]


def _queues() -> list[dict[str, Any]]:
    queues: dict[str, dict[str, Any]] = {}
    for data in _captured():
        for item in [*(data.get("clusterQueues") or []), data.get("localQueue")]:
            if isinstance(item, dict):
                queues[f"{item['kind']}/{item['metadata']['name']}"] = item
    return list(queues.values())


def test_no_amount_outside_quantity_is_current() -> None:
    # The schema's amount shapes were four (ResourceQuantity, ResourceAmount, DiagnosisAmount,
    # DiagnosisNumber) plus text/number pairs; now every Decimal and every Kubernetes quantity
    # text lives in Quantity, and what remains elsewhere is deprecated.
    schema = build_schema()._schema
    current = []
    for type_name, kind in schema.type_map.items():
        if (
            not isinstance(kind, GraphQLObjectType)
            or type_name in ("Quantity",)
            or (type_name.startswith("__"))
        ):
            continue
        for field_name, spec in kind.fields.items():
            if spec.deprecation_reason:
                continue
            named = get_named_type(spec.type).name
            if named == "Decimal" or field_name == "quantity" or field_name.endswith("Amount"):
                current.append(f"{type_name}.{field_name}")
    assert current == []


def test_quantity_types_replace_the_old_amount_types() -> None:
    schema = build_schema()._schema
    assert schema.get_type("Quantity") is not None
    for gone in ("ResourceAmount", "DiagnosisAmount"):
        assert schema.get_type(gone) is None, gone


@pytest.mark.parametrize("queue", _queues(), ids=lambda q: f"{q['kind']}/{q['metadata']['name']}")
def test_deprecated_quota_and_usage_fields_answer_as_their_quantity(queue: dict[str, Any]) -> None:
    spec, status = queue.get("spec") or {}, queue.get("status") or {}
    for group in resource_groups(spec.get("resourceGroups")):
        for flavor in group.flavors:
            for quota in flavor.resources:
                pairs = [
                    (
                        quota.nominal_quota_value,
                        quota.nominal_quota(),
                        quota.nominal_quota_amount(),
                    ),
                    (
                        quota.borrowing_limit_value,
                        quota.borrowing_limit(),
                        quota.borrowing_limit_amount(),
                    ),
                    (
                        quota.lending_limit_value,
                        quota.lending_limit(),
                        quota.lending_limit_amount(),
                    ),
                ]
                _assert_same(pairs)
    for key in ("flavorsReservation", "flavorsUsage"):
        for usage in flavor_usages(status.get(key)):
            for resource in usage.resources:
                _assert_same(
                    [
                        (resource.total_value, resource.total(), resource.total_amount()),
                        (resource.borrowed_value, resource.borrowed(), resource.borrowed_amount()),
                    ]
                )


def _assert_same(pairs: list[tuple[Quantity | None, str | None, Decimal | None]]) -> None:
    for value, text, amount in pairs:
        if value is None:
            assert (text, amount) == (None, None)
        else:
            assert (value.quantity, value.amount) == (text, amount)


def test_captured_quotas_keep_kubernetes_text_and_exact_amount() -> None:
    seen = 0
    for queue in _queues():
        for group in resource_groups((queue.get("spec") or {}).get("resourceGroups")):
            for flavor in group.flavors:
                for quota in flavor.resources:
                    raw = _raw_quota(queue, flavor.name, quota.name)
                    assert quota.nominal_quota_value is not None
                    assert quota.nominal_quota_value.quantity == str(raw["nominalQuota"])
                    seen += 1
    assert seen > 0


def _raw_quota(queue: dict[str, Any], flavor: str, resource: str) -> dict[str, Any]:
    for group in queue["spec"]["resourceGroups"]:
        for f in group["flavors"]:
            if f["name"] == flavor:
                for r in f["resources"]:
                    if r["name"] == resource:
                        return dict(r)
    raise AssertionError(f"{flavor}/{resource} not in {queue['metadata']['name']}")


def test_node_allocatable_is_exact_and_keeps_the_old_flat_fields() -> None:
    nodes = [n for data in _captured() for n in data.get("nodes") or []]
    assert nodes
    for node in nodes:
        for entry in resource_list(node["status"]["allocatable"]):
            assert entry.value.quantity == node["status"]["allocatable"][entry.resource]
            assert (entry.quantity, entry.amount) == (entry.value.quantity, entry.value.amount)
            assert entry.value.amount is not None


@pytest.mark.parametrize(
    ("text", "amount"),
    [("1536Mi", Decimal(1610612736)), ("500m", Decimal("0.5")), ("1e3", Decimal(1000))],
)
def test_written_quantities_are_exact(text: str, amount: Decimal) -> None:
    assert Quantity.written(text) == Quantity(quantity=text, amount=amount)


def test_a_malformed_quantity_keeps_its_text_and_no_amount() -> None:
    assert Quantity.written("12 cores") == Quantity(quantity="12 cores", amount=None)


def test_computed_amounts_print_as_kubernetes_prints_the_resource() -> None:
    assert Quantity.computed(Decimal(805306368), "memory").quantity == "768Mi"
    assert Quantity.computed(Decimal("1.5"), "cpu").quantity == "1500m"
