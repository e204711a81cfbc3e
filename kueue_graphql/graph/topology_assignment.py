"""Topology-aware scheduling on a Workload: what each pod set asks of TAS, where Kueue placed
it (kueue.topology decodes both as Kueue v0.17.0 does), and, in a diagnosis, why it could not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import strawberry

from kueue_graphql.diagnosis.model import TopologyFit
from kueue_graphql.graph.quantity import ResourceQuantity, computed_quantities
from kueue_graphql.kueue import topology


@strawberry.type(
    description="A pod set's topology request: from `spec.podSets[].topologyRequest`, else the "
    "template's `kueue.x-k8s.io/podset-*-topology` annotations."
)
class TopologyRequest:
    mode: str | None = strawberry.field(
        description="required, preferred or unconstrained; null when only a slice level is asked."
    )
    level: str | None = strawberry.field(description="The node label of the level asked.")
    slice_level: str | None
    slice_size: int | None


@strawberry.type(description="Pods placed in one topology domain.")
class TopologyDomain:
    values: list[str] = strawberry.field(
        description="One node-label value per level of the assignment (`levels`)."
    )
    count: int = strawberry.field(description="Pods placed in this domain.")


@strawberry.type(
    description="`podSetAssignments[].topologyAssignment`, its slices decoded into domains as "
    "Kueue's pkg/util/tas/tas_assignment.go does (prefix + root + suffix, universal values and "
    "counts). With kubernetes.io/hostname as the Topology's lowest level Kueue writes only that "
    "level: each domain is then one Node."
)
class TopologyAssignment:
    levels: list[str]
    domains: list[TopologyDomain]


def topology_request_of(podset: Mapping[str, Any]) -> TopologyRequest | None:
    found = topology.podset_topology_request(podset)
    if found is None:
        return None
    return TopologyRequest(
        mode=found.mode,
        level=found.level,
        slice_level=found.slice_level,
        slice_size=found.slice_size,
    )


def topology_assignment_of(assignment: Mapping[str, Any]) -> TopologyAssignment | None:
    decoded = topology.decode_assignment(assignment.get("topologyAssignment"))
    if decoded is None:
        return None
    return TopologyAssignment(
        levels=list(decoded.levels),
        domains=[TopologyDomain(values=list(d.values), count=d.count) for d in decoded.domains],
    )


@strawberry.type(description="A topology domain at the level asked, and its room now.")
class TopologyDomainRoom:
    values: list[str] = strawberry.field(
        description="Node-label values from the Topology's top level down to the level asked."
    )
    name: str = strawberry.field(description="Its value at the level asked (e.g. the rack).")
    pods: int = strawberry.field(description="Pods of the pod set that fit there now.")
    nodes: int = strawberry.field(description="Ready Nodes of the flavor in the domain.")


@strawberry.type(
    description="Why Kueue's topology-aware scheduling (an admission step) could not place a "
    "pod set: the level asked, what it needs, and (for a caller who may list Nodes, and Pods "
    "and Workloads of every namespace) every domain at that level with the Pods it has room "
    "for, counted as Kueue v0.17's TAS snapshot counts (allocatable minus the requests of the "
    "Pods bound there that Kueue did not place, minus what admitted TAS Workloads hold)."
)
class TopologyPlacement:
    pod_set: str
    topology: str
    mode: str | None = strawberry.field(description="required, preferred or unconstrained.")
    level: str | None
    pods_wanted: int
    per_pod: list[ResourceQuantity] = strawberry.field(description="One Pod's requests.")
    kueue_fitting: int | None = strawberry.field(
        description="Pods Kueue's message says its best domain could take."
    )
    flavor: str | None
    domains: list[TopologyDomainRoom] | None = strawberry.field(
        description="Most room first; null when the caller may not read what the count needs."
    )
    hidden_because: str | None
    slice_level: str | None = strawberry.field(
        description="Set when the pod set asks for slices: `domains` then count the Pods of "
        "whole slices, each slice in one domain of this level."
    )
    slice_size: int | None


def topology_placement_of(fit: TopologyFit) -> TopologyPlacement:
    return TopologyPlacement(
        pod_set=fit.pod_set,
        topology=fit.topology,
        mode=fit.mode,
        level=fit.level,
        pods_wanted=fit.pods_wanted,
        per_pod=computed_quantities(sorted(fit.per_pod.items())),
        kueue_fitting=fit.kueue_fitting,
        flavor=fit.flavor,
        domains=None
        if fit.domains is None
        else [
            TopologyDomainRoom(values=list(d.values), name=d.name, pods=d.pods, nodes=d.nodes)
            for d in fit.domains
        ],
        hidden_because=fit.hidden_because,
        slice_level=fit.slice_level,
        slice_size=fit.slice_size,
    )
