"""Kueue's request rule (kueue.requests, the one copy) as the diagnosis' exact Decimals.

The diagnosis and whatIf do quota arithmetic across scales, so they take kueue.requests' answers
as plain exact Decimals (kueue.exact) and leave out resources requested at zero (they never
decide a verdict and would only add lines).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kueue_graphql.kueue import requests as decimal_requests
from kueue_graphql.kueue.exact import ZERO, exact_arithmetic
from kueue_graphql.kueue.model import KubeObject
from kueue_graphql.kueue.quantity import Quantity

__all__ = [
    "PodSetRequest",
    "per_pod_requests",
    "total_needs",
    "workload_needs",
    "workload_requests",
]


@dataclass(frozen=True)
class PodSetRequest:
    name: str
    count: int
    per_pod: Mapping[str, Decimal]
    total: Mapping[str, Decimal]
    flavors: Mapping[str, str]
    """resource -> flavor, when the Workload holds a quota reservation."""
    source: str
    """Where `total` comes from: status.admission, status.resourceRequests or spec."""


def _nonzero(resources: Mapping[str, Quantity]) -> dict[str, Decimal]:
    return {k: q.amount for k, q in resources.items() if q.amount != 0}


def per_pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """One pod's effective request, as Kueue counts it against quota."""
    return _nonzero(decimal_requests.pod_requests(pod_spec))


def workload_requests(workload: KubeObject) -> list[PodSetRequest]:
    """Per pod set, what Kueue counts against quota now (kueue.requests.kueue_podset_requests)."""
    return [
        PodSetRequest(
            name=ps.name,
            count=ps.count,
            per_pod=_nonzero(ps.per_pod),
            total=_nonzero(ps.total),
            flavors=ps.flavors,
            source=ps.source,
        )
        for ps in decimal_requests.kueue_podset_requests(workload)
    ]


@exact_arithmetic
def total_needs(requests: list[PodSetRequest]) -> dict[str, Decimal]:
    """What the Workload needs at once, per resource: every pod set's total, summed. The one
    aggregate that quota lines, reasons, summaries and next steps use."""
    out: dict[str, Decimal] = {}
    for ps in requests:
        for res, value in ps.total.items():
            out[res] = out.get(res, ZERO) + value
    return out


def workload_needs(workload: KubeObject | None) -> dict[str, Decimal] | None:
    return None if workload is None else total_needs(workload_requests(workload))
