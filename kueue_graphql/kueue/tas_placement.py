"""Where Kueue v0.17.0's topology-aware scheduling (TAS) would place a pod set now: a port of
`TASFlavorSnapshot.findTopologyAssignment` (pkg/cache/scheduler/tas_flavor_snapshot.go) for
one pod set without a leader (no PodSetGroupName), with Kueue's default feature gates
(TASProfileMixed on; TASBalancedPlacement and TASMultiLayerTopology off):

- phase 1, `fillInCounts`: per leaf (kueue.topology.tas_leaves) the Pods that fit in what is
  left (free capacity minus the admitted TAS usage, unless `simulate_empty`, minus what earlier
  pod sets of the same Workload take), one Pod being its requests plus one "pods"; with the
  hostname as the lowest level a Node is excluded by an untolerated NoSchedule/NoExecute taint
  (the pod set's tolerations plus the flavor's), a nodeSelector or a required node affinity it
  does not match (counted in the exclusion stats of Kueue's message); `fillInCountsHelper`:
  a domain holds the sum of its children, whole slices at the slice level;
- phase 2a, `findLevelWithFitDomains`: at the level asked, the domains sorted by room (most
  slices first, then least Pods, then values; least free first for an unconstrained request),
  the best fit among those that take every slice; none: `required` fails with Kueue's
  `notFitMessage`, `preferred` tries the level above, the top level (or an unconstrained
  request) takes the fewest domains greedily;
- phase 2b, `updateCountsToMinimum`: down the tree, each domain's Pods spread over the fewest
  children (best fit for the last one); `buildAssignment`: the leaves, sorted by values, named
  by the hostname alone when that is the lowest level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kueue_graphql.kueue.objects import items, labels
from kueue_graphql.kueue.scheduling import expression_matches, tolerates
from kueue_graphql.kueue.topology import (
    HOSTNAME_LABEL,
    DomainAssignment,
    TasLeaf,
    TopologyAssignment,
    TopologyRequest,
    kueue_units,
)

__all__ = ["Placement", "PlacementAsk", "TasSnapshot", "Units"]

Units = dict[str, int]


@dataclass(frozen=True)
class PlacementAsk:
    """One pod set as TAS sees it: `count` Pods of `per_pod`, its request (None with `implied`:
    a ClusterQueue whose flavors are all TAS flavors places every pod set)."""

    count: int
    per_pod: Mapping[str, Decimal]
    request: TopologyRequest | None
    implied: bool = False
    tolerations: Sequence[Mapping[str, Any]] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class Placement:
    """The answer: the assignment Kueue would write (None when it does not fit), the level at
    which it found the domain(s) and their values from the top level down to it, or Kueue's
    reason ("topology ... allows to fit only 4 out of 5 pod(s)")."""

    assignment: TopologyAssignment | None
    level: str | None = None
    domains: tuple[tuple[str, ...], ...] = ()
    reason: str = ""
    fitting: int | None = None
    """With a reason: the slices (Pods when a slice is one Pod) Kueue says fit."""
    wanted: int | None = None
    leaves: tuple[tuple[tuple[str, ...], int], ...] = ()
    """The Pods per leaf (its values at every level): what a later pod set finds taken."""

    def usage(self, per_pod: Mapping[str, Decimal]) -> dict[tuple[str, ...], Units]:
        """addAssumedUsage: per leaf, the requests of the Pods placed there."""
        return {
            leaf: {res: kueue_units(res, v) * count for res, v in per_pod.items()}
            for leaf, count in self.leaves
        }


@dataclass(eq=False)
class _Domain:
    values: tuple[str, ...]
    children: list[_Domain] = field(default_factory=list)
    leaf: TasLeaf | None = None
    state: int = 0
    slice_state: int = 0


@dataclass
class _Stats:
    """ExclusionStats."""

    total: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    node_selector: int = 0
    affinity: int = 0
    resources: dict[str, int] = field(default_factory=dict)

    def reasons(self) -> str:
        found = []
        if self.node_selector:
            found.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            found.append(f"affinity: {self.affinity}")
        found += [f'taint "{t}": {n}' for t, n in self.taints.items()]
        found += [f'resource "{r}": {n}' for r, n in self.resources.items()]
        return ", ".join(sorted(found))


def _taint_text(taint: Mapping[str, Any]) -> str:
    """v1 Taint.ToString."""
    key, value, effect = (str(taint.get(k) or "") for k in ("key", "value", "effect"))
    if not effect:
        return f"{key}={value}:" if value else key
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _count_in(requests: Mapping[str, int], capacity: Mapping[str, int]) -> tuple[int, str]:
    """Requests.CountInWithLimitingResource (ties broken by resource name)."""
    best: int | None = None
    limiting = ""
    for res in sorted(requests):
        wanted = requests[res]
        if res not in capacity and wanted != 0:
            return 0, res
        have = capacity.get(res, 0)
        # Go's integer division truncates toward zero: a capacity overdrawn by Pods Kueue did
        # not place gives a negative count, which Kueue's message then shows.
        count = 2**31 - 1 if wanted == 0 else (have // wanted if have >= 0 else -(-have // wanted))
        if best is None or count < best:
            best, limiting = count, res
    return best if best is not None else 0, limiting


def _sorted(domains: list[_Domain], least_free: bool) -> list[_Domain]:
    """sortedDomains / sortedDomainsWithLeader without leaders."""
    return sorted(
        domains,
        key=lambda d: (d.slice_state if least_free else -d.slice_state, d.state, d.values),
    )


def _best_fit(domains: list[_Domain], needed: int, slices: bool) -> _Domain:
    """findBestFitDomainBy: the first domain with the least room that still takes `needed`,
    else the first."""

    def room(d: _Domain) -> int:
        return d.slice_state if slices else d.state

    best = domains[0]
    for d in domains:
        if needed <= room(d) < room(best):
            best = d
    return best


def _to_minimum(
    domains: list[_Domain], count: int, slice_size: int, best_fit: bool, slices: bool
) -> list[_Domain]:
    """updateCountsToMinimumGeneric without leaders: the fewest domains taking `count` Pods
    (`count // slice_size` slices), the last one the best fit."""
    result: list[_Domain] = []
    remaining = count // slice_size if slices else count
    for i, dom in enumerate(domains):
        room = dom.slice_state if slices else dom.state
        if best_fit and room >= remaining:
            dom = _best_fit(domains[i:], remaining, slices)
            room = dom.slice_state if slices else dom.state
        if room >= remaining:
            if slices:
                dom.state, dom.slice_state = remaining * slice_size, remaining
            else:
                dom.state = remaining
            result.append(dom)
            return result
        if slices:
            dom.state = room * slice_size
        remaining -= room
        result.append(dom)
    return result


class TasSnapshot:
    """A TAS flavor's snapshot: its Topology's levels, its leaves (kueue.topology.tas_leaves)
    and its tolerations."""

    def __init__(
        self,
        topology: str,
        levels: Sequence[str],
        leaves: Mapping[tuple[str, ...], TasLeaf],
        flavor_tolerations: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.topology = topology
        self.levels = list(levels)
        self.leaves = leaves
        self.tolerations = list(flavor_tolerations)
        self.node_lowest = bool(self.levels) and self.levels[-1] == HOSTNAME_LABEL

    def has_level(self, request: TopologyRequest | None) -> bool:
        """HasLevel: the level asked (and the slice level) are levels of the Topology."""
        if request is None:
            return True
        wanted = [lv for lv in (request.level, request.slice_level) if lv]
        return all(lv in self.levels for lv in wanted)

    def level_key(self, ask: PlacementAsk) -> str | None:
        """levelKeyWithImpliedFallback: the level Kueue looks for domains at."""
        request = ask.request
        if request is not None:
            if request.mode in ("required", "preferred"):
                return request.level
            if request.mode is None and request.slice_level:
                return self.levels[0]
            if request.mode == "unconstrained":
                return self.levels[-1]
        return self.levels[-1] if ask.implied else None

    def _excluded(self, leaf: TasLeaf, ask: PlacementAsk, stats: _Stats) -> bool:
        node = leaf.nodes[0]
        tolerations = [*ask.tolerations, *self.tolerations]
        for taint in items(node, "spec", "taints"):
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if not any(tolerates(t, taint) for t in tolerations):
                text = _taint_text(taint)
                stats.taints[text] = stats.taints.get(text, 0) + 1
                return True
        own = labels(node)
        if any(own.get(k) != v for k, v in ask.node_selector.items()):
            stats.node_selector += 1
            return True
        terms = [list(items(t, "matchExpressions")) for t in ask.affinity_terms]
        if terms and not any(all(expression_matches(e, own) for e in term) for term in terms):
            stats.affinity += 1
            return True
        return False

    def _tree(
        self,
        ask: PlacementAsk,
        assumed: Mapping[tuple[str, ...], Units],
        simulate_empty: bool,
        slice_size: int,
        slice_index: int,
        stats: _Stats,
    ) -> list[dict[tuple[str, ...], _Domain]]:
        """fillInCounts: the domains per level, each with its Pods and slices."""
        requests = {res: kueue_units(res, v) for res, v in ask.per_pod.items() if v != 0}
        requests["pods"] = requests.get("pods", 0) + 1
        per_level: list[dict[tuple[str, ...], _Domain]] = [{} for _ in self.levels]
        for values, leaf in sorted(self.leaves.items()):
            for depth in range(len(self.levels)):
                key = values[: depth + 1]
                if key not in per_level[depth]:
                    per_level[depth][key] = _Domain(key)
                    if depth > 0:
                        per_level[depth - 1][values[:depth]].children.append(per_level[depth][key])
            node = per_level[-1][values]
            node.leaf = leaf
            stats.total += 1
            if self.node_lowest and self._excluded(leaf, ask, stats):
                continue
            left = dict(leaf.free)
            used = [assumed.get(values, {})] if simulate_empty else [leaf.tas_used]
            if not simulate_empty:
                used.append(assumed.get(values, {}))
            for more in used:
                for res, v in more.items():
                    left[res] = left.get(res, 0) - v
            node.state, limiting = _count_in(requests, left)
            if node.state == 0 and limiting:
                stats.resources[limiting] = stats.resources.get(limiting, 0) + 1
        last = len(self.levels) - 1
        for depth in range(last, -1, -1):
            for dom in per_level[depth].values():
                if dom.children:
                    dom.state = sum(c.state for c in dom.children)
                    dom.slice_state = sum(c.slice_state for c in dom.children)
                if depth == slice_index:
                    dom.slice_state = dom.state // slice_size
        return per_level

    def _not_fit(self, fitting: int, wanted: int, slice_size: int, stats: _Stats) -> str:
        unit = "pod" if slice_size == 1 else "slice"
        if fitting == 0:
            text = f'topology "{self.topology}" doesn\'t allow to fit any of {wanted} {unit}(s)'
        else:
            text = (
                f'topology "{self.topology}" allows to fit only {fitting} out of {wanted} {unit}(s)'
            )
        reasons = stats.reasons()
        if reasons:
            text += f". Total nodes: {stats.total}; excluded: {reasons}"
        return text

    def find(
        self,
        ask: PlacementAsk,
        assumed: Mapping[tuple[str, ...], Units] | None = None,
        simulate_empty: bool = False,
    ) -> Placement:
        """findTopologyAssignment for one pod set. `assumed`: per leaf, what earlier pod sets of
        the same Workload take in this flavor. `simulate_empty`: as if every admitted TAS
        Workload were gone (Kueue's check whether preemption could help)."""
        request = ask.request
        slice_size = 1
        if request is not None and request.slice_level:
            if not request.slice_size:
                return Placement(
                    None, reason="slice topology requested, but slice size not provided"
                )
            slice_size = request.slice_size
        key = self.level_key(ask)
        if key is None:
            return Placement(None, reason="topology level not specified")
        if key not in self.levels:
            return Placement(None, reason=f"no requested topology level: {key}")
        slice_key = request.slice_level if request is not None and request.slice_level else None
        slice_key = slice_key or self.levels[-1]
        if slice_key not in self.levels:
            return Placement(None, reason=f"no requested topology level for slices: {slice_key}")
        level_index, slice_index = self.levels.index(key), self.levels.index(slice_key)
        if level_index > slice_index:
            return Placement(
                None,
                reason=f"podset slice topology {slice_key} is above the podset topology {key}",
            )
        required = request is not None and request.mode == "required"
        unconstrained = ask.implied or (
            request is not None
            and (
                request.mode == "unconstrained"
                or (request.mode is None and bool(request.slice_level))
            )
        )
        least_free = unconstrained  # TASProfileMixed: LeastFreeCapacity when unconstrained
        stats = _Stats()
        per_level = self._tree(ask, assumed or {}, simulate_empty, slice_size, slice_index, stats)
        slice_count = ask.count // slice_size

        def fit_domains(index: int) -> tuple[int, list[_Domain], int | None]:
            """findLevelWithFitDomains: (level, domains) or (level, [], slices that fit)."""
            domains = list(per_level[index].values())
            if not domains:
                return index, [], 0
            ordered = _sorted(domains, least_free)
            top = ordered[0]
            if not least_free and top.slice_state >= slice_count:
                top = _best_fit(ordered, slice_count, slices=True)
            if least_free:
                for candidate in ordered:
                    if candidate.slice_state >= slice_count:
                        return index, [candidate], None
            if top.slice_state >= slice_count:
                return index, [top], None
            if required:
                return index, [], top.slice_state
            if index > 0 and not unconstrained:
                return fit_domains(index - 1)
            chosen: list[_Domain] = []
            remaining = slice_count
            ordered = _sorted(ordered, least_free)
            for i, dom in enumerate(ordered):
                if remaining <= 0:
                    break
                if not least_free and dom.slice_state >= remaining:
                    dom = _best_fit(ordered[i:], remaining, slices=True)
                chosen.append(dom)
                remaining -= dom.slice_state
            if remaining > 0:
                return index, [], slice_count - remaining
            return index, chosen, None

        if not per_level[level_index]:
            return Placement(None, reason=f"no topology domains at level: {key}")
        fit_index, fit, fitting = fit_domains(level_index)
        if fitting is not None:
            return Placement(
                None,
                level=key,
                reason=self._not_fit(fitting, slice_count, slice_size, stats),
                fitting=fitting,
                wanted=slice_count,
            )
        at_level = tuple(d.values for d in fit)
        best_fit = not least_free
        current = _to_minimum(fit, ask.count, slice_size, best_fit, slices=True)
        depth = fit_index
        last = len(self.levels) - 1
        while depth < min(last, slice_index):
            lower = _sorted([c for d in current for c in d.children], least_free)
            current = _to_minimum(lower, ask.count, slice_size, best_fit, slices=True)
            depth += 1
        while depth < last:
            spread: list[_Domain] = []
            for dom in current:
                children = _sorted(dom.children, least_free)
                spread += _to_minimum(children, dom.state, 1, best_fit, slices=False)
            current = spread
            depth += 1
        first = last if self.node_lowest else 0
        placed = tuple(
            DomainAssignment(d.values[first:], d.state)
            for d in sorted(current, key=lambda d: d.values)
            if d.state > 0
        )
        return Placement(
            TopologyAssignment(tuple(self.levels[first:]), placed),
            level=self.levels[fit_index],
            domains=at_level,
            leaves=tuple((d.values, d.state) for d in current if d.state > 0),
        )
