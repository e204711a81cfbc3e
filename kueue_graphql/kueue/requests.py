"""What a Workload asks for: per pod, per pod set (x count), and in total. The one copy of the rule.

Per pod (k8s.io/component-helpers v0.35 resource.PodRequests, which Kueue v0.17 calls, after
workload.UseLimitsAsMissingRequestsInPod): where a container sets only a limit, the limit is its
request; the app containers plus the restartable "sidecar" init containers add up; each classic
init container runs next to the sidecars started before it, and the pod needs the larger of the
two; pod-level requests (`spec.resources.requests`, for cpu, memory and hugepages-*) replace the
containers' figure for those resources; the pod overhead is added last. Pod-level limits are not
requests here: the API server turns them into pod-level requests on a Pod only, and Kueue does
not for a Workload's template.

Per pod set there are two answers, on purpose:

- `spec_podset_requests`: what the spec asks, per pod x `spec.podSets[].count`. This is what the
  graph's `Workload.podSets` and `Workload.totalRequests` report.
- `kueue_podset_requests`: what Kueue counts against quota now (workload.NewInfo):
  `status.admission` podSetAssignments' resourceUsage once quota is reserved, scaled down when
  pods became reclaimable; else `status.resourceRequests` (Kueue's own computation, with
  LimitRange defaults and RuntimeClass overhead); else the spec x (count - reclaimable pods).
  The diagnosis reasons with this one.

Amounts are exact (`Quantity`); unreadable quantities in an object are skipped, not fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Any

from kueue_graphql.kueue.objects import items, mapping
from kueue_graphql.kueue.quantity import EXACT, Quantity, parse_quantity

__all__ = [
    "PodSetRequests",
    "Resources",
    "add",
    "kueue_podset_requests",
    "pod_requests",
    "resource_list",
    "scale",
    "spec_podset_requests",
    "total_requests",
]

Resources = dict[str, Quantity]

SPEC = "spec"
ADMISSION = "status.admission"
RESOURCE_REQUESTS = "status.resourceRequests"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def resource_list(raw: object) -> Resources:
    """A ResourceList map parsed; entries that are not quantities are left out."""
    out: Resources = {}
    for key, value in mapping(raw).items():
        if not isinstance(key, str) or not isinstance(value, str | int | float):
            continue
        try:
            out[key] = parse_quantity(value)
        except ValueError:
            continue
    return out


def _container_requests(container: Mapping[str, Any]) -> Resources:
    resources = mapping(container, "resources")
    requests = resource_list(resources.get("limits"))
    requests.update(resource_list(resources.get("requests")))
    return requests


def add(total: Mapping[str, Quantity], more: Mapping[str, Quantity]) -> Resources:
    result = dict(total)
    for name, quantity in more.items():
        result[name] = result[name] + quantity if name in result else quantity
    return result


def _maximum(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> Resources:
    result = dict(a)
    for name, quantity in b.items():
        if name not in result or quantity.amount > result[name].amount:
            result[name] = quantity
    return result


def scale(resources: Mapping[str, Quantity], factor: int) -> Resources:
    return {name: quantity * factor for name, quantity in resources.items()}


def _pod_level(resource: str) -> bool:
    return resource in ("cpu", "memory") or resource.startswith("hugepages-")


def pod_requests(pod_spec: Mapping[str, Any]) -> Resources:
    """Effective per-pod requests of a PodSpec, as Kubernetes and Kueue count them."""
    requests: Resources = {}
    for container in items(pod_spec, "containers"):
        requests = add(requests, _container_requests(container))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for container in items(pod_spec, "initContainers"):
        own = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            # A sidecar keeps running next to the app containers, so it adds up with them.
            requests = add(requests, own)
            sidecars = add(sidecars, own)
            init_peak = _maximum(init_peak, sidecars)
        else:
            init_peak = _maximum(init_peak, add(own, sidecars))
    requests = _maximum(requests, init_peak)
    pod_level = resource_list(mapping(pod_spec, "resources").get("requests"))
    requests.update({k: v for k, v in pod_level.items() if _pod_level(k)})
    return add(requests, resource_list(pod_spec.get("overhead")))


@dataclass(frozen=True)
class PodSetRequests:
    name: str
    count: int
    """Pods counted: the spec's count, or (Kueue's view) what is admitted and not reclaimable."""
    per_pod: Resources
    total: Resources
    flavors: Mapping[str, str] = field(default_factory=dict)
    """resource -> flavor, when the Workload holds a quota reservation (Kueue's view only)."""
    source: str = SPEC
    """Where `total` comes from: "status.admission", "status.resourceRequests" or "spec"."""


def _name(podset: Mapping[str, Any]) -> str:
    name = podset.get("name")
    return name if isinstance(name, str) and name else "main"


def _spec_count(podset: Mapping[str, Any]) -> int:
    count = _int(podset.get("count"))
    return 1 if count is None else count


def _template_spec(podset: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(podset, "template", "spec")


def _podsets(workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return items(workload, "spec", "podSets")


def spec_podset_requests(workload: Mapping[str, Any]) -> list[PodSetRequests]:
    """What each pod set's spec asks: per pod, and per pod x spec count."""
    result = []
    for podset in _podsets(workload):
        count = _spec_count(podset)
        per_pod = pod_requests(_template_spec(podset))
        result.append(
            PodSetRequests(
                name=_name(podset), count=count, per_pod=per_pod, total=scale(per_pod, count)
            )
        )
    return result


def total_requests(podsets: Iterable[PodSetRequests]) -> Resources:
    total: Resources = {}
    for podset in podsets:
        total = add(total, podset.total)
    return total


def _scaled_down(total: Mapping[str, Quantity], admitted: int, now: int) -> Resources:
    """Kueue's PodSetResources scaling: integer division in its units (milli-CPU, else 1)."""
    out: Resources = {}
    with localcontext(EXACT):  # as kueue.quantity: no rounding for any quantity
        for name, quantity in total.items():
            unit = Decimal("0.001") if name == "cpu" else Decimal(1)
            units = int((quantity.amount / unit).to_integral_value(rounding=ROUND_CEILING))
            out[name] = Quantity(Decimal(units // admitted * now) * unit, quantity.format)
    return out


def kueue_podset_requests(workload: Mapping[str, Any]) -> list[PodSetRequests]:
    """What Kueue counts against quota for each pod set, preferring what it recorded.

    status.admission (what is reserved) > status.resourceRequests (what the scheduler last
    computed) > the spec; counts exclude reclaimable pods.
    """
    status = mapping(workload, "status")
    reclaimable: dict[str, int] = {}
    for entry in items(status, "reclaimablePods"):
        reclaimed = _int(entry.get("count"))
        if reclaimed is not None:
            reclaimable[str(entry.get("name"))] = reclaimed
    assignments = {str(a.get("name")): a for a in items(status, "admission", "podSetAssignments")}
    recorded = {
        str(r.get("name")): resource_list(r.get("resources"))
        for r in items(status, "resourceRequests")
    }
    result = []
    for podset in _podsets(workload):
        name = _name(podset)
        count = max(0, _spec_count(podset) - reclaimable.get(name, 0))
        per_pod = pod_requests(_template_spec(podset))
        assignment = assignments.get(name)
        flavors: dict[str, str] = {}
        if assignment is not None:
            flavors = {
                str(k): str(v) for k, v in mapping(assignment, "flavors").items() if v is not None
            }
        usage = resource_list(assignment.get("resourceUsage")) if assignment is not None else {}
        if assignment is not None and usage:
            admitted = _int(assignment.get("count"))
            admitted = _spec_count(podset) if admitted is None else admitted
            if count < admitted:
                # Reclaimed pods release their share of the reservation.
                usage = _scaled_down(usage, admitted, count)
            else:
                # A partially admitted pod set keeps its admitted count.
                count = admitted
            total, source = usage, ADMISSION
        elif recorded.get(name):
            total, source = recorded[name], RESOURCE_REQUESTS
        else:
            total, source = scale(per_pod, count), SPEC
        result.append(PodSetRequests(name, count, per_pod, total, flavors, source))
    return result
