"""A metav1.LabelSelector against an object's labels, as k8s.io/apimachinery evaluates it.

Kueue v0.17.0 turns a ClusterQueue's `spec.namespaceSelector` into a selector with
`metav1.LabelSelectorAsSelector` (pkg/cache/scheduler/clusterqueue.go) and matches the
Workload's Namespace labels with it (pkg/scheduler/scheduler.go `nominate`). That function's
rules: a null selector selects nothing, an empty one (`{}`) everything; `matchLabels` and every
`matchExpressions` requirement must all hold. A LabelSelector knows only In, NotIn, Exists and
DoesNotExist (the API server's validation refuses any other operator); an operator it does not
know selects nothing here, as LabelSelectorAsSelector fails on it. Pure, bounded by the size of
the selector.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["label_selector_matches"]


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether `selector` (a LabelSelector as JSON; None for a null one) selects `labels`."""
    if selector is None:
        return False
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return False
    for key, value in match_labels.items():
        if str(key) not in labels or labels[str(key)] != str(value):
            return False
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return False
    return all(
        isinstance(expr, Mapping) and _requirement_holds(expr, labels) for expr in expressions
    )


def _requirement_holds(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = str(expr.get("key") or "")
    operator = expr.get("operator")
    values = {str(v) for v in expr.get("values") or []}
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    return False
