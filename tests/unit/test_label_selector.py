"""A ClusterQueue's namespaceSelector (metav1.LabelSelector) against a Namespace's labels."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_graphql.kueue.label_selector import label_selector_matches

ENG = {"dep": "eng", "tier": "gold"}


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        (None, ENG, False),  # null: a nothing selector
        (None, {}, False),
        ({}, {}, True),  # empty: every namespace
        ({}, ENG, True),
        ({"matchLabels": {"dep": "eng"}}, ENG, True),
        ({"matchLabels": {"dep": "eng"}}, {"dep": "ops"}, False),
        ({"matchLabels": {"dep": "eng"}}, {}, False),
        ({"matchLabels": {"dep": ""}}, {}, False),  # an empty value still needs the key
        ({"matchLabels": {"dep": ""}}, {"dep": ""}, True),
        ({"matchExpressions": [{"key": "dep", "operator": "In", "values": ["eng"]}]}, ENG, True),
        ({"matchExpressions": [{"key": "dep", "operator": "In", "values": ["eng"]}]}, {}, False),
        (
            {"matchExpressions": [{"key": "dep", "operator": "NotIn", "values": ["eng"]}]},
            ENG,
            False,
        ),
        ({"matchExpressions": [{"key": "dep", "operator": "NotIn", "values": ["ops"]}]}, ENG, True),
        ({"matchExpressions": [{"key": "dep", "operator": "NotIn", "values": ["eng"]}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, ENG, True),
        ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, ENG, False),
        ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, ENG, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, ENG, False),
        # every requirement must hold, with matchLabels too
        (
            {
                "matchLabels": {"dep": "eng"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["gold", "silver"]},
                    {"key": "zone", "operator": "DoesNotExist"},
                ],
            },
            ENG,
            True,
        ),
        (
            {
                "matchLabels": {"dep": "eng"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["silver"]}],
            },
            ENG,
            False,
        ),
        # Gt/Lt are NodeSelector operators: a LabelSelector does not know them
        (
            {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["1"]}]},
            {"n": "5"},
            False,
        ),
    ],
)
def test_label_selector(
    selector: dict[str, Any] | None, labels: dict[str, str], selected: bool
) -> None:
    assert label_selector_matches(selector, labels) is selected
