"""Quota arithmetic: a Workload's needs against its ClusterQueue and cohort tree.

Over 500 lines on purpose: one port of Kueue's resource_node.go and its tree walk, kept in one
file so that it reads against Kueue's file.

A faithful port of Kueue v0.17.0's hierarchical resource nodes
(pkg/cache/scheduler/resource_node.go):

- a ClusterQueue's SubtreeQuota is its nominal quota; a Cohort's is its own nominal quota plus
  what each child puts in (child SubtreeQuota minus the child's localQuota);
- localQuota = SubtreeQuota - lendingLimit (what a node keeps from its parent), 0 without a limit;
- Usage of a ClusterQueue is its reserved quota (status.flavorsReservation); a Cohort's is the
  sum of its children's usage beyond their localQuota;
- available(node)  = LocalAvailable + min(available(parent), borrowing headroom);
- potentialAvailable(node) = localQuota + potentialAvailable(parent), capped by
  SubtreeQuota + borrowingLimit. A request above that is "maximum capacity" and never fits.

The tree also offers the walk of Kueue's hierarchical preemption (BorrowingWith, LocalAvailable,
PathParentToRoot, getNodeHeight, removeUsage) for whatIf's borrowing level.

The inputs are only what the caller could read. A cohort member we could not read makes the
cohort figures unknown rather than wrong.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from kueue_graphql.kueue.exact import ZERO, QuantityError, exact_arithmetic, parse_quantity
from kueue_graphql.kueue.model import (
    BindingLimit,
    KubeObject,
    QuotaLine,
    QuotaReport,
    Verdict,
    Visibility,
)
from kueue_graphql.kueue.objects import items, name, text
from kueue_graphql.kueue.podsets import PodSetRequest, total_needs

__all__ = [
    "CohortTree",
    "FlavorResource",
    "assess_quota",
    "candidate_flavors",
    "cohort_tree",
    "overall_verdict",
    "quota_line",
    "quotas_of",
]

FlavorResource = tuple[str, str]


def _qty(raw: object) -> Decimal | None:
    if not isinstance(raw, str | int | float) or isinstance(raw, bool):
        return None
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


@dataclass(frozen=True)
class ResourceQuota:
    nominal: Decimal
    borrowing_limit: Decimal | None
    lending_limit: Decimal | None


def quotas_of(obj: KubeObject) -> dict[FlavorResource, ResourceQuota]:
    """spec.resourceGroups of a ClusterQueue or Cohort, per (flavor, resource)."""
    out: dict[FlavorResource, ResourceQuota] = {}
    for group in items(obj, "spec", "resourceGroups"):
        for flavor in items(group, "flavors"):
            flavor_name = str(flavor.get("name") or "")
            for res in items(flavor, "resources"):
                out[(flavor_name, str(res.get("name") or ""))] = ResourceQuota(
                    nominal=_qty(res.get("nominalQuota")) or ZERO,
                    borrowing_limit=_qty(res.get("borrowingLimit")),
                    lending_limit=_qty(res.get("lendingLimit")),
                )
    return out


def _usage(obj: KubeObject, field_name: str) -> dict[FlavorResource, tuple[Decimal, Decimal]]:
    out: dict[FlavorResource, tuple[Decimal, Decimal]] = {}
    for flavor in items(obj, "status", field_name):
        for res in items(flavor, "resources"):
            key = (str(flavor.get("name") or ""), str(res.get("name") or ""))
            out[key] = (_qty(res.get("total")) or ZERO, _qty(res.get("borrowed")) or ZERO)
    return out


def candidate_flavors(cluster_queue: KubeObject, resource: str) -> list[str]:
    """The flavors Kueue would try for a resource, in order: those of the covering group."""
    for group in items(cluster_queue, "spec", "resourceGroups"):
        covered = group.get("coveredResources")
        if isinstance(covered, list) and resource in covered:
            return [str(f.get("name") or "") for f in items(group, "flavors")]
    return []


@dataclass
class _Node:
    name: str
    is_cohort: bool
    parent: str | None
    quotas: dict[FlavorResource, ResourceQuota]
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    subtree: dict[FlavorResource, Decimal] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    explicit: bool = True
    """False for a cohort named only by cohortName/parentName (no object to change)."""


class CohortTree:
    """The ClusterQueue/Cohort forest, built from listed objects (implicit cohorts included)."""

    @exact_arithmetic
    def __init__(self, cluster_queues: Sequence[KubeObject], cohorts: Sequence[KubeObject]) -> None:
        self._nodes: dict[str, _Node] = {}
        for cohort in cohorts:
            key = "cohort/" + name(cohort)
            parent = text(cohort, "spec", "parentName")
            self._nodes[key] = _Node(
                name=name(cohort),
                is_cohort=True,
                parent="cohort/" + parent if parent else None,
                quotas=quotas_of(cohort),
            )
        for cq in cluster_queues:
            cohort_name = text(cq, "spec", "cohortName") or text(cq, "spec", "cohort")
            usage = {k: total for k, (total, _) in _usage(cq, "flavorsReservation").items()}
            self._nodes["cq/" + name(cq)] = _Node(
                name=name(cq),
                is_cohort=False,
                parent="cohort/" + cohort_name if cohort_name else None,
                quotas=quotas_of(cq),
                usage=usage,
            )
        for node in list(self._nodes.values()):
            if node.parent and node.parent not in self._nodes:
                # A cohort named only by cohortName/parentName: no object, no quota of its own.
                self._nodes[node.parent] = _Node(
                    name=node.parent.removeprefix("cohort/"),
                    is_cohort=True,
                    parent=None,
                    quotas={},
                    explicit=False,
                )
        for key, node in self._nodes.items():
            if node.parent:
                self._nodes[node.parent].children.append(key)
        for key, node in self._nodes.items():
            if node.parent is None:
                self._accumulate(key, set())

    @exact_arithmetic
    def _accumulate(self, key: str, seen: set[str]) -> None:
        if key in seen:  # a cycle: Kueue refuses it too; stop rather than loop
            return
        seen.add(key)
        node = self._nodes[key]
        node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        if not node.is_cohort:
            return
        node.usage = {}
        for child_key in node.children:
            self._accumulate(child_key, seen)
            child = self._nodes[child_key]
            for fr, child_quota in child.subtree.items():
                node.subtree[fr] = node.subtree.get(fr, ZERO) + child_quota - self._local(child, fr)
            for fr, child_usage in child.usage.items():
                extra = max(ZERO, child_usage - self._local(child, fr))
                node.usage[fr] = node.usage.get(fr, ZERO) + extra

    def has(self, cq_name: str) -> bool:
        return "cq/" + cq_name in self._nodes

    def root_cohort(self, cq_name: str) -> str | None:
        node = self._nodes.get("cq/" + cq_name)
        return node.parent.removeprefix("cohort/") if node and node.parent else None

    def members(self, cohort_name: str) -> set[str]:
        """Names of all ClusterQueues in the tree that holds this cohort."""
        key = "cohort/" + cohort_name
        while key in self._nodes and self._nodes[key].parent:
            parent = self._nodes[key].parent
            assert parent is not None
            key = parent
        out: set[str] = set()
        stack = [key]
        while stack:
            current = self._nodes.get(stack.pop())
            if current is None:
                continue
            if not current.is_cohort:
                out.add(current.name)
            stack.extend(current.children)
        return out

    @staticmethod
    @exact_arithmetic
    def _local(node: _Node, fr: FlavorResource) -> Decimal:
        quota = node.quotas.get(fr)
        if quota is not None and quota.lending_limit is not None:
            return max(ZERO, node.subtree.get(fr, ZERO) - quota.lending_limit)
        return ZERO

    @exact_arithmetic
    def _local_available(self, node: _Node, fr: FlavorResource) -> Decimal:
        return max(ZERO, self._local(node, fr) - node.usage.get(fr, ZERO))

    def available(self, cq_name: str, fr: FlavorResource) -> Decimal:
        return max(ZERO, self._available("cq/" + cq_name, fr, set()))

    @exact_arithmetic
    def _available(self, key: str, fr: FlavorResource, seen: set[str]) -> Decimal:
        node = self._nodes[key]
        if node.parent is None or key in seen:
            return node.subtree.get(fr, ZERO) - node.usage.get(fr, ZERO)
        seen.add(key)
        parent_available = self._available(node.parent, fr, seen)
        quota = node.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            stored_in_parent = node.subtree.get(fr, ZERO) - self._local(node, fr)
            used_in_parent = max(ZERO, node.usage.get(fr, ZERO) - self._local(node, fr))
            with_max = stored_in_parent - used_in_parent + quota.borrowing_limit
            parent_available = min(with_max, parent_available)
        return self._local_available(node, fr) + parent_available

    @exact_arithmetic
    def binding_limits(
        self, cq_name: str, fr: FlavorResource, *, now: bool
    ) -> tuple[BindingLimit, ...]:
        """The limits that cap what the ClusterQueue can get of `fr`, wherever they sit.

        `now`: against what is unused now (Available), else against what it could ever get
        (PotentialAvailable). The walk is the same as theirs, from the root down the queue's
        path: at each node the part its parent can give is capped by the node's borrowingLimit;
        the lowest cap that binds is the limit (the queue's own borrowingLimit, or a Cohort's
        towards its parent). Without one, the root's pool binds: the members off the path that
        keep quota from it (lendingLimit: what they never lend, or, now, what they keep unused),
        else, for the most it could ever get, the root Cohort's own nominalQuota. Empty when
        nothing but others' usage is in the way.
        """
        key = "cq/" + cq_name
        path = [key, *self.path_parent_to_root(cq_name)]
        root = self._nodes[path[-1]]
        value = root.subtree.get(fr, ZERO) - (root.usage.get(fr, ZERO) if now else ZERO)
        source: str | None = None
        for node_key in reversed(path[:-1]):
            node = self._nodes[node_key]
            quota = node.quotas.get(fr)
            if quota is not None and quota.borrowing_limit is not None:
                local = self._local(node, fr)
                cap = node.subtree.get(fr, ZERO) - local + quota.borrowing_limit
                if now:
                    cap -= max(ZERO, node.usage.get(fr, ZERO) - local)
                if cap < value:
                    value, source = cap, node_key
            value += self._local_available(node, fr) if now else self._local(node, fr)
        if source is not None:
            node = self._nodes[source]
            limit = node.quotas[fr].borrowing_limit
            assert limit is not None
            kind = "Cohort" if node.is_cohort else "ClusterQueue"
            return (BindingLimit(kind, node.name, "borrowingLimit", limit),)
        on_path = set(path)
        lenders = []
        for node_key in self._subtree_keys(path[-1]):
            node = self._nodes[node_key]
            quota = node.quotas.get(fr)
            if node_key in on_path or quota is None or quota.lending_limit is None:
                continue
            withheld = self._local_available(node, fr) if now else self._local(node, fr)
            if withheld > 0:
                kind = "Cohort" if node.is_cohort else "ClusterQueue"
                lenders.append(
                    BindingLimit(kind, node.name, "lendingLimit", quota.lending_limit, withheld)
                )
        if lenders:
            return tuple(sorted(lenders, key=lambda b: (-(b.withheld or ZERO), b.name or "")))
        if not now and root.is_cohort and root.explicit:
            own = root.quotas.get(fr)
            return (
                BindingLimit("Cohort", root.name, "nominalQuota", own.nominal if own else ZERO),
            )
        return ()

    def _subtree_keys(self, key: str) -> list[str]:
        out: list[str] = []
        stack = [key]
        while stack:
            current = stack.pop()
            if current in out:
                continue
            out.append(current)
            stack.extend(self._nodes[current].children)
        return out

    def potential_available(self, cq_name: str, fr: FlavorResource) -> Decimal:
        return self._potential("cq/" + cq_name, fr, set())

    @exact_arithmetic
    def _potential(self, key: str, fr: FlavorResource, seen: set[str]) -> Decimal:
        node = self._nodes[key]
        if node.parent is None or key in seen:
            return node.subtree.get(fr, ZERO)
        seen.add(key)
        result = self._local(node, fr) + self._potential(node.parent, fr, seen)
        quota = node.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            result = min(node.subtree.get(fr, ZERO) + quota.borrowing_limit, result)
        return result

    # -- the walk of Kueue's hierarchical preemption (FindHeightOfLowestSubtreeThatFits) -------

    @staticmethod
    def cluster_queue_node(cq_name: str) -> str:
        """The node key of a ClusterQueue, for the methods below."""
        return "cq/" + cq_name

    def has_parent(self, key: str) -> bool:
        return self._nodes[key].parent is not None

    def path_parent_to_root(self, cq_name: str) -> list[str]:
        """ClusterQueueSnapshot.PathParentToRoot: the queue's cohorts, its own first."""
        out: list[str] = []
        parent = self._nodes["cq/" + cq_name].parent
        while parent is not None and parent not in out:
            out.append(parent)
            parent = self._nodes[parent].parent
        return out

    @exact_arithmetic
    def borrowing_with(self, key: str, fr: FlavorResource, value: Decimal) -> bool:
        """BorrowingWith: the node's usage plus `value` exceeds its SubtreeQuota (a
        ClusterQueue's nominal quota)."""
        node = self._nodes[key]
        return node.usage.get(fr, ZERO) + value > node.subtree.get(fr, ZERO)

    def children(self, key: str) -> list[str]:
        """The node's child Cohorts and ClusterQueues (node keys)."""
        return list(self._nodes[key].children)

    def usage(self, key: str, fr: FlavorResource) -> Decimal:
        """The node's usage (a Cohort's: what its children use beyond what they keep)."""
        return self._nodes[key].usage.get(fr, ZERO)

    def queue_name(self, key: str) -> str | None:
        """The ClusterQueue's name when the node is one, else None (a Cohort)."""
        node = self._nodes[key]
        return None if node.is_cohort else node.name

    def local_available(self, key: str, fr: FlavorResource) -> Decimal:
        """LocalAvailable: quota kept from the parent (lendingLimit) and not used."""
        return self._local_available(self._nodes[key], fr)

    def height(self, key: str) -> int:
        """getNodeHeight: the distance to the furthest leaf (a ClusterQueue's is 0, a cohort
        with children at least 1)."""
        return self._height(key, set())

    def _height(self, key: str, seen: set[str]) -> int:
        seen.add(key)
        node = self._nodes[key]
        out = min(len(node.children), 1)
        for child in node.children:
            if self._nodes[child].is_cohort and child not in seen:
                out = max(out, self._height(child, seen) + 1)
        return out

    def _up(self, cq_name: str) -> Iterator[_Node]:
        """The queue's node, then its cohorts up to the root."""
        key: str | None = "cq/" + cq_name
        seen: set[str] = set()
        while key is not None and key not in seen:
            seen.add(key)
            node = self._nodes[key]
            yield node
            key = node.parent

    def _copy(self) -> CohortTree:
        copy = object.__new__(CohortTree)
        copy._nodes = {k: replace(n, usage=dict(n.usage)) for k, n in self._nodes.items()}
        return copy

    @exact_arithmetic
    def with_usage(self, cq_name: str, fr: FlavorResource, value: Decimal) -> CohortTree:
        """A copy where the queue uses `value` more of `fr` (addUsage, as the snapshot's
        AddWorkload does): what it cannot take from what it keeps unused goes to its cohort."""
        copy = self._copy()
        for node in copy._up(cq_name):
            if value <= 0:
                break
            kept_unused = self._local_available(node, fr)
            node.usage[fr] = node.usage.get(fr, ZERO) + value
            value = max(ZERO, value - kept_unused)
        return copy

    @exact_arithmetic
    def without_usage(self, cq_name: str, fr: FlavorResource, value: Decimal) -> CohortTree:
        """A copy where the queue uses `value` less of `fr` (removeUsage, as the snapshot's
        SimulateWorkloadRemoval does): the part it stored in its cohort leaves the cohort too."""
        copy = self._copy()
        for node in copy._up(cq_name):
            if value <= 0:
                break
            stored_in_parent = node.usage.get(fr, ZERO) - self._local(node, fr)
            node.usage[fr] = node.usage.get(fr, ZERO) - value
            if stored_in_parent <= 0:
                break
            value = min(value, stored_in_parent)
        return copy


@exact_arithmetic
def _assigned(requests: Sequence[PodSetRequest]) -> dict[FlavorResource, Decimal]:
    out: dict[FlavorResource, Decimal] = {}
    for ps in requests:
        for res, value in ps.total.items():
            flavor = ps.flavors.get(res)
            if flavor is not None:
                out[(flavor, res)] = out.get((flavor, res), ZERO) + value
    return out


def cohort_tree(
    cluster_queue: KubeObject,
    cluster_queues: Sequence[KubeObject] | None,
    cohorts: Sequence[KubeObject] | None,
) -> CohortTree | None:
    """The tree the ClusterQueue's arithmetic needs; None when cohort members are unreadable.

    `cluster_queues` / `cohorts` are None when the caller may not list them.
    """
    cq_name = name(cluster_queue)
    cohort_name = text(cluster_queue, "spec", "cohortName") or text(cluster_queue, "spec", "cohort")
    if cohort_name is None:
        return CohortTree([cluster_queue], [])
    if cluster_queues is None or cohorts is None:
        return None
    others = [cq for cq in cluster_queues if name(cq) != cq_name]
    return CohortTree([*others, cluster_queue], cohorts)


@exact_arithmetic
def quota_line(
    cluster_queue: KubeObject,
    tree: CohortTree | None,
    fr: FlavorResource,
    requested: Decimal,
    *,
    holds_reservation: bool = False,
) -> QuotaLine:
    """`requested` of one (flavor, resource) against the ClusterQueue and its cohort, now.

    NEVER_FITS above what the queue could ever get (Kueue's PotentialAvailable, "maximum
    capacity"), FITS_NOW within what is unused now (Available), MUST_WAIT in between; UNKNOWN
    when cohort members could not be read (tree None) and the queue's own figures cannot decide.
    """
    cq_name = name(cluster_queue)
    cohort_name = text(cluster_queue, "spec", "cohortName") or text(cluster_queue, "spec", "cohort")
    flavor, res = fr
    quota = quotas_of(cluster_queue).get(fr)
    nominal = quota.nominal if quota else ZERO
    reserved_now, borrowed = _usage(cluster_queue, "flavorsReservation").get(fr, (ZERO, ZERO))
    used_now, _ = _usage(cluster_queue, "flavorsUsage").get(fr, (ZERO, ZERO))
    if tree is not None and quota is not None:
        maximum: Decimal | None = tree.potential_available(cq_name, fr)
        available: Decimal | None = tree.available(cq_name, fr)
    elif quota is None:
        maximum, available = ZERO, ZERO
    else:
        maximum, available = None, None
        if quota.borrowing_limit is not None:
            maximum = nominal + quota.borrowing_limit  # an upper bound of Kueue's figure
    cohort_can_lend: Decimal | None = None
    if available is not None and cohort_name is not None:
        cohort_can_lend = max(ZERO, available - max(ZERO, nominal - reserved_now))
    limited_by: str | None = None
    binding: tuple[BindingLimit, ...] = ()
    if holds_reservation:
        verdict = Verdict.FITS_NOW
    elif maximum is not None and requested > maximum:
        verdict = Verdict.NEVER_FITS
        if cohort_name is not None and tree is not None and quota is not None:
            binding = tree.binding_limits(cq_name, fr, now=False)
            limited_by = _limited_by(cq_name, binding)
        elif quota is not None and quota.borrowing_limit is not None:
            limited_by = "BORROWING_LIMIT"
        else:
            limited_by = "NOMINAL_QUOTA" if cohort_name is None else "COHORT"
        if cohort_name is None and quota is not None:
            binding = (BindingLimit("ClusterQueue", cq_name, "nominalQuota", nominal),)
    elif available is None:
        verdict = Verdict.UNKNOWN
    elif requested <= available:
        verdict = Verdict.FITS_NOW
    else:
        verdict = Verdict.MUST_WAIT
        if tree is not None and quota is not None and cohort_name is not None:
            binding = tree.binding_limits(cq_name, fr, now=True)
        if _limited_by(cq_name, binding) == "BORROWING_LIMIT":
            limited_by = "BORROWING_LIMIT"
        elif cohort_name is not None and requested > nominal - reserved_now:
            limited_by = "COHORT"
        else:
            limited_by = "NOMINAL_QUOTA"
    if quota is None and not holds_reservation:
        limited_by = "NOT_IN_CLUSTER_QUEUE"
    return QuotaLine(
        flavor=flavor,
        resource=res,
        requested=requested,
        nominal_quota=nominal,
        borrowing_limit=quota.borrowing_limit if quota else None,
        lending_limit=quota.lending_limit if quota else None,
        reserved=reserved_now,
        used=used_now,
        borrowed=borrowed,
        cohort=cohort_name,
        cohort_can_lend=cohort_can_lend,
        maximum_capacity=maximum,
        available_now=available,
        verdict=verdict,
        limited_by=limited_by,
        counts_this_workload=holds_reservation,
        binding_limits=binding,
    )


def _limited_by(cq_name: str, binding: Sequence[BindingLimit]) -> str:
    """BORROWING_LIMIT when the queue's own borrowingLimit binds, else COHORT: the limit sits
    elsewhere in the tree (`binding` names it)."""
    own = [b for b in binding if b.kind == "ClusterQueue" and b.name == cq_name]
    return "BORROWING_LIMIT" if own and own[0].limit == "borrowingLimit" else "COHORT"


def assess_quota(
    *,
    cluster_queue: KubeObject,
    requests: Sequence[PodSetRequest],
    holds_reservation: bool,
    queue_inactive: bool = False,
    cluster_queues: Sequence[KubeObject] | None,
    cohorts: Sequence[KubeObject] | None,
) -> QuotaReport:
    """Per (flavor, resource) line with the verdict NEVER_FITS / FITS_NOW / MUST_WAIT.

    `cluster_queues` / `cohorts` are None when the caller may not list them: then lines
    still carry the ClusterQueue's own figures and cohort figures stay unknown.
    """
    tree = cohort_tree(cluster_queue, cluster_queues, cohorts)
    if holds_reservation:
        wanted = _assigned(requests)
    else:
        wanted = {}
        for res, value in total_needs(list(requests)).items():
            flavors = candidate_flavors(cluster_queue, res) or [""]
            for flavor in flavors:
                wanted[(flavor, res)] = value
    lines = []
    for fr, requested in sorted(wanted.items()):
        line = quota_line(cluster_queue, tree, fr, requested, holds_reservation=holds_reservation)
        if queue_inactive and not holds_reservation and line.verdict is not Verdict.NEVER_FITS:
            line = replace(line, verdict=Verdict.QUEUE_INACTIVE)
        lines.append(line)
    return QuotaReport(
        visibility=Visibility.AVAILABLE,
        cluster_queue=name(cluster_queue),
        lines=tuple(lines),
        verdict=overall_verdict(lines, cluster_queue),
        detail=""
        if tree is not None
        else "cohort members could not be read; cohort figures are unknown",
    )


def overall_verdict(lines: Sequence[QuotaLine], cluster_queue: KubeObject) -> Verdict | None:
    """Best flavor per resource group, worst across groups (Kueue tries flavors in order)."""
    if not lines:
        return None
    rank = {
        Verdict.NEVER_FITS: 0,
        Verdict.QUEUE_INACTIVE: 1,
        Verdict.UNKNOWN: 2,
        Verdict.MUST_WAIT: 3,
        Verdict.FITS_NOW: 4,
    }
    by_group: dict[int, dict[str, list[Verdict]]] = {}
    groups = items(cluster_queue, "spec", "resourceGroups")
    for line in lines:
        group_index = next(
            (
                i
                for i, g in enumerate(groups)
                if isinstance(g.get("coveredResources"), list)
                and line.resource in g["coveredResources"]
            ),
            -1,
        )
        by_group.setdefault(group_index, {}).setdefault(line.flavor, []).append(line.verdict)
    worst = Verdict.FITS_NOW
    for flavors in by_group.values():
        best = max((min(vs, key=rank.__getitem__) for vs in flavors.values()), key=rank.__getitem__)
        worst = min(worst, best, key=rank.__getitem__)
    return worst
