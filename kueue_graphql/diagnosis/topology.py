"""Why Kueue's topology-aware scheduling (TAS) could not place a pod set, and how close the
best domains come.

TAS is a step of admission: Kueue's flavor assigner (pkg/scheduler/flavorassigner/
tas_flavorassigner.go) asks the flavor's TAS snapshot (pkg/cache/scheduler/
tas_flavor_snapshot.go findLevelWithFitDomains) for one domain at the level asked with room for
every Pod; a `required` level that has none leaves the Workload without a quota reservation
("topology ... allows to fit only 4 out of 5 pod(s)"). For a caller who may read the Nodes, the
Pods and the Workloads of every namespace, the room of each domain is counted here as that
snapshot counts it (kueue.topology.domain_rooms); for others only Kueue's own figure, without
domain names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kueue_graphql.diagnosis.context import Context
from kueue_graphql.diagnosis.model import TopologyFit
from kueue_graphql.kueue.exact import format_quantity
from kueue_graphql.kueue.model import Forbidden, KubeObject, Reason, known
from kueue_graphql.kueue.objects import items, name, spec
from kueue_graphql.kueue.podsets import workload_requests
from kueue_graphql.kueue.topology import TopologyRequest, domain_rooms, podset_topology_request
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["topology_fits", "topology_summary"]

SHOWN_DOMAINS = 5
"""Domains named in the summary (every one is in `Diagnosis.topology`)."""


def _flavors_of_topology(ctx: Context, topology: str) -> tuple[KubeObject | None, frozenset[str]]:
    """The flavor Kueue tried (the ClusterQueue's first flavor naming `topology`, else any
    such flavor) and every flavor naming it."""
    flavors = known(ctx.inp.resource_flavors) or []
    of_topology = {name(f): f for f in flavors if spec(f).get("topologyName") == topology}
    ordered = [
        str(f.get("name", ""))
        for group in items(ctx.cluster_queue, "spec", "resourceGroups")
        for f in group.get("flavors") or []
    ]
    tried = next((of_topology[n] for n in ordered if n in of_topology), None)
    if tried is None and of_topology:
        tried = of_topology[sorted(of_topology)[0]]
    return tried, frozenset(of_topology)


def _hidden_because(ctx: Context) -> str | None:
    needed = {
        "Nodes": ctx.inp.nodes,
        "Pods of every namespace": ctx.inp.cluster_pods,
        "Workloads of every namespace": ctx.inp.cluster_workloads,
        "ResourceFlavors": ctx.inp.resource_flavors,
        "Topologies": ctx.inp.topologies,
    }
    refused = [what for what, read in needed.items() if isinstance(read, Forbidden)]
    if refused:
        return f"you may not list {', '.join(refused)}"
    missing = [what for what, read in needed.items() if known(read) is None]
    if missing:
        return f"not read: {', '.join(missing)}"
    return None


def _level_asked(request: TopologyRequest | None, levels: Sequence[str]) -> str | None:
    """tas_flavor_snapshot.go levelKey / levelKeyWithImpliedFallback: the required or
    preferred level; the highest level for a slice-only request; the lowest for an
    unconstrained one and for a pod set without a request (TAS implied by the flavor)."""
    if request is not None and request.level:
        return request.level
    if not levels:
        return None
    if request is not None and request.mode is None and request.slice_level:
        return levels[0]
    return levels[-1]


def _fit(ctx: Context, reason: Reason, podset: Mapping[str, object]) -> TopologyFit:
    assert reason.object is not None
    assert ctx.workload is not None
    topology = reason.object.name
    request = podset_topology_request(podset)
    per_pod = next(
        (ps.per_pod for ps in workload_requests(ctx.workload) if ps.name == reason.pod_set), {}
    )
    size = request.slice_size if request is not None and request.slice_level else None
    count = podset.get("count")
    pods_wanted = count if isinstance(count, int) else 0
    fitting = reason.number("fitting")
    if fitting is None and size is not None:
        # Counted in slices: the Pods of as many whole slices.
        slices = reason.number("fittingSlices")
        fitting = slices * size if slices is not None else None
    wanted = reason.number("wanted")
    if wanted is not None and size is None:
        pods_wanted = int(wanted)
    flavor, flavor_names = _flavors_of_topology(ctx, topology)
    hidden = _hidden_because(ctx)
    levels = [
        str(lv.get("nodeLabel", ""))
        for t in known(ctx.inp.topologies) or []
        if name(t) == topology
        for lv in items(t, "spec", "levels")
    ]
    level = _level_asked(request, levels)
    domains = None
    if hidden is None and flavor is None:
        hidden = f"no ResourceFlavor names Topology {topology}"
    elif hidden is None and (level is None or level not in levels):
        hidden = f"Topology {topology} has no level {level}"
    elif hidden is None and flavor is not None and level is not None:
        template = podset.get("template")
        domains = tuple(
            domain_rooms(
                levels=levels,
                level=level,
                flavor=flavor,
                flavor_names=flavor_names,
                per_pod=per_pod,
                pod_template=template if isinstance(template, Mapping) else {},
                nodes=known(ctx.inp.nodes) or [],
                pods=known(ctx.inp.cluster_pods) or [],
                workloads=known(ctx.inp.cluster_workloads) or [],
                slice_level=request.slice_level if request is not None else None,
                slice_size=size,
            )
        )
    return TopologyFit(
        pod_set=reason.pod_set or "",
        topology=topology,
        mode=request.mode if request is not None else None,
        level=level,
        pods_wanted=pods_wanted,
        per_pod=per_pod,
        kueue_fitting=int(fitting) if fitting is not None else None,
        flavor=name(flavor) if flavor is not None else None,
        domains=domains,
        slice_level=request.slice_level if size is not None and request is not None else None,
        slice_size=size,
        hidden_because=hidden,
    )


def topology_fits(ctx: Context, reasons: Sequence[Reason]) -> tuple[TopologyFit, ...]:
    """One answer per pod set Kueue's TAS step could not place."""
    if ctx.workload is None:
        return ()
    podsets = {str(ps.get("name", "")): ps for ps in items(ctx.workload, "spec", "podSets")}
    out: list[TopologyFit] = []
    for r in reasons:
        if r.code != Code.TOPOLOGY_PLACEMENT_FAILED or r.object is None:
            continue
        podset = podsets.get(r.pod_set or "")
        if podset is not None and all(f.pod_set != r.pod_set for f in out):
            out.append(_fit(ctx, r, podset))
    return tuple(out)


def _per_pod(fit: TopologyFit) -> str:
    shown = ", ".join(
        f"{format_quantity(amount, res)} {res}" for res, amount in sorted(fit.per_pod.items())
    )
    return f" of {shown}" if shown else ""


def topology_summary(fit: TopologyFit) -> str:
    """ "needs 5 Pods of 2 cpu in one <level> (required): the best, r3, has room for 4; ..."."""
    where = f"one {fit.level}" if fit.level else "one domain"
    mode = f" ({fit.mode})" if fit.mode else ""
    slices = (
        f" (in slices of {fit.slice_size}, each in one {fit.slice_level})"
        if fit.slice_size and fit.slice_level
        else ""
    )
    head = (
        f"topology-aware scheduling cannot place pod set {fit.pod_set}: it needs "
        f"{fit.pods_wanted} Pods{_per_pod(fit)} in {where}{mode}{slices} of Topology "
        f"{fit.topology}"
    )
    if fit.domains is not None:
        if not fit.domains:
            return f"{head}; no Ready Node of flavor {fit.flavor} is in that Topology"
        best, rest = fit.domains[0], fit.domains[1:SHOWN_DOMAINS]
        text = f"{head}: the best, {best.name}, has room for {best.pods}"
        if rest:
            text += "; then " + ", ".join(f"{d.name} {d.pods}" for d in rest)
        more = len(fit.domains) - 1 - len(rest)
        return text + (f" (and {more} more)" if more > 0 else "")
    if fit.kueue_fitting is not None:
        return (
            f"{head}: Kueue's best domain has room for {fit.kueue_fitting} "
            f"(domains not shown: {fit.hidden_because})"
        )
    return head
