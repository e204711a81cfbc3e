"""What a Workload asks for, computed the way Kueue computes it.

Per pod (k8s.io/component-helpers resource.PodRequests, which Kueue v0.17 calls):
sum of the app containers, plus restartable init containers (sidecars); the maximum of that
and each classic init container (plus the sidecars started before it); pod-level requests
where set; plus the pod overhead. Kueue first uses limits as requests where a request is
missing (workload.UseLimitsAsMissingRequestsInPod). Per pod set: per pod x count, where
count excludes reclaimable pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kueue_graphql.diagnosis.model import KubeObject
from kueue_graphql.diagnosis.objects import dig, items, mapping, text
from kueue_graphql.diagnosis.quantity import QuantityError, parse_quantity

__all__ = ["PodSetRequest", "per_pod_requests", "workload_requests"]

Resources = dict[str, Fraction]

# Pod-level resources (spec.resources) only cover these, as in kube's helpers.
_POD_LEVEL_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True)
class PodSetRequest:
    name: str
    count: int
    per_pod: Mapping[str, Fraction]
    total: Mapping[str, Fraction]
    flavors: Mapping[str, str]
    """resource -> flavor, when the Workload holds a quota reservation."""
    source: str
    """Where `total` comes from: status.admission, status.resourceRequests or spec."""


def _resource_list(raw: object) -> Resources:
    out: Resources = {}
    if not isinstance(raw, Mapping):
        return out
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str | int | float):
            continue
        try:
            out[key] = parse_quantity(value)
        except QuantityError:
            continue
    return out


def _container_requests(container: Mapping[str, Any]) -> Resources:
    requests = _resource_list(dig(container, "resources", "requests"))
    for key, value in _resource_list(dig(container, "resources", "limits")).items():
        requests.setdefault(key, value)
    return requests


def _add(into: Resources, other: Mapping[str, Fraction]) -> None:
    for key, value in other.items():
        into[key] = into.get(key, Fraction(0)) + value


def _max(into: Resources, other: Mapping[str, Fraction]) -> None:
    for key, value in other.items():
        if value > into.get(key, Fraction(0)):
            into[key] = value


def per_pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """One pod's effective request, as Kueue counts it against quota."""
    reqs: Resources = {}
    for container in items(pod_spec, "containers"):
        _add(reqs, _container_requests(container))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in items(pod_spec, "initContainers"):
        container_reqs = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(reqs, container_reqs)
            _add(sidecars, container_reqs)
            current = dict(sidecars)
        else:
            current = dict(container_reqs)
            _add(current, sidecars)
        _max(init_peak, current)
    _max(reqs, init_peak)
    pod_level = _resource_list(dig(pod_spec, "resources", "requests"))
    for key, value in _resource_list(dig(pod_spec, "resources", "limits")).items():
        pod_level.setdefault(key, value)
    for key in _POD_LEVEL_RESOURCES:
        if key in pod_level:
            reqs[key] = pod_level[key]
    _add(reqs, _resource_list(pod_spec.get("overhead")))
    return {k: v for k, v in reqs.items() if v != 0}


def _count(pod_set: Mapping[str, Any], reclaimable: Mapping[str, int]) -> int:
    raw = pod_set.get("count")
    count = raw if isinstance(raw, int) and not isinstance(raw, bool) else 1
    return max(0, count - reclaimable.get(str(pod_set.get("name") or "main"), 0))


def workload_requests(workload: KubeObject) -> list[PodSetRequest]:
    """Aggregate requests per pod set, preferring what Kueue itself recorded.

    status.admission (what is reserved) > status.resourceRequests (what the scheduler last
    computed, with LimitRange defaults and RuntimeClass overhead applied) > the spec.
    """
    reclaimable = {
        str(r.get("name")): r["count"]
        for r in items(workload, "status", "reclaimablePods")
        if isinstance(r.get("count"), int) and not isinstance(r.get("count"), bool)
    }
    admitted = {
        str(a.get("name")): a for a in items(workload, "status", "admission", "podSetAssignments")
    }
    recorded = {
        str(r.get("name")): _resource_list(r.get("resources"))
        for r in items(workload, "status", "resourceRequests")
    }
    out: list[PodSetRequest] = []
    for pod_set in items(workload, "spec", "podSets"):
        ps_name = text(pod_set, "name") or "main"
        count = _count(pod_set, reclaimable)
        per_pod = per_pod_requests(mapping(pod_set, "template", "spec"))
        flavors: dict[str, str] = {}
        assignment = admitted.get(ps_name)
        if assignment is not None:
            flavors = {
                str(k): str(v) for k, v in mapping(assignment, "flavors").items() if v is not None
            }
        if assignment is not None and _resource_list(assignment.get("resourceUsage")):
            total = _resource_list(assignment.get("resourceUsage"))
            admitted_count = assignment.get("count")
            if not isinstance(admitted_count, int) or isinstance(admitted_count, bool):
                admitted_count = _count(pod_set, {})
            if 0 < count < admitted_count:
                # Reclaimed pods release their share of the reservation (Kueue scales it down).
                total = {k: v / admitted_count * count for k, v in total.items()}
            source = "status.admission"
        elif recorded.get(ps_name):
            total = recorded[ps_name]
            source = "status.resourceRequests"
        else:
            total = {k: v * count for k, v in per_pod.items()}
            source = "spec"
        out.append(
            PodSetRequest(
                name=ps_name,
                count=count,
                per_pod=per_pod,
                total={k: v for k, v in total.items() if v != 0},
                flavors=flavors,
                source=source,
            )
        )
    return out
