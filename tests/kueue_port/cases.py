"""Kueue's own scheduler integration tests, ported as data: load the cases and make them unique.

Each file under `data/` ports one Go test file of the Kueue v0.17.0 module. A case names its Go test
(`go.file` and the ginkgo Describe/When/Context/It text path in `go.path`), lists plain Kubernetes
manifests (`objects`, created first, in order) and `steps` (more objects to create, changes, waits)
with the expected outcome after each. `fixtures` at the top of a file are groups of manifests that
cases share by name (`use: [name]`), the way the Go file's BeforeEach shares them.

Names in the data are the Go test's own (`prod-cq`, `on-demand`, namespace `ns`). `Case.materialize`
gives every cluster-scoped name and namespace a per-case prefix, and rewrites the references between
objects (cohort, parent cohort, flavors, admission checks, LocalQueue -> ClusterQueue, priority
class), so cases never share an object with each other or with tests/cluster's scenarios.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DATA_DIR = Path(__file__).parent / "data"
GO_MODULE = "sigs.k8s.io/kueue@v0.17.0"

CLUSTER_SCOPED = frozenset(
    {
        "ResourceFlavor",
        "ClusterQueue",
        "Cohort",
        "AdmissionCheck",
        "WorkloadPriorityClass",
        "PriorityClass",
        "Namespace",
    }
)
# The case's default namespace: workload references without "namespace/" are in it.
DEFAULT_NAMESPACE = "ns"

Manifest = dict[str, Any]


@dataclass(frozen=True)
class WorkloadExpectation:
    """Where a Workload holds quota: ClusterQueue, and per pod set the flavor of each resource."""

    cluster_queue: str | None = None
    # {pod set name: {resource: flavor}}; a plain {resource: flavor} applies to pod set "main".
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    # {pod set name: admitted pod count}
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Expectation:
    """What Kueue must show after a step; every listed fact must hold at the same time.

    - admitted: QuotaReserved=True and Admitted=True (Go ExpectWorkloadsToBeAdmitted /
      ExpectWorkloadToBeAdmittedAs), optionally in a ClusterQueue and flavors.
    - reserved: QuotaReserved=True (Go ExpectWorkloadsToHaveQuotaReservation); Admitted or not.
    - reserved_not_admitted: QuotaReserved=True and Admitted not True (admission checks pending).
    - pending: QuotaReserved=False with reason Pending (Go ExpectWorkloadsToBePending: the scheduler
      tried and the Workload did not fit).
    - not_reserved: no quota reservation, whatever the condition (StrictFIFO: Workloads behind the
      head get no scheduling attempt and so no condition).
    - frozen: {workload: cq}: QuotaReserved=False, reason Inadmissible, message "ClusterQueue <cq>
      is inactive" (Go ExpectWorkloadsToBeFrozen).
    - preempted: Evicted=True with reason Preempted (Go ExpectWorkloadsToBePreempted).
    - evicted: Evicted=True with this reason (ClusterQueueStopped, LocalQueueStopped, ...).
    - preempted_reason: the Preempted condition's reason (InClusterQueue, InCohortReclamation, ...).
    - pending_message: {workload: message}: the QuotaReserved=False message, "{prefix}" standing
      for the case's name prefix (flavor and ClusterQueue names in Kueue's messages carry it).
    - reserved_count: {cq: n}: exactly n of the case's Workloads hold quota in that ClusterQueue
      (Go ExpectReservingActiveWorkloadsMetric / admitted counts when the Go test does not say
      which ones).
    - weighted_share: {cq: n}: ClusterQueue status.fairSharing.weightedShare (fair sharing on).
    - borrowed: ClusterQueue status.flavorsReservation borrowed amounts {cq: {flavor: {res: qty}}}.
    - cluster_queue_active / local_queue_active: the Active condition's status ("True"/"False").
    - cluster_queue_status: the status Kueue's cache holds for a ClusterQueue (pending, active,
      terminating), read from Kueue's metric kueue_cluster_queue_status: a deleted ClusterQueue
      kept by its finalizer is "terminating" there while its Active condition is not rewritten.
    """

    admitted: dict[str, WorkloadExpectation] = field(default_factory=dict)
    reserved: dict[str, WorkloadExpectation] = field(default_factory=dict)
    reserved_not_admitted: dict[str, WorkloadExpectation] = field(default_factory=dict)
    pending: tuple[str, ...] = ()
    not_reserved: tuple[str, ...] = ()
    frozen: dict[str, str] = field(default_factory=dict)
    preempted: tuple[str, ...] = ()
    evicted: dict[str, str] = field(default_factory=dict)
    preempted_reason: dict[str, str] = field(default_factory=dict)
    borrowed: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    cluster_queue_active: dict[str, str] = field(default_factory=dict)
    local_queue_active: dict[str, str] = field(default_factory=dict)
    cluster_queue_status: dict[str, str] = field(default_factory=dict)
    pending_message: dict[str, str] = field(default_factory=dict)
    reserved_count: dict[str, int] = field(default_factory=dict)
    weighted_share: dict[str, int] = field(default_factory=dict)
    # Negative facts (not_reserved, pending) must still hold this long after all facts first hold.
    hold_seconds: float = 0.0

    def workload_names(self) -> set[str]:
        names: set[str] = set()
        for group in (self.admitted, self.reserved, self.reserved_not_admitted):
            names.update(group)
        names.update(self.pending, self.not_reserved, self.preempted)
        names.update(self.frozen, self.evicted, self.preempted_reason, self.pending_message)
        return names


@dataclass(frozen=True)
class Step:
    """One action, then (optionally) the expected state. Exactly one action per step, or none.

    Actions: create (manifests), delete (refs "Kind/name" or "Kind/namespace/name"), patch (a JSON
    merge patch of one object's spec/metadata: {ref, merge}), finish (Workload refs: Finished=True,
    as Go util.FinishWorkloads), finish_eviction (Workload refs: wait Evicted=True, then unset the
    quota reservation, as Go util.FinishEvictionForWorkloads does for the job controller that a bare
    Workload lacks), finish_eviction_in ({cq: n}: wait until n of the case's Workloads in that
    ClusterQueue are evicted and finish their eviction, as Go util.FinishEvictionOfWorkloadsInCQ),
    reclaimable_pods ({workload: [{name, count}]}), activate_checks (AdmissionCheck
    names: Active=True, as Go util.SetAdmissionCheckActive), check_state ({workload, check, state}).
    """

    name: str
    create: tuple[Manifest, ...] = ()
    delete: tuple[str, ...] = ()
    patch: tuple[dict[str, Any], ...] = ()
    finish: tuple[str, ...] = ()
    finish_eviction: tuple[str, ...] = ()
    finish_eviction_in: dict[str, int] = field(default_factory=dict)
    reclaimable_pods: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    activate_checks: tuple[str, ...] = ()
    check_state: tuple[dict[str, str], ...] = ()
    wait_next_second: tuple[str, ...] = ()
    expect: Expectation | None = None


@dataclass(frozen=True)
class Case:
    """One ported Go `It` (or DescribeTable Entry)."""

    id: str
    go_file: str
    go_path: tuple[str, ...]
    objects: tuple[Manifest, ...]
    steps: tuple[Step, ...]
    # Kueue Configuration the Go suite runs with that the case needs, e.g. {"fairSharing": {}}.
    requires_config: dict[str, Any] = field(default_factory=dict)
    divergent: str | None = None
    notes: str = ""

    @property
    def go_test(self) -> str:
        return f"{self.go_file}: " + " / ".join(self.go_path)

    def prefix(self) -> str:
        return f"kp-{self.id}-"

    def namespaces(self) -> list[str]:
        """Namespaces the case uses (data names): declared Namespace objects plus the default."""
        names = {DEFAULT_NAMESPACE}
        for manifest in self.all_manifests():
            if manifest["kind"] == "Namespace":
                names.add(manifest["metadata"]["name"])
            elif namespace := manifest["metadata"].get("namespace"):
                names.add(namespace)
        return sorted(names)

    def all_manifests(self) -> list[Manifest]:
        manifests = list(self.objects)
        for step in self.steps:
            manifests.extend(step.create)
        return manifests

    # -- making names unique ------------------------------------------------------------------
    def name(self, kind: str, name: str) -> str:
        """The materialized name of a data name (cluster-scoped kinds and namespaces)."""
        return self.prefix() + name if kind in CLUSTER_SCOPED else name

    def workload_key(self, ref: str) -> tuple[str, str]:
        """(namespace, name) of a Workload reference "name" or "namespace/name"."""
        namespace, _, name = ref.rpartition("/")
        return self.name("Namespace", namespace or DEFAULT_NAMESPACE), name

    def materialize(self, manifest: Manifest) -> Manifest:
        """A copy of `manifest` with per-case names and references."""
        out = copy.deepcopy(manifest)
        kind = out["kind"]
        meta = out.setdefault("metadata", {})
        if "name" in meta:
            meta["name"] = self.name(kind, meta["name"])
        if kind not in CLUSTER_SCOPED:
            meta["namespace"] = self.name("Namespace", meta.get("namespace", DEFAULT_NAMESPACE))
        spec = out.get("spec")
        if isinstance(spec, dict):
            self._rewrite_spec(kind, spec)
        labels = meta.get("labels") or {}
        if "kueue.x-k8s.io/priority-class" in labels:
            labels["kueue.x-k8s.io/priority-class"] = self.name(
                "WorkloadPriorityClass", labels["kueue.x-k8s.io/priority-class"]
            )
        return out

    def _rewrite_spec(self, kind: str, spec: dict[str, Any]) -> None:
        if kind in ("ClusterQueue", "Cohort"):
            for key, target in (("cohortName", "Cohort"), ("parentName", "Cohort")):
                if spec.get(key):
                    spec[key] = self.name(target, spec[key])
            for group in spec.get("resourceGroups") or []:
                for flavor in group.get("flavors") or []:
                    flavor["name"] = self.name("ResourceFlavor", flavor["name"])
            strategy = spec.get("admissionChecksStrategy") or {}
            for check in strategy.get("admissionChecks") or []:
                check["name"] = self.name("AdmissionCheck", check["name"])
                check["onFlavors"] = [
                    self.name("ResourceFlavor", f) for f in check.get("onFlavors") or []
                ] or None
                if check["onFlavors"] is None:
                    del check["onFlavors"]
        elif kind == "LocalQueue" and spec.get("clusterQueue"):
            spec["clusterQueue"] = self.name("ClusterQueue", spec["clusterQueue"])
        elif kind == "Workload":
            ref = spec.get("priorityClassRef")
            if ref and ref.get("kind") == "WorkloadPriorityClass":
                ref["name"] = self.name("WorkloadPriorityClass", ref["name"])
            for pod_set in spec.get("podSets") or []:
                pod_spec = pod_set.get("template", {}).get("spec", {})
                if pod_spec.get("priorityClassName"):
                    pod_spec["priorityClassName"] = self.name(
                        "PriorityClass", pod_spec["priorityClassName"]
                    )

    def materialized_objects(self) -> list[Manifest]:
        """Namespaces first (those the data does not declare get a bare Namespace), then objects."""
        declared = {m["metadata"]["name"] for m in self.all_manifests() if m["kind"] == "Namespace"}
        implicit = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            for ns in self.namespaces()
            if ns not in declared
        ]
        return [self.materialize(m) for m in implicit] + [self.materialize(m) for m in self.objects]


# -- loading ----------------------------------------------------------------------------------
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,30}[a-z0-9]$")


def _workload_expectations(raw: dict[str, Any] | None) -> dict[str, WorkloadExpectation]:
    out: dict[str, WorkloadExpectation] = {}
    for ref, spec in (raw or {}).items():
        spec = spec or {}
        flavors = spec.get("flavors") or {}
        if flavors and all(isinstance(v, str) for v in flavors.values()):
            flavors = {"main": flavors}
        counts = spec.get("counts") or {}
        out[ref] = WorkloadExpectation(spec.get("clusterQueue"), flavors, counts)
    return out


def _expectation(raw: dict[str, Any]) -> Expectation:
    known = {
        "admitted",
        "reserved",
        "reservedNotAdmitted",
        "pending",
        "notReserved",
        "frozen",
        "preempted",
        "evicted",
        "preemptedReason",
        "borrowed",
        "clusterQueueActive",
        "localQueueActive",
        "clusterQueueStatus",
        "pendingMessage",
        "reservedCount",
        "weightedShare",
        "holdSeconds",
    }
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"unknown expectation keys {sorted(unknown)}")
    return Expectation(
        admitted=_workload_expectations(raw.get("admitted")),
        reserved=_workload_expectations(raw.get("reserved")),
        reserved_not_admitted=_workload_expectations(raw.get("reservedNotAdmitted")),
        pending=tuple(raw.get("pending") or ()),
        not_reserved=tuple(raw.get("notReserved") or ()),
        frozen=dict(raw.get("frozen") or {}),
        preempted=tuple(raw.get("preempted") or ()),
        evicted=dict(raw.get("evicted") or {}),
        preempted_reason=dict(raw.get("preemptedReason") or {}),
        borrowed={
            cq: {f: {r: str(q) for r, q in res.items()} for f, res in fl.items()}
            for cq, fl in (raw.get("borrowed") or {}).items()
        },
        cluster_queue_active={k: str(v) for k, v in (raw.get("clusterQueueActive") or {}).items()},
        local_queue_active={k: str(v) for k, v in (raw.get("localQueueActive") or {}).items()},
        cluster_queue_status=dict(raw.get("clusterQueueStatus") or {}),
        pending_message=dict(raw.get("pendingMessage") or {}),
        reserved_count={k: int(v) for k, v in (raw.get("reservedCount") or {}).items()},
        weighted_share={k: int(v) for k, v in (raw.get("weightedShare") or {}).items()},
        hold_seconds=float(raw.get("holdSeconds", 0)),
    )


_ACTIONS = (
    "create",
    "delete",
    "patch",
    "finish",
    "finishEviction",
    "finishEvictionIn",
    "reclaimablePods",
    "activateChecks",
    "checkState",
    "waitNextSecond",
)


def _step(raw: dict[str, Any], fixtures: dict[str, list[Manifest]]) -> Step:
    actions = [a for a in _ACTIONS if a in raw] + (["use"] if "use" in raw else [])
    if len(actions) > 1:
        raise ValueError(f"step {raw.get('name')!r} has several actions {actions}")
    unknown = set(raw) - {*_ACTIONS, "use", "name", "expect"}
    if unknown:
        raise ValueError(f"step {raw.get('name')!r}: unknown keys {sorted(unknown)}")
    create = list(raw.get("create") or [])
    for name in raw.get("use") or []:
        create.extend(fixtures[name])
    patches = raw.get("patch") or ()
    if isinstance(patches, dict):
        patches = (patches,)
    checks = raw.get("checkState") or ()
    if isinstance(checks, dict):
        checks = (checks,)
    return Step(
        name=str(raw.get("name", "")),
        create=tuple(create),
        delete=tuple(raw.get("delete") or ()),
        patch=tuple(patches),
        finish=tuple(raw.get("finish") or ()),
        finish_eviction=tuple(raw.get("finishEviction") or ()),
        finish_eviction_in={k: int(v) for k, v in (raw.get("finishEvictionIn") or {}).items()},
        reclaimable_pods=dict(raw.get("reclaimablePods") or {}),
        activate_checks=tuple(raw.get("activateChecks") or ()),
        check_state=tuple(checks),
        wait_next_second=tuple(raw.get("waitNextSecond") or ()),
        expect=_expectation(raw["expect"]) if raw.get("expect") else None,
    )


def load_file(path: Path) -> list[Case]:
    """The cases of one data file."""
    doc = yaml.safe_load(path.read_text())
    go_file = doc["goFile"]
    fixtures: dict[str, list[Manifest]] = doc.get("fixtures") or {}
    cases = []
    for raw in doc["cases"]:
        case_id = raw["id"]
        if not _ID.match(case_id):
            raise ValueError(f"{path.name}: case id {case_id!r} must be a short DNS label")
        objects: list[Manifest] = []
        for name in raw.get("use") or []:
            objects.extend(fixtures[name])
        objects.extend(raw.get("objects") or [])
        cases.append(
            Case(
                id=case_id,
                go_file=go_file,
                go_path=tuple(raw["go"]),
                objects=tuple(objects),
                steps=tuple(_step(s, fixtures) for s in raw.get("steps") or []),
                requires_config=dict(raw.get("requiresConfig") or {}),
                divergent=raw.get("divergent"),
                notes=str(raw.get("notes", "")),
            )
        )
    return cases


def load_cases(data_dir: Path = DATA_DIR) -> list[Case]:
    """Every ported case, in file then data order. Case ids are unique across files."""
    cases: list[Case] = []
    for path in sorted(data_dir.glob("*.yaml")):
        cases.extend(load_file(path))
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"duplicate case id {case.id!r}")
        seen.add(case.id)
    return cases
