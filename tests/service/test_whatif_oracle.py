"""The oracle for whatIf: ask it, then submit the same Job and let the real Kueue (v0.17.0) decide.

For every ClusterQueue on the control plane (listed by kubectl as admin when the test runs, not
hard-coded) a LocalQueue in this test's own namespace, and per ClusterQueue a set of probes
derived from its spec (a small request, one above its largest nominal quota, each extended
resource it covers); plus ClusterQueues made here for the cases the scenarios lack: must wait
behind an admitted Job, borrowing within a cohort, an untolerated taint before a usable flavor,
node labels choosing between flavors, two resource groups, flavorFungibility (whenCanBorrow,
whenCanPreempt, preference PreemptionOverBorrowing), borrowing two Cohort levels up, and flavors
chosen by Kueue's borrowing level (the cohort subtree the quota comes from, after preemption).

Per case, in order: whatIf as alice (a tenant who may only `get` the LocalQueue; the service runs
with `--quota-disclosure quota`), then the Job as admin, then Kueue's decision on its Workload:
QuotaReserved=True with status.admission's flavor per resource, or QuotaReserved=False with
Kueue's message (pending) or reason Inadmissible (inactive queue). Asserted: the verdict, the
flavor per resource group, and the exact QuotaReserved=False message. Between cases the Job, its
Pods and Workload are removed and the test waits until every ClusterQueue's reservation is back
where it was, so the next whatIf reads the same state Kueue's scheduler holds.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.cli.render import WHAT_IF_QUERY
from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.kueue.exact import format_quantity, parse_quantity
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server
from tests.teardown import remove, remove_namespace
from tests.waiting import SETTLE_SECONDS

pytestmark = pytest.mark.cluster

NS = "whatif-oracle"
LABEL_KEY = "kueue-graphql.example/test"
LABEL = f"{LABEL_KEY}=whatif-oracle"
TEST_LABELS = {LABEL_KEY: "whatif-oracle"}
IMAGE = "registry.invalid/kueue-graphql/sleep:never-pulled"
DECISION_SECONDS = SETTLE_SECONDS


# -- the objects this test makes --------------------------------------------------------------


def _cq(
    name: str,
    groups: list[tuple[list[str], list[tuple[str, dict[str, dict[str, str]]]]]],
    *,
    cohort: str | None = None,
    fungibility: dict[str, str] | None = None,
    preemption: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A ClusterQueue: groups of (coveredResources, [(flavor, {resource: {nominalQuota...}})])."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": covered,
                "flavors": [
                    {"name": flavor, "resources": [{"name": r, **q} for r, q in quotas.items()]}
                    for flavor, quotas in flavors
                ],
            }
            for covered, flavors in groups
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    if fungibility:
        spec["flavorFungibility"] = fungibility
    if preemption:
        spec["preemption"] = preemption
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "labels": TEST_LABELS},
        "spec": spec,
    }


def _n(cpu: str, memory: str = "8Gi", **extra: str) -> dict[str, dict[str, str]]:
    quotas = {"cpu": {"nominalQuota": cpu}, "memory": {"nominalQuota": memory}}
    for key, value in extra.items():
        quotas[key] = {"nominalQuota": value}
    return quotas


PREEMPTION_OVER_BORROWING = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                             "preference": "PreemptionOverBorrowing"}  # fmt: skip

# Made here because the scenarios lack the case (each named for it). Flavors are the scenarios':
# standard (pool=standard), gpu-a100 (pool=gpu, tolerates the gpu taint), spot-tainted (taint).
OWN_CLUSTER_QUEUES = [
    _cq("oracle-wait-2cpu", [(["cpu", "memory"], [("standard", _n("2"))])]),
    _cq(
        "oracle-borrower",
        [
            (
                ["cpu", "memory"],
                [("standard", {"cpu": {"nominalQuota": "1", "borrowingLimit": "2"},
                               "memory": {"nominalQuota": "8Gi"}})],
            )
        ],
        cohort="oracle-cohort",
    ),
    _cq(
        "oracle-lender",
        [(["cpu", "memory"], [("standard", {"cpu": {"nominalQuota": "4", "lendingLimit": "2"},
                                            "memory": {"nominalQuota": "8Gi"}})])],
        cohort="oracle-cohort",
    ),
    _cq(
        "oracle-taint-then-standard",
        [(["cpu", "memory"], [("spot-tainted", _n("4")), ("standard", _n("4"))])],
    ),
    _cq("oracle-gpu-pool-or-standard", [(["cpu", "memory"], [("standard", _n("2")),
                                                             ("gpu-a100", _n("8"))])]),
    _cq(
        "oracle-two-groups",
        [
            (["cpu", "memory"], [("standard", _n("4"))]),
            (["example.com/gpu"], [("gpu-a100", {"example.com/gpu": {"nominalQuota": "2"}})]),
        ],
    ),
    _cq(
        "oracle-fungible",
        [(["cpu", "memory"], [("standard", {"cpu": {"nominalQuota": "1"},
                                            "memory": {"nominalQuota": "8Gi"}}),
                              ("gpu-a100", _n("4"))])],
        cohort="oracle-cohort",
        fungibility={"whenCanBorrow": "TryNextFlavor"},
    ),
    # Preemption within the queue, and stop the flavor search where preemption could help.
    _cq(
        "oracle-preempt-may-stop",
        [(["cpu", "memory"], [("standard", _n("2")), ("gpu-a100", _n("4"))])],
        fungibility={"whenCanPreempt": "MayStopSearch"},
        preemption={"withinClusterQueue": "LowerPriority"},
    ),
    _cq(
        "oracle-preempt-try-next",
        [(["cpu", "memory"], [("standard", _n("2")), ("gpu-a100", _n("4"))])],
        preemption={"withinClusterQueue": "LowerPriority"},
    ),
    # One flavor, preemption of lower priority within the queue (the priority-class cases).
    _cq(
        "oracle-preempt-within",
        [(["cpu", "memory"], [("standard", _n("2"))])],
        preemption={"withinClusterQueue": "LowerPriority"},
    ),
    # Under the Cohort tree oracle-root > oracle-mid (below), where only oracle-root holds quota.
    # Once a sibling borrows its gpu-a100 quota, the first flavor needs borrowing and the second
    # reclaiming (which finds no candidate: reclaimWithinCohort is Never). Kueue's default
    # (BorrowingOverPreemption) would borrow; this preference picks the second flavor and waits.
    _cq(
        "oracle-preempt-over-borrow",
        [(["cpu", "memory"], [("standard", _n("1")), ("gpu-a100", _n("2"))])],
        cohort="oracle-root",
        fungibility=PREEMPTION_OVER_BORROWING,
    ),
    _cq(
        "oracle-borrow-try-next-may-stop",
        [(["cpu", "memory"], [("standard", _n("1")),
                              ("gpu-a100", {"cpu": {"nominalQuota": "4", "lendingLimit": "0"},
                                            "memory": {"nominalQuota": "8Gi"}})])],
        cohort="oracle-root",
        fungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"},
    ),
    # Nothing to borrow in its own cohort (oracle-mid): the quota sits two levels up.
    _cq(
        "oracle-two-levels",
        [(["cpu", "memory"], [("standard", {"cpu": {"nominalQuota": "1", "borrowingLimit": "2"},
                                            "memory": {"nominalQuota": "8Gi"}})])],
        cohort="oracle-mid",
    ),
    # Under oracle-lv-root > oracle-lv-mid (below): 3 CPU fit in either flavor only by borrowing,
    # standard from oracle-lv-root (borrowing level 2), gpu-a100 from oracle-lv-mid (level 1).
    # Kueue prefers the lower level; as yes/no both borrow and the first flavor would win.
    _cq(
        "oracle-level-nearer",
        [(["cpu", "memory"], [("standard", _n("1")), ("gpu-a100", _n("1"))])],
        cohort="oracle-lv-mid",
        fungibility={"whenCanBorrow": "TryNextFlavor"},
    ),
    # Once oracle-lv-sibling borrows the tree's gpu-a100 quota, gpu-a100 waits for reclaiming
    # at level 1 (no candidate: reclaimWithinCohort is Never) while standard fits at level 2.
    # PreemptionOverBorrowing ranks the level first and waits; yes/no borrowing would fit.
    _cq(
        "oracle-level-preempt-over-borrow",
        [(["cpu", "memory"], [("standard", _n("1")), ("gpu-a100", _n("1"))])],
        cohort="oracle-lv-mid",
        fungibility=PREEMPTION_OVER_BORROWING,
    ),
    _cq("oracle-lv-sibling", [(["cpu", "memory"], [("gpu-a100", _n("0"))])],
        cohort="oracle-lv-root"),
    # A low-priority Job fills standard: preempting it leaves the request within the nominal
    # quota (borrowing level 0 after preemption), gpu-a100 fits by borrowing from
    # oracle-lv-flat (level 1). PreemptionOverBorrowing preempts; yes/no borrowing counted the
    # standard flavor as borrowing (before preemption) and took gpu-a100.
    _cq(
        "oracle-level-preempt-after",
        [(["cpu", "memory"], [("standard", _n("2")), ("gpu-a100", _n("0"))])],
        cohort="oracle-lv-flat",
        fungibility=PREEMPTION_OVER_BORROWING,
        preemption={"withinClusterQueue": "LowerPriority"},
    ),
]  # fmt: skip
OWN_NAMES = {cq["metadata"]["name"] for cq in OWN_CLUSTER_QUEUES}


def _cohort(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": name, "labels": TEST_LABELS},
        "spec": spec,
    }


def _quota_spec(flavor: str, cpu: str) -> dict[str, Any]:
    """A Cohort's spec holding `cpu` CPU (and 16Gi) of one flavor."""
    resources = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": "16Gi"}]
    return {
        "resourceGroups": [
            {"coveredResources": ["cpu", "memory"],
             "flavors": [{"name": flavor, "resources": resources}]}
        ]
    }  # fmt: skip


# A two-level Cohort tree; the root holds 4 CPU of standard, the middle level nothing.
OWN_COHORTS = [
    _cohort("oracle-root", _quota_spec("standard", "4")),
    _cohort("oracle-mid", {"parentName": "oracle-root"}),
    # A second tree for the borrowing levels: standard quota at the root (level 2), gpu-a100 in
    # the middle (level 1, the height of the subtree the borrowed quota comes from).
    _cohort("oracle-lv-root", _quota_spec("standard", "4")),
    _cohort("oracle-lv-mid", {"parentName": "oracle-lv-root", **_quota_spec("gpu-a100", "2")}),
    _cohort("oracle-lv-flat", _quota_spec("gpu-a100", "2")),
]  # fmt: skip


def _namespace_objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": TEST_LABELS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice-tenant-reader", "namespace": NS},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "kueue-graphql-tenant-reader",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}
            ],
        },
    ]


def _local_queue(name: str, cluster_queue: str, **spec: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": NS, "labels": TEST_LABELS},
        "spec": {"clusterQueue": cluster_queue, **spec},
    }


def lq_for(cluster_queue: str) -> str:
    return f"lq-{cluster_queue}"[:63]


# -- probes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """One Workload-to-be: `count` Pods asking `requests` each in pod set "main", plus
    `more_pod_sets` (name, count, requests). One pod set is submitted as a batch/v1 Job; several
    as a Workload (a Job has only one)."""

    id: str
    local_queue: str
    count: int
    requests: dict[str, str]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ()
    expect: str | None = None
    """For the named cases: the verdict the case exists to show (checked besides the oracle)."""
    more_pod_sets: tuple[tuple[str, int, dict[str, str]], ...] = ()
    priority_class: str | None = None
    """A WorkloadPriorityClass: whatIf's podSets priorityClass, the Job's priority-class label."""

    def _pod_sets(self) -> list[tuple[str, int, dict[str, str]]]:
        return [("main", self.count, self.requests), *self.more_pod_sets]

    def pod_set_inputs(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "count": count,
                "requests": [{"resource": r, "quantity": q} for r, q in requests.items()],
                "nodeSelector": [{"key": k, "value": v} for k, v in self.node_selector.items()],
                "tolerations": [dict(t) for t in self.tolerations],
                **({"priorityClass": self.priority_class} if self.priority_class else {}),
            }
            for name, count, requests in self._pod_sets()
        ]

    def _pod_spec(self, requests: dict[str, str]) -> dict[str, Any]:
        pod: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "command": ["sleep", "3600"],
                    # Extended resources need limits equal to requests.
                    "resources": {"requests": dict(requests), "limits": dict(requests)},
                }
            ],
        }
        if self.node_selector:
            pod["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            pod["tolerations"] = [dict(t) for t in self.tolerations]
        return pod

    def manifest(self, name: str) -> dict[str, Any]:
        if self.more_pod_sets:
            return {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": name, "namespace": NS, "labels": TEST_LABELS},
                "spec": {
                    "queueName": self.local_queue,
                    "podSets": [
                        {"name": n, "count": c, "template": {"spec": self._pod_spec(r)}}
                        for n, c, r in self._pod_sets()
                    ],
                },
            }
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": NS,
                "labels": {
                    **TEST_LABELS,
                    "kueue.x-k8s.io/queue-name": self.local_queue,
                    **(
                        {"kueue.x-k8s.io/priority-class": self.priority_class}
                        if self.priority_class
                        else {}
                    ),
                },
            },
            "spec": {
                "parallelism": self.count,
                "completions": self.count,
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": TEST_LABELS},
                    "spec": self._pod_spec(self.requests),
                },
            },
        }


def _largest_nominal(cq: dict[str, Any], resource: str) -> Any:
    values = [
        parse_quantity(str(r.get("nominalQuota", "0")))
        for g in cq["spec"].get("resourceGroups") or []
        for f in g.get("flavors") or []
        for r in f.get("resources") or []
        if r.get("name") == resource
    ]
    return max(values) if values else None


def probes_for(cq: dict[str, Any]) -> list[Probe]:
    """Derived from the ClusterQueue's spec, so a new scenario ClusterQueue gets probed too:
    a small request, one CPU above its largest nominal quota, one of each extended resource."""
    name = cq["metadata"]["name"]
    lq = lq_for(name)
    covered = {r for g in cq["spec"].get("resourceGroups") or [] for r in g["coveredResources"]}
    base = {r: q for r, q in (("cpu", "100m"), ("memory", "64Mi")) if r in covered} or {
        "cpu": "100m"
    }
    out = [Probe(f"{name}/small", lq, 1, base)]
    cpu = _largest_nominal(cq, "cpu")
    if cpu is not None:
        above = format_quantity(cpu + 1, "cpu")
        out.append(Probe(f"{name}/above-largest-nominal", lq, 1, {**base, "cpu": above}))
    for resource in sorted(covered - {"cpu", "memory", "pods"}):
        out.append(Probe(f"{name}/one-{resource}", lq, 1, {**base, resource: "1"}))
    return out


@dataclass(frozen=True)
class Case:
    probe: Probe
    before: tuple[Probe, ...] = ()
    """Jobs submitted (and admitted) first, so the probe meets their quota held."""


SPOT = {"key": "kueue-graphql.example/spot", "operator": "Equal", "value": "true",
        "effect": "NoSchedule"}  # fmt: skip
CPU = {"cpu": "1", "memory": "64Mi"}

NAMED_CASES = [
    Case(Probe("fits-now", lq_for("oracle-wait-2cpu"), 1, CPU, expect="FITS_NOW")),
    Case(Probe("never-fits: 3 Pods x 1 CPU > 2", lq_for("oracle-wait-2cpu"), 3, CPU,
               expect="NEVER_FITS")),
    Case(
        Probe("must-wait behind an admitted Job", lq_for("oracle-wait-2cpu"), 1, CPU,
              expect="MUST_WAIT"),
        before=(Probe("blocker", lq_for("oracle-wait-2cpu"), 2, CPU, expect="FITS_NOW"),),
    ),
    Case(Probe("resource not in the ClusterQueue", lq_for("oracle-wait-2cpu"), 1,
               {**CPU, "example.com/gpu": "1"}, expect="NEVER_FITS")),
    Case(Probe("stopped LocalQueue", "lq-oracle-stopped", 1, CPU, expect="QUEUE_INACTIVE")),
    Case(Probe("untolerated taint, only flavor", lq_for("cq-spot-only"), 1, CPU,
               expect="NEVER_FITS")),
    Case(Probe("untolerated taint, next flavor", lq_for("oracle-taint-then-standard"), 1, CPU,
               expect="FITS_NOW")),
    Case(Probe("tolerated taint", lq_for("oracle-taint-then-standard"), 1, CPU,
               tolerations=(SPOT,), expect="FITS_NOW")),
    Case(Probe("borrowing within a cohort", lq_for("oracle-borrower"), 2, CPU,
               expect="FITS_NOW")),
    Case(Probe("beyond the borrowing limit", lq_for("oracle-borrower"), 4, CPU,
               expect="NEVER_FITS")),
    Case(
        Probe("borrowing, lender busy", lq_for("oracle-borrower"), 3, CPU, expect="MUST_WAIT"),
        before=(Probe("lender-busy", lq_for("oracle-lender"), 4, CPU, expect="FITS_NOW"),),
    ),
    Case(Probe("node selector picks the second flavor", lq_for("oracle-gpu-pool-or-standard"),
               1, CPU, node_selector={"kueue-graphql.example/pool": "gpu"}, expect="FITS_NOW")),
    Case(Probe("too big for the first flavor", lq_for("oracle-gpu-pool-or-standard"), 3, CPU,
               expect="FITS_NOW")),
    Case(Probe("node selector no flavor has", lq_for("oracle-gpu-pool-or-standard"), 1, CPU,
               node_selector={"kueue-graphql.example/pool": "spot"}, expect="NEVER_FITS")),
    Case(Probe("two resource groups", lq_for("oracle-two-groups"), 1,
               {**CPU, "example.com/gpu": "1"}, expect="FITS_NOW")),
    Case(Probe("whenCanBorrow: TryNextFlavor", lq_for("oracle-fungible"), 2, CPU,
               expect="FITS_NOW")),
    Case(
        Probe("preference: PreemptionOverBorrowing", lq_for("oracle-preempt-over-borrow"), 2,
              CPU),
        before=(Probe("borrows its gpu-a100 quota", lq_for("oracle-borrow-try-next-may-stop"), 6,
                      CPU, node_selector={"kueue-graphql.example/pool": "gpu"},
                      expect="FITS_NOW"),),
    ),
    Case(Probe("whenCanPreempt: MayStopSearch, whenCanBorrow: TryNextFlavor",
               lq_for("oracle-borrow-try-next-may-stop"), 2, CPU, expect="FITS_NOW")),
    Case(Probe("borrowing from the grandparent cohort", lq_for("oracle-two-levels"), 3, CPU,
               expect="FITS_NOW")),
    Case(Probe("beyond the borrowing limit, two levels", lq_for("oracle-two-levels"), 4, CPU,
               expect="NEVER_FITS")),
    # The borrowing level decides (yes/no borrowing gives the other answer).
    Case(Probe("whenCanBorrow: TryNextFlavor, borrow from the parent over the grandparent",
               lq_for("oracle-level-nearer"), 3, CPU, expect="FITS_NOW")),
    Case(
        Probe("PreemptionOverBorrowing: reclaim at level 1 over borrowing at level 2",
              lq_for("oracle-level-preempt-over-borrow"), 3, CPU, expect="MUST_WAIT"),
        before=(Probe("borrows the tree's gpu-a100 quota", lq_for("oracle-lv-sibling"), 4, CPU,
                      expect="FITS_NOW"),),
    ),
    # Several pod sets (a Workload): earlier pod sets' usage counts against later ones.
    Case(Probe("second pod set over the quota with the first", lq_for("oracle-wait-2cpu"), 1,
               CPU, more_pod_sets=(("workers", 2, CPU),), expect="NEVER_FITS")),
    Case(Probe("two pod sets fit together", lq_for("oracle-wait-2cpu"), 1,
               {"cpu": "500m"}, more_pod_sets=(("workers", 1, CPU),), expect="FITS_NOW")),
    Case(Probe("second pod set takes the next flavor", lq_for("oracle-gpu-pool-or-standard"), 2,
               CPU, more_pod_sets=(("workers", 1, CPU),), expect="FITS_NOW")),
    # Preemption could help in the first flavor, but nothing of lower priority is admitted.
    Case(
        Probe("whenCanPreempt: MayStopSearch, nothing to preempt",
              lq_for("oracle-preempt-may-stop"), 1, CPU),
        before=(Probe("same-priority", lq_for("oracle-preempt-may-stop"), 2, CPU,
                      expect="FITS_NOW"),),
    ),
    Case(
        Probe("whenCanPreempt: TryNextFlavor, nothing to preempt",
              lq_for("oracle-preempt-try-next"), 1, CPU),
        before=(Probe("same-priority", lq_for("oracle-preempt-try-next"), 2, CPU,
                      expect="FITS_NOW"),),
    ),
]  # fmt: skip


# -- Kueue's decision -------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    verdict: str
    flavors: dict[str, str]
    message: str | None
    reason: str


def _workload_of(cluster: Cluster, job: str) -> dict[str, Any] | None:
    listed = cluster.get_json("workloads", "-n", NS)
    for wl in listed["items"]:
        owners = wl["metadata"].get("ownerReferences") or []
        if wl["metadata"]["name"] == job or any(o.get("name") == job for o in owners):
            return dict(wl)
    return None


def _condition(wl: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (wl.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


_NEVER = (
    re.compile(r"insufficient quota for \S+ in flavor (\S+), previously considered podsets"),
    re.compile(r"untolerated taint \{[^}]*\} in flavor (\S+)"),
    re.compile(r"flavor (\S+) doesn't match node affinity"),
    re.compile(r"flavor (\S+) not found"),
)
_WAIT = re.compile(r"insufficient unused quota for \S+ in flavor (\S+), \S+ more needed")


def _verdict_from_message(message: str, cq: dict[str, Any] | None) -> str:
    """Kueue writes the reasons of every flavor it tried (sorted, comma-joined). A pod set never
    fits when a resource is in no group, or when every flavor of some group has a reason that
    no release of quota lifts; otherwise it waits."""
    if "unavailable in ClusterQueue" in message or "doesn't match ClusterQueue" in message:
        return "NEVER_FITS"
    never = {m.group(1) for pattern in _NEVER for m in pattern.finditer(message)}
    waits = {m.group(1) for m in _WAIT.finditer(message)}
    for group in ((cq or {}).get("spec") or {}).get("resourceGroups") or []:
        flavors = {f["name"] for f in group.get("flavors") or []}
        if flavors and flavors <= never:
            return "NEVER_FITS"
    return "MUST_WAIT" if waits else "NEVER_FITS"


async def decision(cluster: Cluster, job: str, cq: dict[str, Any] | None) -> Decision:
    deadline = time.monotonic() + DECISION_SECONDS
    last: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        wl = _workload_of(cluster, job)
        last = wl
        cond = _condition(wl, "QuotaReserved") if wl else None
        if wl is not None and cond is not None:
            if cond.get("status") == "True":
                assignments = (wl["status"].get("admission") or {}).get("podSetAssignments") or []
                flavors = {
                    f"{a['name']}/{k}": str(v)
                    for a in assignments
                    for k, v in (a.get("flavors") or {}).items()
                }
                return Decision("FITS_NOW", flavors, None, str(cond.get("reason")))
            message = str(cond.get("message") or "")
            if message:
                if cond.get("reason") == "Inadmissible":
                    return Decision("QUEUE_INACTIVE", {}, message, "Inadmissible")
                return Decision(
                    _verdict_from_message(message, cq), {}, message, str(cond.get("reason"))
                )
        await asyncio.sleep(0.5)
    pytest.fail(f"Kueue decided nothing on Job {job} within {DECISION_SECONDS}s: {last}")


# -- the setting ------------------------------------------------------------------------------


def _apply(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    cluster.apply_objects(objects)


def _remove_jobs(cluster: Cluster) -> None:
    cluster.kubectl("delete", "jobs", "-n", NS, "--all", "--cascade=background", "--wait=false",
                    check=False)  # fmt: skip
    # The Workloads submitted as such (several pod sets) have no Job to take them along.
    cluster.kubectl("delete", "workloads", "-n", NS, "-l", LABEL, "--wait=false", check=False)
    # No kubelet: a deleted Pod stays Terminating until removed by force.
    cluster.kubectl("delete", "pods", "-n", NS, "--all", "--force", "--grace-period=0",
                    "--ignore-not-found", check=False)  # fmt: skip


def _reservations(cluster: Cluster) -> dict[str, Any]:
    return {
        cq["metadata"]["name"]: (
            (cq.get("status") or {}).get("reservingWorkloads", 0),
            json.dumps((cq.get("status") or {}).get("flavorsReservation") or [], sort_keys=True),
        )
        for cq in cluster.get_json("clusterqueues")["items"]
    }


async def _settle(cluster: Cluster, baseline: dict[str, Any]) -> None:
    """Until no Workload of this namespace is left and every ClusterQueue reserves what it did
    before this test: then the ClusterQueues' status is the state Kueue's scheduler holds."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        left = cluster.get_json("workloads", "-n", NS)["items"]
        if not left and _reservations(cluster) == baseline:
            return
        if left:
            _remove_jobs(cluster)
        await asyncio.sleep(0.5)
    pytest.fail(
        f"ClusterQueue reservations did not return to the baseline: {_reservations(cluster)}"
    )


def _cleanup(cluster: Cluster) -> None:
    """The namespace with its Jobs, Pods, Workloads and LocalQueues, then this test's
    ClusterQueues, waited until gone."""
    remove_namespace(cluster, NS)
    remove(cluster, "clusterqueues", "-l", LABEL)
    remove(cluster, "cohorts", "-l", LABEL)


@pytest.fixture(scope="module")
def oracle_setting(cluster: Cluster) -> Iterator[list[dict[str, Any]]]:
    """This test's namespace, its ClusterQueues, and a LocalQueue there for every ClusterQueue.
    Yields every ClusterQueue as admin lists them."""
    _cleanup(cluster)  # what an interrupted earlier run left
    try:
        _apply(cluster, _namespace_objects() + OWN_COHORTS + OWN_CLUSTER_QUEUES)
        cqs = cluster.get_json("clusterqueues")["items"]
        queues = [
            _local_queue(lq_for(cq["metadata"]["name"]), cq["metadata"]["name"]) for cq in cqs
        ]
        queues.append(_local_queue("lq-oracle-stopped", "oracle-wait-2cpu", stopPolicy="Hold"))
        _apply(cluster, queues)
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            own = [
                c
                for c in cluster.get_json("clusterqueues")["items"]
                if c["metadata"]["name"] in OWN_NAMES
            ]
            if len(own) == len(OWN_NAMES) and all(
                _condition(c, "Active") and _condition(c, "Active")["status"] == "True" for c in own
            ):  # type: ignore[index]
                break
            time.sleep(0.5)
        else:
            pytest.fail("this test's ClusterQueues did not become Active")
        yield cluster.get_json("clusterqueues")["items"]
    finally:
        _cleanup(cluster)


@pytest.fixture(scope="module")
async def disclosing_server(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(
        service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA
    ) as started:
        yield started


# -- the oracle -------------------------------------------------------------------------------


def _what_if_flavors(answer: dict[str, Any]) -> dict[str, str]:
    return {
        f"{pod_set['name']}/{resource}": group["flavor"]
        for pod_set in answer["podSets"]
        for group in pod_set["resourceGroups"]
        if group["flavor"] is not None
        for resource in group["resources"]
    }


def _what_if_borrows(answer: dict[str, Any]) -> bool:
    return answer["verdict"] == "FITS_NOW" and any(
        group["borrows"] for pod_set in answer["podSets"] for group in pod_set["resourceGroups"]
    )


async def _kueue_borrows(
    cluster: Cluster, cq_name: str, baseline: dict[str, Any], before: Any
) -> bool:
    """Whether the admitted probe borrows: its ClusterQueue's status, once it counts the
    probe, shows more quota borrowed than `before` (just before the probe was submitted)."""
    before_count = baseline[cq_name][0]
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        cq = cluster.get_json("clusterqueue", cq_name)
        status = cq.get("status") or {}
        own = sum(
            1
            for wl in cluster.get_json("workloads", "-n", NS)["items"]
            if (_condition(wl, "QuotaReserved") or {}).get("status") == "True"
            and (wl.get("status") or {}).get("admission", {}).get("clusterQueue") == cq_name
        )
        if status.get("reservingWorkloads", 0) == before_count + own and own >= 1:
            return _borrowed(status.get("flavorsReservation") or []) > before
        await asyncio.sleep(0.3)
    pytest.fail(f"ClusterQueue {cq_name}'s status did not count the admitted probe")


def _borrowed(flavors: list[dict[str, Any]]) -> Any:
    return sum(
        parse_quantity(str(r.get("borrowed", "0")))
        for f in flavors
        for r in f.get("resources") or []
    )


async def _ask(server: Server, cluster: Cluster, probe: Probe) -> dict[str, Any]:
    body = await server.query(
        WHAT_IF_QUERY,
        {"namespace": NS, "localQueue": probe.local_queue, "podSets": probe.pod_set_inputs()},
        token=cluster.token("alice"),
    )
    assert "errors" not in body, body
    answer: dict[str, Any] = body["data"]["whatIf"]
    return answer


async def _submit_admitted(cluster: Cluster, probe: Probe, job: str, cq: dict[str, Any]) -> None:
    _apply(cluster, [probe.manifest(job)])
    got = await decision(cluster, job, cq)
    assert got.verdict == "FITS_NOW", f"{probe.id}: the setup Job was not admitted: {got}"


@dataclass
class Outcome:
    case: str
    what_if: tuple[str, dict[str, str], str | None, bool]
    """verdict, flavor per pod set/resource, QuotaReserved=False message, borrows"""
    kueue: tuple[str, dict[str, str], str | None, bool]


async def _run(server: Server, cluster: Cluster, case: Case, cqs: dict[str, dict[str, Any]],
               baseline: dict[str, Any], index: int) -> Outcome:  # fmt: skip
    lq = cluster.get_json("localqueue", case.probe.local_queue, "-n", NS)
    cq = cqs.get(lq["spec"]["clusterQueue"])
    try:
        for n, before in enumerate(case.before):
            before_lq = cluster.get_json("localqueue", before.local_queue, "-n", NS)
            await _submit_admitted(
                cluster, before, f"c{index:02d}-before-{n}", cqs[before_lq["spec"]["clusterQueue"]]
            )
        await _wait_status_caught_up(cluster, len(case.before))
        answer = await _ask(server, cluster, case.probe)
        borrowed_before = _borrowed(
            (cluster.get_json("clusterqueue", cq["metadata"]["name"]).get("status") or {}).get(
                "flavorsReservation"
            )
            or []
            if cq is not None
            else []
        )
        job = f"c{index:02d}-probe"
        _apply(cluster, [case.probe.manifest(job)])
        got = await decision(cluster, job, cq)
        borrows = (
            await _kueue_borrows(cluster, cq["metadata"]["name"], baseline, borrowed_before)
            if got.verdict == "FITS_NOW" and cq is not None
            else False
        )
    finally:
        _remove_jobs(cluster)
        await _settle(cluster, baseline)
    return Outcome(
        case.probe.id,
        (answer["verdict"], _what_if_flavors(answer) if answer["verdict"] == "FITS_NOW" else {},
         answer["kueueMessage"], _what_if_borrows(answer)),
        (got.verdict, got.flavors, got.message, borrows),
    )  # fmt: skip


async def _wait_status_caught_up(cluster: Cluster, admitted: int) -> None:
    """The setup Jobs' quota shows in their ClusterQueues' status (what whatIf reads)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        held = sum(
            1
            for wl in cluster.get_json("workloads", "-n", NS)["items"]
            if (_condition(wl, "QuotaReserved") or {}).get("status") == "True"
        )
        counted = sum(
            (cq.get("status") or {}).get("reservingWorkloads", 0)
            for cq in cluster.get_json("clusterqueues")["items"]
            if cq["metadata"]["name"] in OWN_NAMES
        )
        if held == admitted and counted >= admitted:
            return
        await asyncio.sleep(0.3)
    pytest.fail("the setup Jobs' reservations did not show in the ClusterQueues' status")


def _cases(cqs: list[dict[str, Any]]) -> list[Case]:
    scenario = [cq for cq in cqs if cq["metadata"]["name"] not in OWN_NAMES]
    return [Case(p) for cq in scenario for p in probes_for(cq)] + NAMED_CASES


async def test_what_if_agrees_with_kueue(
    disclosing_server: Server, cluster: Cluster, oracle_setting: list[dict[str, Any]]
) -> None:
    cqs = {cq["metadata"]["name"]: cq for cq in oracle_setting}
    scenario_names = sorted(set(cqs) - OWN_NAMES)
    assert len(scenario_names) >= 10, scenario_names  # the scenarios' ClusterQueues, from kubectl
    baseline = _reservations(cluster)
    cases = _cases(oracle_setting)
    outcomes = [
        await _run(disclosing_server, cluster, case, cqs, baseline, i)
        for i, case in enumerate(cases)
    ]
    disagreements = [o for o in outcomes if o.what_if != o.kueue]
    report = "\n".join(
        f"{o.case}:\n  whatIf {o.what_if}\n  Kueue  {o.kueue}" for o in disagreements
    )
    assert not disagreements, f"{len(disagreements)} of {len(outcomes)} cases disagree:\n{report}"
    # Each named case shows what it is named for (else the oracle proved less than it says).
    for case, outcome in zip(cases, outcomes, strict=True):
        if case.probe.expect is not None:
            assert outcome.kueue[0] == case.probe.expect, (case.probe.id, outcome.kueue)
    # Every scenario ClusterQueue was asked about and submitted to.
    probed = {o.case.split("/")[0] for o in outcomes if "/" in o.case}
    assert probed == set(scenario_names)
    verdicts = {o.kueue[0] for o in outcomes}
    assert {"FITS_NOW", "NEVER_FITS", "MUST_WAIT", "QUEUE_INACTIVE"} <= verdicts


# -- priorityClass: Kueue's preemption within the ClusterQueue ---------------------------------

# The scenarios' WorkloadPriorityClasses (tests/cluster/manifests/30-kueue-queues.yaml).
LOW, HIGH = "low-priority", "high-priority"


def _events_pending(cluster: Cluster, workload: str) -> list[str]:
    listed = cluster.get_json(
        "events", "-n", NS, "--field-selector", f"involvedObject.name={workload},reason=Pending"
    )
    return [str(e.get("message") or "") for e in listed["items"]]


def _preempted_events(cluster: Cluster, workload: str) -> list[str]:
    listed = cluster.get_json(
        "events", "-n", NS, "--field-selector", f"involvedObject.name={workload},reason=Preempted"
    )
    return [str(e.get("message") or "") for e in listed["items"]]


async def _preempted(cluster: Cluster, job: str) -> bool:
    """Kueue evicted the Job's Workload to make room: its Evicted condition with reason
    Preempted, or the `Preempted` Event Kueue records on it (preemption.go IssuePreemptions).
    The Event stays: on a loaded machine the evicted Workload may be admitted again (Evicted
    back to False) between two polls of the condition."""
    deadline = time.monotonic() + DECISION_SECONDS
    while time.monotonic() < deadline:
        wl = _workload_of(cluster, job)
        evicted = _condition(wl, "Evicted") if wl else None
        if evicted is not None and evicted.get("status") == "True":
            return evicted.get("reason") == "Preempted"
        if wl is not None and _preempted_events(cluster, wl["metadata"]["name"]):
            return True
        await asyncio.sleep(0.5)
    return False


async def _pending_message(cluster: Cluster, job: str) -> str:
    """The QuotaReserved=False message Kueue wrote for the Job's Workload: from its `Pending`
    Event (the condition may already be gone once the preempted Workload is evicted)."""
    deadline = time.monotonic() + DECISION_SECONDS
    while time.monotonic() < deadline:
        wl = _workload_of(cluster, job)
        if wl is not None:
            messages = _events_pending(cluster, wl["metadata"]["name"])
            if messages:
                return messages[0]
        await asyncio.sleep(0.5)
    pytest.fail(f"Kueue wrote no Pending event for Job {job}")


PRIORITY_CASES = [
    # (case, LocalQueue, probe priority class, Kueue preempts the blocker)
    ("high priority preempts within the ClusterQueue", lq_for("oracle-preempt-within"), HIGH,
     True),
    ("same priority: no preemption", lq_for("oracle-preempt-within"), LOW, False),
    ("high priority, no preemption policy", lq_for("oracle-wait-2cpu"), HIGH, False),
    ("PreemptionOverBorrowing: preempt to borrow nothing over borrowing at level 1",
     lq_for("oracle-level-preempt-after"), HIGH, True),
]  # fmt: skip


@pytest.mark.parametrize(("case", "queue", "priority_class", "preempts"), PRIORITY_CASES)
async def test_priority_class_agrees_with_kueue(
    disclosing_server: Server,
    cluster: Cluster,
    oracle_setting: list[dict[str, Any]],
    case: str,
    queue: str,
    priority_class: str,
    preempts: bool,
) -> None:
    """A low-priority Job holds the whole ClusterQueue; whatIf for a Job of `priority_class`
    (as alice), then the Job: Kueue preempts the blocker exactly when whatIf says it would,
    and writes the message whatIf predicts (". Pending the preemption of 1 workload(s)")."""
    baseline = _reservations(cluster)
    cqs = {cq["metadata"]["name"]: cq for cq in oracle_setting}
    cq = cqs[cluster.get_json("localqueue", queue, "-n", NS)["spec"]["clusterQueue"]]
    blocker = Probe("blocker", queue, 2, CPU, priority_class=LOW)
    probe = Probe(case, queue, 1, CPU, priority_class=priority_class)
    try:
        await _submit_admitted(cluster, blocker, "prio-blocker", cq)
        await _wait_status_caught_up(cluster, 1)
        answer = await _ask(disclosing_server, cluster, probe)
        assert answer["priorityClass"] == priority_class
        assert answer["priority"] == (1000 if priority_class == HIGH else 10)
        _apply(cluster, [probe.manifest("prio-probe")])
        message = await _pending_message(cluster, "prio-probe")
        kueue_preempted = await _preempted(cluster, "prio-blocker") if preempts else False
    finally:
        _remove_jobs(cluster)
        await _settle(cluster, baseline)
    assert answer["verdict"] == "MUST_WAIT", answer
    assert answer["kueueMessage"] == message, (answer, message)
    assert kueue_preempted is preempts
    assert answer["preempts"] == (1 if preempts else 0), answer
    assert ("Pending the preemption of 1 workload(s)" in message) is preempts


async def test_unknown_priority_class_is_not_found(
    disclosing_server: Server, cluster: Cluster, oracle_setting: list[dict[str, Any]]
) -> None:
    probe = Probe("no such class", lq_for("oracle-wait-2cpu"), 1, CPU, priority_class="no-such")
    body = await disclosing_server.query(
        WHAT_IF_QUERY,
        {"namespace": NS, "localQueue": probe.local_queue, "podSets": probe.pod_set_inputs()},
        token=cluster.token("alice"),
    )
    assert body["data"]["whatIf"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "NOT_FOUND", error
    assert "no-such" in error["message"]
    two = [*probe.pod_set_inputs(), {**probe.pod_set_inputs()[0], "name": "b",
                                     "priorityClass": "high-priority"}]  # fmt: skip
    body = await disclosing_server.query(
        WHAT_IF_QUERY,
        {"namespace": NS, "localQueue": probe.local_queue, "podSets": two},
        token=cluster.token("alice"),
    )
    assert body["errors"][0]["extensions"]["code"] == "BAD_REQUEST", body


async def test_a_raw_priority_is_the_workload_priority(
    disclosing_server: Server, cluster: Cluster, oracle_setting: list[dict[str, Any]]
) -> None:
    # whatIf's `priority` is a Workload's own spec.priority (the Go tests of Kueue set it; the
    # port in tests/kueue_port checks the verdicts it gives against the real Kueue).
    probe = Probe("raw priority", lq_for("oracle-wait-2cpu"), 1, CPU)
    asked = {"namespace": NS, "localQueue": probe.local_queue, "podSets": probe.pod_set_inputs()}
    body = await disclosing_server.query(
        WHAT_IF_QUERY, {**asked, "priority": 1000}, token=cluster.token("alice")
    )
    assert "errors" not in body, body
    assert (body["data"]["whatIf"]["priority"], body["data"]["whatIf"]["priorityClass"]) == (
        1000,
        None,
    )
    classed = [{**p, "priorityClass": HIGH} for p in probe.pod_set_inputs()]
    body = await disclosing_server.query(
        WHAT_IF_QUERY, {**asked, "podSets": classed, "priority": 5}, token=cluster.token("alice")
    )
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST", error
    assert "not both" in error["message"]
