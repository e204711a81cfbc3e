"""Kueue's TAS step for a Workload that does not exist yet (Kueue v0.17.0
pkg/scheduler/flavorassigner/tas_flavorassigner.go and flavorassigner.go `assignFlavors`).

A pod set asks TAS explicitly (its topology annotations) or implicitly (every flavor of the
ClusterQueue is a TAS flavor: `isTASImplied`). Once quota gave every pod set its flavors:
- `checkPodSetAndFlavorMatchForTAS` (during the flavor search, `flavor_mismatch` here): a pod
  set asking TAS cannot take a flavor without a Topology (when it requests resources the
  group covers) or whose Topology lacks the level asked; a pod set not asking TAS cannot take
  a TAS flavor of a ClusterQueue that is not TAS-only;
- quota fits (mode Fit): the pod sets are placed in order on their TAS flavor's snapshot
  (kueue.tas_placement), each after the earlier ones' Pods; the first that does not fit gives
  the pod set Kueue's reason and mode Preempt;
- then (mode Preempt) placed again as if no TAS Workload were admitted (`WithSimulateEmpty`):
  does not fit: NoFit.

The verdict: FITS_NOW where placed now; else MUST_WAIT where it fits once admitted TAS
Workloads are gone, or once the Pods Kueue did not place leave (the flavor's Nodes empty);
NEVER_FITS where not even the empty Nodes of the flavor have a domain with room for it (more
Nodes, or a smaller or less constrained request, would be needed); UNKNOWN where the Topology,
Nodes, Pods or Workloads could not be read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from kueue_graphql.kueue.model import KubeObject, Verdict, known
from kueue_graphql.kueue.objects import items, name, spec
from kueue_graphql.kueue.tas_placement import Placement, PlacementAsk, TasSnapshot, Units
from kueue_graphql.kueue.topology import tas_leaves
from kueue_graphql.whatif.model import (
    PodSetOutcome,
    ProposedPodSet,
    TopologyInput,
    TopologyOutcome,
    WhatIfInput,
)

__all__ = ["TOPOLOGY_LIMITED_BY", "TopologyStep", "flavor_tas_mismatch", "tas_only"]

TOPOLOGY_LIMITED_BY = "TOPOLOGY"
"""The limitedBy of a pod set TAS cannot place."""


def tas_only(cluster_queue: KubeObject, flavors: Mapping[str, KubeObject]) -> bool:
    """ClusterQueueSnapshot.IsTASOnly: every flavor of its resource groups is a TAS flavor."""
    names = [
        str(f.get("name") or "")
        for group in items(cluster_queue, "spec", "resourceGroups")
        for f in items(group, "flavors")
    ]
    return bool(names) and all(spec(flavors.get(n)).get("topologyName") for n in names)


def _levels(topologies: Sequence[KubeObject], topology: str) -> list[str] | None:
    for t in topologies:
        if name(t) == topology:
            return [str(lv.get("nodeLabel") or "") for lv in items(t, "spec", "levels")]
    return None


def flavor_tas_mismatch(
    ps: ProposedPodSet,
    flavor: KubeObject,
    covered: Sequence[str],
    cluster_queue_tas_only: bool,
    topologies: Sequence[KubeObject] | None,
) -> str | None:
    """checkPodSetAndFlavorMatchForTAS: Kueue's message when the flavor cannot take the pod
    set for TAS reasons. `topologies`: None when not read (the level is then not checked)."""
    flavor_name = name(flavor)
    topology = spec(flavor).get("topologyName")
    if ps.topology is None:
        if topology and not cluster_queue_tas_only:
            return f'Flavor "{flavor_name}" supports only TopologyAwareScheduling'
        return None
    if not topology:
        if not set(ps.per_pod) & set(covered):
            return None
        return f'Flavor "{flavor_name}" does not support TopologyAwareScheduling'
    if topologies is None:
        return None
    levels = _levels(topologies, str(topology))
    if levels is None:
        return f'Flavor "{flavor_name}" information missing in TAS cache'
    wanted = [lv for lv in (ps.topology.level, ps.topology.slice_level) if lv]
    if any(lv not in levels for lv in wanted):
        return f'Flavor "{flavor_name}" does not contain the requested level'
    return None


def _unreadable(tas: TopologyInput) -> str | None:
    needed = {
        "Topologies": tas.topologies,
        "Nodes": tas.nodes,
        "Pods of every namespace": tas.pods,
        "Workloads of every namespace": tas.workloads,
    }
    missing = [what for what, read in needed.items() if known(read) is None]
    if not missing:
        return None
    return tas.hidden_because or f"not read: {', '.join(missing)}"


@dataclass
class _Flavor:
    name: str
    topology: str
    now: TasSnapshot
    empty_nodes: TasSnapshot
    assumed: dict[tuple[str, ...], Units]


class TopologyStep:
    """The TAS step over the pod sets whose quota assignment is done."""

    def __init__(self, inp: WhatIfInput, cluster_queue: KubeObject) -> None:
        self.inp = inp
        flavors = known(inp.resource_flavors) or []
        self.flavors = {name(f): f for f in flavors}
        self.tas_only = tas_only(cluster_queue, self.flavors)
        self.unreadable = _unreadable(inp.tas)
        self._snapshots: dict[str, _Flavor | None] = {}

    def asks(self, ps: ProposedPodSet) -> bool:
        """isTASRequested: explicitly, or implied by a TAS-only ClusterQueue."""
        return ps.topology is not None or self.tas_only

    def _snapshot(self, flavor_name: str) -> _Flavor | None:
        if flavor_name in self._snapshots:
            return self._snapshots[flavor_name]
        flavor = self.flavors[flavor_name]
        topology = str(spec(flavor).get("topologyName"))
        levels = _levels(known(self.inp.tas.topologies) or [], topology)
        found = None
        if levels:
            same = frozenset(
                n for n, f in self.flavors.items() if spec(f).get("topologyName") == topology
            )
            tolerations = list(items(flavor, "spec", "tolerations"))
            nodes = known(self.inp.tas.nodes) or []

            def snapshot(
                pods: Sequence[KubeObject], workloads: Sequence[KubeObject]
            ) -> TasSnapshot:
                leaves = tas_leaves(
                    levels=levels,
                    flavor=flavor,
                    flavor_names=same,
                    nodes=nodes,
                    pods=pods,
                    workloads=workloads,
                )
                return TasSnapshot(topology, levels, leaves, tolerations)

            found = _Flavor(
                flavor_name,
                topology,
                now=snapshot(known(self.inp.tas.pods) or [], known(self.inp.tas.workloads) or []),
                empty_nodes=snapshot([], []),
                assumed={},
            )
        self._snapshots[flavor_name] = found
        return found

    def place(
        self, ps: ProposedPodSet, outcome: PodSetOutcome, quota_fits: bool
    ) -> TopologyOutcome | None:
        """The pod set's TAS outcome, once quota gave each of its groups a flavor (None when
        it asks no TAS). `quota_fits`: every pod set fits in quota now (Kueue's mode Fit)."""
        if not self.asks(ps):
            return None
        request = ps.topology
        base = TopologyOutcome(
            pod_set=ps.name,
            verdict=Verdict.UNKNOWN,
            flavor=None,
            topology=None,
            mode=request.mode if request else None,
            level=request.level if request else None,
            slice_level=request.slice_level if request else None,
            slice_size=request.slice_size if request and request.slice_level else None,
        )
        chosen = {g.flavor for g in outcome.groups if g.flavor is not None}
        tas_flavors = sorted(f for f in chosen if spec(self.flavors.get(f)).get("topologyName"))
        if len(tas_flavors) != 1:
            why = (
                "no TAS flavor assigned"
                if not tas_flavors
                else f"more than one TAS flavor assigned: {', '.join(tas_flavors)}"
            )
            verdict = Verdict.NEVER_FITS if chosen else Verdict.UNKNOWN
            return replace(base, verdict=verdict, why=why, message=why if chosen else "")
        flavor_name = tas_flavors[0]
        base = replace(base, flavor=flavor_name)
        if self.unreadable is not None:
            return replace(base, why=self.unreadable)
        found = self._snapshot(flavor_name)
        if found is None:
            return replace(base, why=f"Topology of flavor {flavor_name} not found")
        base = replace(base, topology=found.topology)
        ask = PlacementAsk(
            count=ps.count,
            per_pod=ps.per_pod,
            request=request,
            implied=request is None,
            tolerations=ps.tolerations,
            node_selector=ps.node_selector,
            affinity_terms=ps.affinity_terms,
        )
        level = found.now.level_key(ask)
        base = replace(base, level=level)
        if quota_fits:
            now = found.now.find(ask, found.assumed)
            if now.assignment is not None:
                for leaf, units in now.usage(ps.per_pod).items():
                    into = found.assumed.setdefault(leaf, {})
                    for res, v in units.items():
                        into[res] = into.get(res, 0) + v
                return self._shown(base, now, Verdict.FITS_NOW, "")
            first_failure = now
        else:
            first_failure = None
        empty = found.now.find(ask, found.assumed, simulate_empty=True)
        failure = first_failure or empty
        if empty.assignment is not None:
            return self._shown(
                base,
                failure,
                Verdict.MUST_WAIT,
                "it fits once admitted Workloads placed by TAS in that Topology release room "
                "(Kueue may preempt lower-priority ones)",
            )
        bare = found.empty_nodes.find(ask, simulate_empty=True)
        if bare.assignment is not None:
            return self._shown(
                base,
                failure,
                Verdict.MUST_WAIT,
                "it fits once Pods Kueue did not place (non-TAS usage) leave the Nodes",
            )
        never = self._shown(
            base,
            failure,
            Verdict.NEVER_FITS,
            f"no domain of the flavor's Nodes has room for it even with nothing running "
            f"({bare.reason})",
        )
        return replace(never, most_ever=bare.fitting)

    def _shown(
        self, base: TopologyOutcome, placed: Placement, verdict: Verdict, why: str
    ) -> TopologyOutcome:
        names = self.inp.tas.names_shown
        return replace(
            base,
            verdict=verdict,
            placed_at=placed.level if placed.assignment is not None else None,
            domains=placed.domains if names else None,
            assignment=placed.assignment if names else None,
            message=placed.reason if verdict is not Verdict.FITS_NOW else "",
            fitting=placed.fitting,
            wanted=placed.wanted,
            why=why,
        )
