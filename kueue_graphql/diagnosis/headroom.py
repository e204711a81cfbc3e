"""How much is left behind a queue: a ClusterQueue's figures per (flavor, resource), and the
totals of the cohort tree it belongs to. Pure; the quota arithmetic is `quota.quota_line` with
nothing requested, so `availableNow` is exactly what a request could get now and
`maximumCapacity` the most it could ever get (Kueue's Available / PotentialAvailable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from kueue_graphql.kueue.exact import ZERO, exact_arithmetic
from kueue_graphql.kueue.model import KubeObject, QuotaLine
from kueue_graphql.kueue.objects import name, text
from kueue_graphql.kueue.quota import FlavorResource, cohort_tree, quota_line, quotas_of

__all__ = ["CohortTotal", "Headroom", "headroom"]


@dataclass(frozen=True)
class CohortTotal:
    """One (flavor, resource) summed over the whole cohort tree the ClusterQueue is in."""

    cohort: str
    """The tree's root cohort."""
    flavor: str
    resource: str
    nominal_quota: Decimal
    """Every member ClusterQueue's nominal quota plus the Cohorts' own."""
    reserved: Decimal
    """Every member ClusterQueue's `flavorsReservation`."""
    cluster_queues: int
    """How many ClusterQueues share the tree (names are not given: they may be other teams')."""


@dataclass(frozen=True)
class Headroom:
    cluster_queue: str
    cohort: str | None
    lines: tuple[QuotaLine, ...]
    cohort_totals: tuple[CohortTotal, ...]
    detail: str = ""


def _root(cohort: str, cohorts: Sequence[KubeObject]) -> str:
    parents = {name(c): text(c, "spec", "parentName") for c in cohorts}
    seen: set[str] = set()
    while parents.get(cohort) and cohort not in seen:
        seen.add(cohort)
        cohort = str(parents[cohort])
    return cohort


def _in_tree(
    root: str, cluster_queues: Sequence[KubeObject], cohorts: Sequence[KubeObject]
) -> tuple[list[KubeObject], list[KubeObject]]:
    def root_of_cq(cq: KubeObject) -> str | None:
        cohort = text(cq, "spec", "cohortName") or text(cq, "spec", "cohort")
        return _root(cohort, cohorts) if cohort else None

    members = [cq for cq in cluster_queues if root_of_cq(cq) == root]
    groups = [c for c in cohorts if _root(name(c), cohorts) == root]
    return members, groups


@exact_arithmetic
def headroom(
    cluster_queue: KubeObject,
    cluster_queues: Sequence[KubeObject] | None,
    cohorts: Sequence[KubeObject] | None,
) -> Headroom:
    """`cluster_queues` / `cohorts` None when they could not be read: then the cohort
    figures are unknown (None in the lines, no totals) rather than guessed."""
    tree = cohort_tree(cluster_queue, cluster_queues, cohorts)
    quotas = quotas_of(cluster_queue)
    lines = tuple(quota_line(cluster_queue, tree, fr, ZERO) for fr in sorted(quotas))
    cohort = text(cluster_queue, "spec", "cohortName") or text(cluster_queue, "spec", "cohort")
    if cohort is None:
        return Headroom(name(cluster_queue), None, lines, ())
    if cluster_queues is None or cohorts is None:
        return Headroom(
            name(cluster_queue),
            cohort,
            lines,
            (),
            detail="cohort members could not be read; cohort figures are unknown",
        )
    root = _root(cohort, cohorts)
    others = [cq for cq in cluster_queues if name(cq) != name(cluster_queue)]
    members, groups = _in_tree(root, [*others, cluster_queue], cohorts)
    nominal: dict[FlavorResource, Decimal] = {}
    reserved: dict[FlavorResource, Decimal] = {}
    for obj in [*members, *groups]:
        for fr, quota in quotas_of(obj).items():
            nominal[fr] = nominal.get(fr, ZERO) + quota.nominal
    for cq in members:
        for line in (quota_line(cq, None, fr, ZERO) for fr in quotas_of(cq)):
            fr = (line.flavor, line.resource)
            reserved[fr] = reserved.get(fr, ZERO) + line.reserved
    totals = tuple(
        CohortTotal(root, flavor, res, nominal[(flavor, res)], reserved.get((flavor, res), ZERO),
                    len(members))
        for flavor, res in sorted(nominal)
    )  # fmt: skip
    return Headroom(name(cluster_queue), cohort, lines, totals)
