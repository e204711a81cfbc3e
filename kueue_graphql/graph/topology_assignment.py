"""Topology-aware scheduling on a Workload: what each pod set asks of TAS, and where Kueue
placed it (kueue.topology decodes both as Kueue v0.17.0 does)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import strawberry

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
