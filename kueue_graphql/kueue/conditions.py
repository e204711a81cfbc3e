"""The one-word status kueuectl shows, and whether a Workload holds quota, from its
`status.conditions` (read through kueue/objects.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_graphql.kueue.objects import condition_true, status


def holds_quota_in(workload: Mapping[str, Any], cluster_queue: str) -> bool:
    """Kueue counts the Workload against `cluster_queue`'s usage: its quota is reserved there
    and it has not finished. A finished Workload keeps `status.admission` and QuotaReserved=True,
    but Kueue drops it from its cache (kueue v0.17 pkg/controller/core/workload_controller.go,
    Update: StatusFinished -> cache.DeleteWorkload), so its quota is free again."""
    admission = status(workload).get("admission") or {}
    return (
        admission.get("clusterQueue") == cluster_queue
        and condition_true(workload, "QuotaReserved")
        and not condition_true(workload, "Finished")
    )


WORKLOAD_STATUSES = ("pending", "quotareserved", "admitted", "finished")


def workload_status(workload: Mapping[str, Any]) -> str:
    """One of WORKLOAD_STATUSES, with kueuectl's precedence (finished wins, then admitted...)."""
    if condition_true(workload, "Finished"):
        return "finished"
    if condition_true(workload, "Admitted"):
        return "admitted"
    if condition_true(workload, "QuotaReserved"):
        return "quotareserved"
    return "pending"
