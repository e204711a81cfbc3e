"""Topology-aware scheduling (TAS) as Kueue v0.17.0 reads and counts it: a pod set's topology
request, the topology assignment Kueue writes, and the room each topology domain has.

Sources (sigs.k8s.io/kueue@v0.17.0):
- apis/kueue/v1beta2/workload_types.go: PodSetTopologyRequest (required / preferred /
  unconstrained / podSetSliceRequiredTopology + podSetSliceSize) and TopologyAssignment
  (levels + slices of domainCount, valuesPerLevel universal | individual{prefix, roots,
  suffix}, podCounts universal | individual).
- pkg/util/tas/tas_assignment.go: valueAtIndex, countAtIndex, InternalSeqFrom: how a slice
  decodes into domains (value = prefix + root + suffix; one count per domain).
- pkg/cache/scheduler/tas_nodes_cache.go (a Node counts when schedulable and Ready),
  pkg/util/tas/node.go NodeMatchesFlavor (the flavor's nodeLabels and every level label),
  pkg/cache/scheduler/tas_flavor.go snapshot (capacity = allocatable, minus the non-TAS usage
  per Node, minus the TAS usage of admitted Workloads per domain),
  pkg/cache/scheduler/tas_non_tas_pod_cache.go and pkg/controller/tas/non_tas_usage_controller.go
  (non-TAS usage: every Pod bound to a Node, not terminated, without a TAS annotation; its
  requests plus one "pods"), pkg/cache/scheduler/tas_flavor_snapshot.go fillInCounts (untolerated
  NoSchedule/NoExecute taints and a non-matching node selector exclude a Node; a leaf holds
  `requests.CountIn(remaining)` Pods, the per-pod requests plus one "pods"), fillInCountsHelper
  (a domain holds the sum of its children) and notFitMessage.
- pkg/resources/requests.go: amounts in Kueue's integer units (cpu in milli, others whole,
  both rounded up), CountIn = the smallest floor(capacity / request) over the requests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kueue_graphql.kueue.objects import (
    condition_true,
    dig,
    items,
    labels,
    mapping,
    name,
    spec,
    status,
)
from kueue_graphql.kueue.requests import kueue_podset_requests, pod_requests, resource_list

__all__ = [
    "HOSTNAME_LABEL",
    "PREFERRED_ANNOTATION",
    "REQUIRED_ANNOTATION",
    "SCHEDULING_GATE",
    "DomainAssignment",
    "DomainRoom",
    "TasLeaf",
    "TopologyAssignment",
    "TopologyRequest",
    "decode_assignment",
    "domain_rooms",
    "is_tas_pod",
    "kueue_units",
    "podset_topology_request",
    "tas_leaves",
    "tolerated",
]

REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE_ANNOTATION = "kueue.x-k8s.io/podset-slice-size"
SCHEDULING_GATE = "kueue.x-k8s.io/topology"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_DOMAINS = 100_000
"""At most this many domains are decoded from one assignment (the CRD allows 1,000 slices of
up to 100,000 roots): bounded work on whatever a Workload's status holds."""


@dataclass(frozen=True)
class TopologyRequest:
    """What a pod set asks of TAS. `mode`: "required", "preferred" or "unconstrained"; None
    when only a slice level is asked."""

    mode: str | None
    level: str | None
    slice_level: str | None = None
    slice_size: int | None = None


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.isdigit() and len(value) < 10:
        return int(value) or None
    return None


def podset_topology_request(podset: Mapping[str, Any]) -> TopologyRequest | None:
    """A pod set's TAS request: `spec.podSets[].topologyRequest` as Kueue wrote it from the
    template's annotations, else those annotations themselves (a Workload made by hand)."""
    raw = podset.get("topologyRequest")
    if isinstance(raw, Mapping) and raw:
        mode, level = None, None
        if raw.get("required"):
            mode, level = "required", str(raw["required"])
        elif raw.get("preferred"):
            mode, level = "preferred", str(raw["preferred"])
        elif raw.get("unconstrained"):
            mode = "unconstrained"
        slice_level = raw.get("podSetSliceRequiredTopology")
        size = _positive_int(raw.get("podSetSliceSize"))
        if mode is None and not slice_level:
            return None
        return TopologyRequest(mode, level, str(slice_level) if slice_level else None, size)
    notes = mapping(podset, "template", "metadata", "annotations")
    slice_level = notes.get(SLICE_REQUIRED_ANNOTATION)
    size = _positive_int(notes.get(SLICE_SIZE_ANNOTATION))
    slice_text = str(slice_level) if slice_level else None
    if notes.get(REQUIRED_ANNOTATION):
        return TopologyRequest("required", str(notes[REQUIRED_ANNOTATION]), slice_text, size)
    if notes.get(PREFERRED_ANNOTATION):
        return TopologyRequest("preferred", str(notes[PREFERRED_ANNOTATION]), slice_text, size)
    if UNCONSTRAINED_ANNOTATION in notes:
        return TopologyRequest("unconstrained", None, slice_text, size)
    if slice_text:
        return TopologyRequest(None, None, slice_text, size)
    return None


def is_tas_pod(pod: Mapping[str, Any]) -> bool:
    """pkg/util/tas/tas.go IsTAS: a Pod with a required, preferred, slice or unconstrained
    topology annotation is TAS-managed (its usage counts through its Workload)."""
    notes = mapping(pod, "metadata", "annotations")
    return any(
        key in notes
        for key in (
            REQUIRED_ANNOTATION,
            PREFERRED_ANNOTATION,
            SLICE_REQUIRED_ANNOTATION,
            UNCONSTRAINED_ANNOTATION,
        )
    )


@dataclass(frozen=True)
class DomainAssignment:
    values: tuple[str, ...]
    """One node-label value per level of the assignment."""
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    levels: tuple[str, ...]
    domains: tuple[DomainAssignment, ...]


def _value_at(values: Mapping[str, Any], index: int) -> str | None:
    universal = values.get("universal")
    if isinstance(universal, str):
        return universal
    individual = values.get("individual")
    if not isinstance(individual, Mapping):
        return None
    roots = individual.get("roots")
    if not isinstance(roots, list) or index >= len(roots):
        return None
    prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
    return f"{prefix}{roots[index]}{suffix}"


def _count_at(counts: Mapping[str, Any], index: int) -> int | None:
    universal = counts.get("universal")
    if isinstance(universal, int) and not isinstance(universal, bool):
        return universal
    individual = counts.get("individual")
    if isinstance(individual, list) and index < len(individual):
        found = individual[index]
        return found if isinstance(found, int) and not isinstance(found, bool) else None
    return None


def decode_assignment(raw: object) -> TopologyAssignment | None:
    """`podSetAssignments[].topologyAssignment` decoded as Kueue's InternalSeqFrom does; None
    when absent or not of that shape. A domain whose value or count is missing is skipped."""
    if not isinstance(raw, Mapping):
        return None
    levels = raw.get("levels")
    if not isinstance(levels, list) or not levels:
        return None
    domains: list[DomainAssignment] = []
    for piece in raw.get("slices") or []:
        if not isinstance(piece, Mapping):
            continue
        per_level = piece.get("valuesPerLevel")
        counts = piece.get("podCounts")
        domain_count = _positive_int(piece.get("domainCount")) or 0
        if not isinstance(per_level, list) or len(per_level) != len(levels):
            continue
        if not isinstance(counts, Mapping):
            continue
        for index in range(min(domain_count, MAX_DOMAINS - len(domains))):
            values = [_value_at(v, index) if isinstance(v, Mapping) else None for v in per_level]
            count = _count_at(counts, index)
            if count is None or any(v is None for v in values):
                continue
            domains.append(DomainAssignment(tuple(str(v) for v in values), count))
    return TopologyAssignment(tuple(str(level) for level in levels), tuple(domains))


def kueue_units(resource: str, amount: Decimal) -> int:
    """pkg/resources ResourceValue: cpu in milli-units, everything else whole, rounded up."""
    return math.ceil(amount * 1000) if resource == "cpu" else math.ceil(amount)


Units = dict[str, int]


def _units(resources: Mapping[str, Any]) -> Units:
    return {res: kueue_units(res, q.amount) for res, q in resources.items()}


def _add(into: Units, more: Mapping[str, int], factor: int = 1) -> None:
    for res, value in more.items():
        into[res] = into.get(res, 0) + value * factor


def count_in(requests: Mapping[str, int], capacity: Mapping[str, int]) -> int:
    """Requests.CountIn: how many times `requests` fit in `capacity`."""
    fits: int | None = None
    for res, wanted in requests.items():
        if wanted == 0:
            continue
        have = capacity.get(res)
        if have is None:
            return 0
        count = max(have, 0) // wanted
        fits = count if fits is None else min(fits, count)
    return fits if fits is not None else 0


def _schedulable_and_ready(node: Mapping[str, Any]) -> bool:
    if spec(node).get("unschedulable"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in items(node, "status", "conditions")
    )


def _matches(node_labels: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(node_labels.get(k) == v for k, v in wanted.items())


def tolerated(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """v1 Toleration.ToleratesTaint."""
    for t in tolerations:
        effect = t.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = t.get("key") or ""
        if key and key != taint.get("key"):
            continue
        operator = t.get("operator") or "Equal"
        if operator == "Exists":
            return True
        if operator == "Equal" and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _excluded_by_taint(node: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        t.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(t, tolerations)
        for t in items(node, "spec", "taints")
    )


@dataclass(frozen=True)
class DomainRoom:
    """One domain at the asked level: its node-label values from the top level down to that
    level, how many Pods of the pod set fit there now, and over how many Nodes."""

    values: tuple[str, ...]
    pods: int
    nodes: int

    @property
    def name(self) -> str:
        return self.values[-1]


def _non_tas_usage(pods: Iterable[Mapping[str, Any]]) -> dict[str, Units]:
    usage: dict[str, Units] = {}
    for pod in pods:
        node_name = spec(pod).get("nodeName")
        if not node_name or is_tas_pod(pod):
            continue
        if status(pod).get("phase") in ("Succeeded", "Failed"):
            continue
        per_node = usage.setdefault(str(node_name), {})
        _add(per_node, _units(pod_requests(spec(pod))))
        _add(per_node, {"pods": 1})
    return usage


def _tas_usage(
    workloads: Iterable[Mapping[str, Any]], flavors: frozenset[str]
) -> list[tuple[TopologyAssignment, Units]]:
    """(assignment, per-pod units) of every pod set placed by TAS in one of `flavors`, of
    Workloads holding quota and not finished (Kueue's cache keeps exactly those)."""
    found: list[tuple[TopologyAssignment, Units]] = []
    for wl in workloads:
        if not condition_true(wl, "QuotaReserved") or condition_true(wl, "Finished"):
            continue
        per_pod = {ps.name: ps.per_pod for ps in kueue_podset_requests(wl)}
        for psa in items(wl, "status", "admission", "podSetAssignments"):
            if not set(mapping(psa, "flavors").values()) & flavors:
                continue
            assignment = decode_assignment(psa.get("topologyAssignment"))
            if assignment is None:
                continue
            units = _units(per_pod.get(str(psa.get("name", "")), {}))
            found.append((assignment, units))
    return found


@dataclass
class TasLeaf:
    """A leaf of a flavor's TAS snapshot (tas_flavor.go snapshot): one Node when the Topology's
    lowest level is the hostname, else every Ready Node of one lowest-level domain."""

    values: tuple[str, ...]
    """One node-label value per level of the Topology."""
    nodes: list[Mapping[str, Any]]
    free: Units
    """Allocatable minus the non-TAS usage (`freeCapacity`)."""
    tas_used: Units
    """What admitted TAS Workloads hold there (`tasUsage`), one "pods" per Pod."""


def tas_leaves(
    *,
    levels: Sequence[str],
    flavor: Mapping[str, Any],
    flavor_names: frozenset[str],
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    workloads: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, ...], TasLeaf]:
    """The leaves of the TAS snapshot of `flavor` over a Topology with `levels`, as Kueue's
    cache counts them (see the module's sources). `flavor_names`: every ResourceFlavor of this
    Topology (their admitted usage counts)."""
    node_labels = mapping(flavor, "spec", "nodeLabels")
    leaves: dict[tuple[str, ...], TasLeaf] = {}
    node_of_leaf: dict[str, tuple[str, ...]] = {}
    for node in nodes:
        own = labels(node)
        if not _schedulable_and_ready(node) or not _matches(own, node_labels):
            continue
        if any(lv not in own for lv in levels):
            continue
        values = tuple(str(own[lv]) for lv in levels)
        leaf = leaves.setdefault(values, TasLeaf(values, [], {}, {}))
        leaf.nodes.append(node)
        _add(leaf.free, _units(resource_list(dig(node, "status", "allocatable"))))
        node_of_leaf[name(node)] = values
    for node_name, used in _non_tas_usage(pods).items():
        if node_name in node_of_leaf:
            _add(leaves[node_of_leaf[node_name]].free, used, -1)
    # An assignment names leaves by its own levels (the hostname alone, when that is the
    # lowest level): one index per such set of levels.
    by_levels: dict[tuple[int, ...], dict[tuple[str, ...], tuple[str, ...]]] = {}
    for assignment, units in _tas_usage(workloads, flavor_names):
        positions = tuple(list(levels).index(lv) for lv in assignment.levels if lv in levels)
        if len(positions) != len(assignment.levels):
            continue
        if positions not in by_levels:
            index: dict[tuple[str, ...], tuple[str, ...]] = {}
            for values in leaves:
                index.setdefault(tuple(values[p] for p in positions), values)
            by_levels[positions] = index
        for domain in assignment.domains:
            leaf_of = by_levels[positions].get(domain.values)
            if leaf_of is not None:
                _add(leaves[leaf_of].tas_used, units, domain.count)
                _add(leaves[leaf_of].tas_used, {"pods": domain.count})
    return leaves


def domain_rooms(
    *,
    levels: Sequence[str],
    level: str,
    flavor: Mapping[str, Any],
    flavor_names: frozenset[str],
    per_pod: Mapping[str, Decimal],
    pod_template: Mapping[str, Any],
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    workloads: Iterable[Mapping[str, Any]],
    slice_level: str | None = None,
    slice_size: int | None = None,
) -> list[DomainRoom]:
    """How many Pods of `per_pod` (one Pod's requests) fit in each domain at `level` of the Topology
    with `levels`, as Kueue's TAS snapshot for `flavor` counts them (see the module's sources).
    `flavor_names`: every ResourceFlavor of this Topology (their admitted usage counts).
    With `slice_level` and `slice_size` a domain's room is in whole slices, each in one domain
    of `slice_level` (a slice level above `level` counts as `level`). Sorted by room, largest
    first, then by values."""
    if level not in levels:
        return []
    depth = list(levels).index(level) + 1
    tolerations = [
        *items(flavor, "spec", "tolerations"),
        *items(pod_template, "spec", "tolerations"),
    ]
    selector = mapping(pod_template, "spec", "nodeSelector")
    found_leaves = tas_leaves(
        levels=levels,
        flavor=flavor,
        flavor_names=flavor_names,
        nodes=nodes,
        pods=pods,
        workloads=workloads,
    )
    leaves: dict[tuple[str, ...], Units] = {}
    usable: set[tuple[str, ...]] = set()
    leaf_nodes: dict[tuple[str, ...], int] = {}
    for values, tas_leaf in found_leaves.items():
        capacity = dict(tas_leaf.free)
        _add(capacity, tas_leaf.tas_used, -1)
        leaves[values] = capacity
        leaf_nodes[values] = len(tas_leaf.nodes)
        if any(
            not _excluded_by_taint(node, tolerations) and _matches(labels(node), selector)
            for node in tas_leaf.nodes
        ):
            usable.add(values)
    request = {**{res: kueue_units(res, v) for res, v in per_pod.items()}, "pods": 1}
    # fillInCountsHelper: Pods per slice-level domain, whole slices only, summed upwards.
    size = slice_size if slice_level in levels and slice_size and slice_size > 1 else 1
    slice_depth = list(levels).index(slice_level) + 1 if size > 1 and slice_level else depth
    per_slice_domain: dict[tuple[str, ...], int] = {}
    rooms: dict[tuple[str, ...], list[int]] = {}
    for leaf, capacity in leaves.items():
        fits = count_in(request, capacity) if leaf in usable else 0
        key = leaf[: max(slice_depth, depth)]
        per_slice_domain[key] = per_slice_domain.get(key, 0) + fits
        rooms.setdefault(leaf[:depth], [0, 0])[1] += leaf_nodes[leaf]
    for key, held in per_slice_domain.items():
        rooms[key[:depth]][0] += held // size * size
    found = [DomainRoom(values, pods, count) for values, (pods, count) in rooms.items()]
    return sorted(found, key=lambda r: (-r.pods, r.values))
