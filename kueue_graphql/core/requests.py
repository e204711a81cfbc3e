"""What a Workload asks for: per pod, per pod set (x count), and in total.

Kueue admits a Workload whole, so the quota it needs is every pod set's per-pod request times
its `count`, summed. The per-pod request follows Kubernetes' effective-request rule (Kueue uses
the same): the larger of the sum of the app containers (plus restartable "sidecar" init
containers) and the largest ordinary init container, plus pod overhead. Where a container sets
only a limit, the limit is its request (the API server defaults it so; Kueue does the same for
Workloads it builds).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kueue_graphql.core.quantity import Quantity, parse_quantity

Resources = dict[str, Quantity]


def _container_requests(container: Mapping[str, Any]) -> Resources:
    resources = container.get("resources") or {}
    requests: Resources = {
        name: parse_quantity(value) for name, value in (resources.get("limits") or {}).items()
    }
    requests.update(
        {name: parse_quantity(value) for name, value in (resources.get("requests") or {}).items()}
    )
    return requests


def add(total: Resources, more: Mapping[str, Quantity]) -> Resources:
    result = dict(total)
    for name, quantity in more.items():
        result[name] = result[name] + quantity if name in result else quantity
    return result


def _maximum(a: Resources, b: Mapping[str, Quantity]) -> Resources:
    result = dict(a)
    for name, quantity in b.items():
        if name not in result or quantity.amount > result[name].amount:
            result[name] = quantity
    return result


def scale(resources: Mapping[str, Quantity], factor: int) -> Resources:
    return {name: quantity * factor for name, quantity in resources.items()}


def pod_requests(pod_spec: Mapping[str, Any]) -> Resources:
    """Effective per-pod requests of a PodSpec."""
    app: Resources = {}
    for container in pod_spec.get("containers") or []:
        app = add(app, _container_requests(container))
    init_peak: Resources = {}
    sidecars: Resources = {}
    for container in pod_spec.get("initContainers") or []:
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            # A sidecar keeps running next to the app containers, so it adds up with them.
            sidecars = add(sidecars, requests)
        else:
            init_peak = _maximum(init_peak, add(requests, sidecars))
    effective = _maximum(add(app, sidecars), init_peak)
    overhead = {name: parse_quantity(v) for name, v in (pod_spec.get("overhead") or {}).items()}
    return add(effective, overhead)


@dataclass(frozen=True)
class PodSetRequests:
    name: str
    count: int
    per_pod: Resources
    total: Resources


def podset_requests(workload: Mapping[str, Any]) -> list[PodSetRequests]:
    result = []
    for podset in (workload.get("spec") or {}).get("podSets") or []:
        count = int(podset.get("count", 1))
        per_pod = pod_requests(((podset.get("template") or {}).get("spec")) or {})
        result.append(
            PodSetRequests(
                name=str(podset.get("name", "main")),
                count=count,
                per_pod=per_pod,
                total=scale(per_pod, count),
            )
        )
    return result


def total_requests(podsets: Iterable[PodSetRequests]) -> Resources:
    total: Resources = {}
    for podset in podsets:
        total = add(total, podset.total)
    return total
