"""Scheduling matchers, as kube-scheduler and Kueue's flavor assigner apply them: a toleration
against a taint (k8s.io/api core/v1 `Toleration.ToleratesTaint`) and a node selector requirement
against a node's labels (k8s.io/component-helpers nodeaffinity)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["expression_matches", "tolerates"]


def tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    if tol.get("operator") == "Exists":
        return not tol.get("key") or tol.get("key") == taint.get("key")
    return tol.get("key") == taint.get("key") and (tol.get("value") or "") == (
        taint.get("value") or ""
    )


def expression_matches(expr: Mapping[str, Any], node_labels: Mapping[str, Any]) -> bool:
    key, op = str(expr.get("key") or ""), expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    present = key in node_labels
    value = str(node_labels.get(key, ""))
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            lhs, rhs = int(value), int(values[0])
        except ValueError:
            return False
        return lhs > rhs if op == "Gt" else lhs < rhs
    return False
