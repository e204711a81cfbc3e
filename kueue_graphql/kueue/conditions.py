"""Reading `status.conditions` and deriving the one-word status kueuectl shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def conditions_of(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


def find_condition(obj: Mapping[str, Any], condition_type: str) -> Mapping[str, Any] | None:
    for condition in conditions_of(obj):
        if condition.get("type") == condition_type:
            return condition
    return None


def is_true(obj: Mapping[str, Any], condition_type: str) -> bool:
    condition = find_condition(obj, condition_type)
    return condition is not None and condition.get("status") == "True"


def holds_quota_in(workload: Mapping[str, Any], cluster_queue: str) -> bool:
    """Kueue counts the Workload against `cluster_queue`'s usage: its quota is reserved there
    and it has not finished. A finished Workload keeps `status.admission` and QuotaReserved=True,
    but Kueue drops it from its cache (kueue v0.17 pkg/controller/core/workload_controller.go,
    Update: StatusFinished -> cache.DeleteWorkload), so its quota is free again."""
    admission = (workload.get("status") or {}).get("admission") or {}
    return (
        admission.get("clusterQueue") == cluster_queue
        and is_true(workload, "QuotaReserved")
        and not is_true(workload, "Finished")
    )


WORKLOAD_STATUSES = ("pending", "quotareserved", "admitted", "finished")


def workload_status(workload: Mapping[str, Any]) -> str:
    """One of WORKLOAD_STATUSES, with kueuectl's precedence (finished wins, then admitted...)."""
    if is_true(workload, "Finished"):
        return "finished"
    if is_true(workload, "Admitted"):
        return "admitted"
    if is_true(workload, "QuotaReserved"):
        return "quotareserved"
    return "pending"
