"""Does kueue-graphql agree with Kueue on Kueue's own scheduler tests? (issue 21, item 1: measure)

While the ported cases run (`runner.run_case` with a `StepObserver`), before each step that
creates Workloads, `whatIf` is asked for each of them (as alice, a tenant given
`kueue-graphql-tenant-reader` in the case's namespaces, the service serving with
`--quota-disclosure quota`); after the step's expectation holds, `diagnose` is asked for every
Workload of the case. Both are compared with what Kueue did, read from the live objects:

- whatIf: admitted or not (UNKNOWN claims nothing, so it never agrees), the flavor per pod set
  and resource, borrowing (the ClusterQueue reserves more than its nominal quota of an assigned
  flavor), how many Workloads Kueue preempted for it (Evicted/Preempted messages naming its
  UID), and, where a queue holds every Workload (namespaceSelector, inactive ClusterQueue, ...),
  Kueue's very message.
- diagnose (as `viewer`, see DIAGNOSE_USER): stage (from the Workload's conditions), layer
  (KUEUE while waiting for quota or checks), blocking object (the inactive ClusterQueue, the
  stopped LocalQueue), limiting factor (each flavor/resource Kueue's message calls
  insufficient is a quota line that does not fit), one source of arithmetic (issue 21 item 3,
  arithmetic.py: diagnose's, whatIf's and Kueue's current "N more needed" are the quota line's
  requested - availableNow),
  queue position (Kueue's visibility API, position in the ClusterQueue).

`python -m tests.kueue_port.agreement` runs every case against the running control plane
(`make cluster-up`) and writes AGREEMENT.md and disagreements.yaml (the xfail list of
test_agreement.py). The classes of a disagreement are assigned from the case's features (see
`classify`), not by hand: a reader checks them against "what differs".
"""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import yaml

from kueue_graphql.cli.render import WHAT_IF_QUERY, WHY_QUERY
from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.kueue.conditions import holds_quota_in
from kueue_graphql.kueue.exact import parse_quantity
from tests.cluster.driver import Cluster
from tests.http_limits import SERVER_CLIENT_LIMITS
from tests.kueue_port import arithmetic
from tests.kueue_port.cases import Case, Manifest, Step, load_cases
from tests.kueue_port.kube import Kube, KubeError, admin_client
from tests.kueue_port.runner import (
    CaseResult,
    Obj,
    case_namespaces,
    condition,
    is_true,
    run_case,
    wait_gone,
)
from tests.service.conftest import running_server

HERE = Path(__file__).parent
SETTLE_SECONDS = 15.0
REPORT = HERE / "AGREEMENT.md"
DISAGREEMENTS = HERE / "disagreements.yaml"
USER = "alice"
# diagnose is asked as `viewer` (cluster-wide read, tests/cluster/manifests/10-tenancy.yaml):
# as alice, `diagnose { quota }` is FORBIDDEN even with --quota-disclosure quota (diagnose does
# not use the disclosure policy), and the limiting factor could not be compared at all.
DIAGNOSE_USER = "viewer"
PARALLEL = 12
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"

# The classes of issue 21 (plus the "other" ones this measurement found).
COHORT_LIMITS = "limits elsewhere in the cohort tree"
QUEUEING = "queueing strategy"
TIME = "time"
STALE = "stale reasons"
FLAVORS = "several flavors"


@dataclass
class Check:
    """One comparison: whatIf for a Workload-to-be, or diagnose of a Workload after a step."""

    kind: str  # "whatIf" | "diagnose"
    step: int
    workload: str
    differs: list[str] = field(default_factory=list)
    cls: str = ""


@dataclass
class CaseAgreement:
    case: Case
    checks: list[Check] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # Comparisons that could not be made, and why (not disagreements).
    not_asked: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Check]:
        return [c for c in self.checks if c.kind == kind]

    def disagreements(self, kind: str | None = None) -> list[Check]:
        return [c for c in self.checks if c.differs and kind in (None, c.kind)]

    @property
    def agrees(self) -> bool:
        return not self.errors and not self.disagreements()

    def reason(self) -> str:
        """Class and what differs, short: the xfail reason."""
        if self.errors:
            return "error: " + "; ".join(self.errors)[:300]
        parts = []
        for c in self.disagreements():
            parts.append(f"[{c.cls}] {c.kind} {c.workload} step {c.step}: {c.differs[0]}")
        text = " | ".join(parts[:3]) + (f" (+{len(parts) - 3} more)" if len(parts) > 3 else "")
        return text


# -- reading a Workload manifest as whatIf input ------------------------------------------------
def pod_set_inputs(case: Case, wl: Manifest) -> list[dict[str, Any]]:
    spec = wl["spec"]
    priority_class = None
    ref = spec.get("priorityClassRef") or {}
    if ref.get("kind") == "WorkloadPriorityClass":
        priority_class = ref["name"]
    out = []
    for ps in spec["podSets"]:
        pod = (ps.get("template") or {}).get("spec") or {}
        requests: dict[str, Any] = {}
        for container in pod.get("containers") or []:
            for res, qty in ((container.get("resources") or {}).get("requests") or {}).items():
                requests[res] = requests.get(res, 0) + parse_quantity(str(qty))
        item: dict[str, Any] = {
            "name": ps.get("name", "main"),
            "count": ps.get("count", 1),
            "requests": [
                {"resource": r, "quantity": _quantity(q)} for r, q in sorted(requests.items())
            ],
            "nodeSelector": [
                {"key": k, "value": v} for k, v in (pod.get("nodeSelector") or {}).items()
            ],
            "tolerations": [dict(t) for t in pod.get("tolerations") or []],
        }
        cls = priority_class or pod.get("priorityClassName")
        if cls:
            item["priorityClass"] = cls
        out.append(item)
    return out


def _quantity(amount: Decimal) -> str:
    if amount == amount.to_integral_value():
        return str(int(amount))
    return f"{int(amount * 1000)}m"


def namespace_reader(case: Case) -> str:
    """The ClusterRole (and its binding) that lets the user `get` the case's Namespaces."""
    return f"{case.prefix()}{USER}-namespace-reader"


def _cluster_queue_of(case: Case, workload: Manifest) -> str | None:
    """The data name of the ClusterQueue a Workload manifest's LocalQueue points to."""
    namespace = case.materialize(workload)["metadata"]["namespace"]
    for m in case.all_manifests():
        if (
            m["kind"] == "LocalQueue"
            and m["metadata"]["name"] == workload["spec"].get("queueName")
            and case.materialize(m)["metadata"]["namespace"] == namespace
        ):
            return str(m["spec"].get("clusterQueue") or "") or None
    return None


def asked_in_creation_order(case: Case, step: Step) -> set[str]:
    """The Workloads of a step (data names) whose whatIf is asked just before they are created,
    after the earlier Workloads of the step were created and decided by Kueue, instead of before
    the step: those that follow an earlier Workload of the step in the same ClusterQueue, where
    the step's Workloads for that ClusterQueue come in Kueue's queue order (priority not
    increasing, so creation order; Kueue v0.17 pkg/queue orders by priority, then creation).
    Kueue takes them one after the other in that order, so when it gets to one, the earlier
    ones are admitted or pending: what whatIf must see. Where a later Workload has a higher
    priority, Kueue would take it first: those are asked before the step, as they are created
    together."""
    by_queue: dict[str, list[Manifest]] = {}
    for m in step.create:
        if m["kind"] == "Workload":
            cq = _cluster_queue_of(case, m)
            if cq is not None:
                by_queue.setdefault(cq, []).append(m)
    later: set[str] = set()
    for workloads in by_queue.values():
        priorities = [_priority(case, w) for w in workloads]
        if all(a >= b for a, b in itertools.pairwise(priorities)):
            later.update(w["metadata"]["name"] for w in workloads[1:])
    return later


def _priority(case: Case, workload: Manifest) -> int:
    spec = workload["spec"]
    ref = spec.get("priorityClassRef") or {}
    if ref.get("name"):
        for m in case.all_manifests():
            if m["kind"] == "WorkloadPriorityClass" and m["metadata"]["name"] == ref["name"]:
                return int(m.get("value") or 0)
    priority = spec.get("priority")
    return priority if isinstance(priority, int) else 0


# -- Kueue's side ------------------------------------------------------------------------------
def kueue_flavors(wl: Obj) -> dict[str, str]:
    admission = (wl.get("status") or {}).get("admission") or {}
    return {
        f"{psa['name']}/{res}": flavor
        for psa in admission.get("podSetAssignments") or []
        for res, flavor in (psa.get("flavors") or {}).items()
    }


def reserved_by(workloads: list[Obj], cluster_queue: str) -> dict[tuple[str, str], Decimal]:
    """(flavor, resource) -> what the Workloads holding quota in `cluster_queue` reserve, as
    Kueue counts it: each pod set's usage scaled to its count less its reclaimable Pods."""
    totals: dict[tuple[str, str], Decimal] = {}
    for wl in workloads:
        if not holds_quota_in(wl, cluster_queue):
            continue
        wl_status = wl.get("status") or {}
        reclaimable = {
            str(r.get("name")): int(r.get("count") or 0)
            for r in wl_status.get("reclaimablePods") or []
        }
        for psa in (wl_status.get("admission") or {}).get("podSetAssignments") or []:
            count = int(psa.get("count") or 0)
            left = max(count - reclaimable.get(str(psa.get("name")), 0), 0)
            for res, qty in (psa.get("resourceUsage") or {}).items():
                flavor = (psa.get("flavors") or {}).get(res)
                if flavor is None or count == 0:
                    continue
                key = (str(flavor), str(res))
                totals[key] = totals.get(key, Decimal(0)) + parse_quantity(str(qty)) * left / count
    return totals


def counts_reservations(cq: Obj | None, workloads: list[Obj]) -> bool:
    """The ClusterQueue's status counts the Workloads holding quota in it: their number and
    what they reserve (absent: nothing to wait for)."""
    if cq is None:
        return True
    name = cq["metadata"]["name"]
    cq_status = cq.get("status") or {}
    holding = sum(1 for wl in workloads if holds_quota_in(wl, name))
    if cq_status.get("reservingWorkloads", 0) != holding:
        return False
    reserved = {
        (str(f["name"]), str(r["name"])): parse_quantity(str(r.get("total", "0")))
        for f in cq_status.get("flavorsReservation") or []
        for r in f.get("resources") or []
    }
    expected = reserved_by(workloads, name)
    return all(reserved.get(key, Decimal(0)) == value for key, value in expected.items())


def settled_cluster_queue(kube: Kube, name: str, workloads: list[Obj]) -> Obj | None:
    """The ClusterQueue once its status counts the Workloads holding quota in it (bounded wait):
    Kueue writes a ClusterQueue's status about a second after it admits a Workload, so read at
    once its flavorsReservation may not count the Workload yet."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        cq = kube.get("ClusterQueue", name)
        if counts_reservations(cq, workloads) or time.monotonic() > deadline:
            return cq
        time.sleep(0.25)


def kueue_borrows(cq: Obj | None, flavors: dict[str, str]) -> bool:
    """The ClusterQueue reserves more than its nominal quota of an assigned flavor/resource."""
    if cq is None:
        return False
    nominal = {
        (f["name"], r["name"]): parse_quantity(str(r.get("nominalQuota", "0")))
        for g in cq["spec"].get("resourceGroups") or []
        for f in g.get("flavors") or []
        for r in f.get("resources") or []
    }
    reserved = {
        (f["name"], r["name"]): parse_quantity(str(r.get("total", "0")))
        for f in (cq.get("status") or {}).get("flavorsReservation") or []
        for r in f.get("resources") or []
    }
    assigned = {(flavor, key.split("/", 1)[1]) for key, flavor in flavors.items()}
    return any(reserved.get(k, 0) > nominal.get(k, 0) for k in assigned)


def preempted_for(workloads: list[Obj], uid: str) -> list[str]:
    """The Workloads Kueue evicted to admit the Workload with this UID."""
    out = []
    for wl in workloads:
        for kind in ("Preempted", "Evicted"):
            cond = condition(wl, kind) or {}
            if cond.get("status") == "True" and uid in str(cond.get("message", "")):
                out.append(wl["metadata"]["name"])
                break
    return sorted(out)


def expected_stages(wl: Obj) -> set[str]:
    """The diagnose stages that say what Kueue's conditions say."""
    if (wl.get("spec") or {}).get("active") is False:
        return {"DEACTIVATED"}
    if is_true(wl, "Finished"):
        return {"FINISHED_SUCCEEDED", "FINISHED_FAILED"}
    evicted = condition(wl, "Evicted") or {}
    if evicted.get("status") == "True":
        if is_true(wl, "QuotaReserved") or condition(wl, "QuotaReserved") is None:
            return {"PREEMPTED", "EVICTED"}
        # Evicted and requeued: Kueue waits to reserve quota again.
        return {"PREEMPTED", "EVICTED", "WAITING_FOR_QUOTA_RESERVATION"}
    if is_true(wl, "Admitted"):
        return {"ADMITTED_PODS_PENDING", "RUNNING"}
    if is_true(wl, "QuotaReserved"):
        return {"WAITING_FOR_ADMISSION_CHECKS"}
    return {"WAITING_FOR_QUOTA_RESERVATION"}


# Kueue's messages for a queue that holds every Workload (whatif/gates.py): whatIf must say them.
_QUEUE_GATE = re.compile(
    r"^(Workload namespace doesn't match ClusterQueue selector|ClusterQueue \S+ is inactive|"
    r"LocalQueue \S+ is inactive|ClusterQueue \S+ doesn't exist)$"
)
_INSUFFICIENT = re.compile(r"insufficient (unused )?quota for (\S+) in flavor (\S+?),")


# -- the service -------------------------------------------------------------------------------
class Service:
    """kueue-graphql on loopback in its own thread and event loop (the cases run in threads)."""

    def __init__(self, cluster: Cluster) -> None:
        self.url = ""
        self._cluster = cluster
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # reported by start()
            self._error = err
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with running_server(
            self._cluster.server_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA
        ) as server:
            self.url = server.url
            self._ready.set()
            await self._stop.wait()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(120)
        if self._error is not None or not self.url:
            raise RuntimeError(f"kueue-graphql did not start: {self._error}")

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)


@contextmanager
def running_service(cluster: Cluster) -> Iterator[Service]:
    service = Service(cluster)
    service.start()
    try:
        yield service
    finally:
        service.stop()


# -- the observer ------------------------------------------------------------------------------
class AgreementObserver:
    """A `runner.StepObserver`: asks whatIf and diagnose around the steps and compares."""

    def __init__(
        self, kube: Kube, user_kube: Kube, service_url: str, token: str, reader_token: str
    ) -> None:
        self.kube = kube
        # As the user: to wait until her RoleBindings take effect.
        self.user_kube = user_kube
        self.results: dict[str, CaseAgreement] = {}
        self.seconds: dict[str, float] = {}
        # whatIf as the tenant; diagnose as a cluster-wide reader (see DIAGNOSE_USER).
        self._tokens = {"whatIf": token, "diagnose": reader_token}
        self._http = httpx.Client(base_url=service_url, timeout=60, limits=SERVER_CLIENT_LIMITS)
        self._visibility = threading.Lock()
        self._predictions: dict[tuple[str, int, str], dict[str, Any] | None] = {}
        self._asked: dict[tuple[str, int, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self._http.close()

    def _query(self, query: str, variables: dict[str, Any], as_: str) -> dict[str, Any]:
        response = self._http.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {self._tokens[as_]}"},
        )
        body: dict[str, Any] = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise KubeError(f"GraphQL: HTTP {response.status_code} {body.get('errors')}")
        data: dict[str, Any] = body["data"]
        return data

    def _record(self, case: Case) -> CaseAgreement:
        with self._lock:
            return self.results.setdefault(case.id, CaseAgreement(case))

    def _timed(self, case: Case, start: float) -> None:
        with self._lock:
            self.seconds[case.id] = self.seconds.get(case.id, 0.0) + time.monotonic() - start

    # StepObserver
    def started(self, case: Case) -> None:
        start = time.monotonic()
        record = self._record(case)
        try:
            for _, namespace, _ in case_namespaces(case):
                self.kube.create(
                    {
                        "apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "RoleBinding",
                        "metadata": {"name": f"{USER}-tenant-reader", "namespace": namespace},
                        "roleRef": {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "ClusterRole",
                            "name": "kueue-graphql-tenant-reader",
                        },
                        "subjects": [
                            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}
                        ],
                    }
                )
            self._grant_namespaces(case)
            for _, namespace, _ in case_namespaces(case):
                self._wait_readable(namespace)
        except (KubeError, TimeoutError) as err:
            record.errors.append(f"RoleBinding: {err}")
        self._timed(case, start)

    def _grant_namespaces(self, case: Case) -> None:
        """`get` on the case's Namespaces for the user (a ClusterRole with resourceNames): whatIf
        reads a Namespace's labels as the caller to check a ClusterQueue's namespaceSelector,
        as kubectl would; a tenant without it gets no verdict there (NAMESPACE_NOT_READABLE)."""
        name = namespace_reader(case)
        namespaces = sorted(ns for _, ns, _ in case_namespaces(case))
        self.kube.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["namespaces"],
                        "resourceNames": namespaces,
                        "verbs": ["get"],
                    }
                ],
            }
        )
        self.kube.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}
                ],
            }
        )

    def finished(self, case: Case) -> None:
        name = namespace_reader(case)
        try:
            self.kube.delete("ClusterRoleBinding", name)
            self.kube.delete("ClusterRole", name)
        except KubeError as err:
            self._record(case).errors.append(f"ClusterRole {name}: {err}")

    def _wait_readable(self, namespace: str, seconds: float = 30.0) -> None:
        """Until the user may list LocalQueues in `namespace` (RBAC takes effect asynchronously)."""
        end = time.monotonic() + seconds
        while True:
            try:
                self.user_kube.list("LocalQueue", namespace)
                self.user_kube.get("Namespace", namespace)
                return
            except KubeError:
                if time.monotonic() > end:
                    raise TimeoutError(f"{USER} still may not read {namespace}") from None
                time.sleep(0.25)

    def _settle(self, case: Case, seconds: float = 30.0) -> None:
        """Until each ClusterQueue of the case counts in its status what the Workloads holding
        quota in it reserve (their number and their per-flavor totals, reclaimable Pods left
        out): Kueue writes a ClusterQueue's status after the Workloads', and whatIf and
        diagnose read the ClusterQueue's usage from there (bounded: if it never settles, they
        are asked anyway)."""
        cqs = [case.name("ClusterQueue", m["metadata"]["name"]) for m in case.all_manifests()
               if m["kind"] == "ClusterQueue"]  # fmt: skip
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            workloads = [
                wl for _, ns, _ in case_namespaces(case) for wl in self.kube.list("Workload", ns)
            ]
            if all(
                counts_reservations(self.kube.get("ClusterQueue", name), workloads) for name in cqs
            ):
                return
            time.sleep(0.25)

    def before_act(self, case: Case, index: int, step: Step) -> None:
        start = time.monotonic()
        if any(m["kind"] == "Workload" for m in step.create):
            self._settle(case)
        later = asked_in_creation_order(case, step)
        for manifest in step.create:
            if manifest["kind"] == "Workload" and manifest["metadata"]["name"] not in later:
                self._ask_what_if(case, index, manifest)
        self._timed(case, start)

    def before_create(self, case: Case, index: int, manifest: Manifest) -> None:
        """A Workload of the step that Kueue considers after earlier ones of the same step in
        its ClusterQueue (`asked_in_creation_order`): asked once they exist and Kueue decided
        them, so whatIf sees what Kueue sees when it gets to this one."""
        if manifest["kind"] != "Workload":
            return
        step = case.steps[index - 1]
        if manifest["metadata"]["name"] not in asked_in_creation_order(case, step):
            return
        start = time.monotonic()
        earlier = []
        for m in step.create:
            if m is manifest:
                break
            if m["kind"] == "Workload":
                wl = case.materialize(m)
                earlier.append((wl["metadata"]["namespace"], wl["metadata"]["name"]))
        self._wait_decided(earlier)
        self._settle(case)
        self._ask_what_if(case, index, manifest)
        self._timed(case, start)

    def _wait_decided(self, workloads: list[tuple[str, str]], seconds: float = 30.0) -> None:
        """Until Kueue wrote QuotaReserved (either way) on each (bounded: a Workload behind a
        StrictFIFO head may get no condition; then whatIf is asked anyway)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if all(
                condition(self.kube.get("Workload", name, ns), "QuotaReserved") is not None
                for ns, name in workloads
            ):
                return
            time.sleep(0.25)

    def _ask_what_if(self, case: Case, index: int, manifest: Manifest) -> None:
        record = self._record(case)
        wl = case.materialize(manifest)
        if (
            self.kube.get("LocalQueue", wl["spec"]["queueName"], wl["metadata"]["namespace"])
            is None
        ):
            # Its LocalQueue comes in the same step (or never): nothing to ask before.
            record.not_asked.append(
                f"whatIf {wl['metadata']['name']} step {index}: no LocalQueue yet"
            )
            return
        variables = {
            "namespace": wl["metadata"]["namespace"],
            "localQueue": wl["spec"]["queueName"],
            "podSets": pod_set_inputs(case, wl),
        }
        raw_priority = wl["spec"].get("priority")
        if isinstance(raw_priority, int) and not wl["spec"].get("priorityClassRef"):
            variables["priority"] = raw_priority  # the Go tests set spec.priority directly
        try:
            answer = self._query(WHAT_IF_QUERY, variables, "whatIf")["whatIf"]
        except (KubeError, httpx.HTTPError, ValueError) as err:
            record.errors.append(f"whatIf {wl['metadata']['name']} step {index}: {err}")
            answer = None
        self._predictions[(case.id, index, wl["metadata"]["name"])] = answer

    def after_expect(self, case: Case, index: int, step: Step) -> None:
        start = time.monotonic()
        record = self._record(case)
        try:
            # Kueue writes a ClusterQueue's usage (status) after the Workloads' conditions,
            # seconds later under load: Kueue's borrowing compared below, and diagnose's quota
            # lines (read from that status), are read once it counts them (README: "settled").
            self._settle(case)
            workloads = [
                wl for _, ns, _ in case_namespaces(case) for wl in self.kube.list("Workload", ns)
            ]
            if step.expect is not None:
                self._compare_what_if(case, index, step, workloads, record)
            for wl in workloads:
                record.checks.append(self._compare_diagnose(case, index, wl))
        except (KubeError, httpx.HTTPError, ValueError) as err:
            record.errors.append(f"after step {index}: {err}")
        self._timed(case, start)

    # whatIf
    def _compare_what_if(
        self, case: Case, index: int, step: Step, workloads: list[Obj], record: CaseAgreement
    ) -> None:
        by_name = {(w["metadata"]["namespace"], w["metadata"]["name"]): w for w in workloads}
        created = [case.materialize(m) for m in step.create if m["kind"] == "Workload"]
        for manifest in created:
            name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
            answer = self._predictions.pop((case.id, index, name), None)
            live = by_name.get((namespace, name))
            if answer is None or live is None:
                continue
            check = Check("whatIf", index, name)
            self._asked[(case.id, index, name)] = answer  # for arithmetic.what_if_differs
            alone = len(created) == 1
            check.differs = self._what_if_differs(answer, live, workloads, alone)
            if check.differs:
                check.cls = classify(case, step, manifest, check.differs)
            record.checks.append(check)

    def _what_if_differs(
        self, answer: dict[str, Any], live: Obj, workloads: list[Obj], alone: bool
    ) -> list[str]:
        out = []
        admitted = is_true(live, "QuotaReserved")
        predicted = answer["verdict"] == "FITS_NOW"
        reserved = condition(live, "QuotaReserved") or {}
        kueue_said = (
            "admitted"
            if admitted
            else f"not admitted ({reserved.get('message') or 'no condition'})"
        )
        if predicted != admitted or answer["verdict"] == "UNKNOWN":
            # UNKNOWN claims nothing: it is no agreement with a Workload Kueue did not admit.
            out.append(f"verdict {answer['verdict']} ({answer['summary']}); Kueue: {kueue_said}")
        message = str(reserved.get("message") or "") if reserved.get("status") == "False" else ""
        if not predicted and _QUEUE_GATE.search(message) and answer["kueueMessage"] != message:
            # A queue that holds every Workload: whatIf says the same reason as Kueue.
            out.append(f"kueueMessage {answer['kueueMessage']!r}; Kueue: {message!r}")
        preempted = preempted_for(workloads, live["metadata"]["uid"])
        named = sorted(t["name"] for t in answer.get("preemptionTargets") or [])
        if answer["preempts"] != len(preempted) or named != preempted:
            out.append(
                f"preempts {answer['preempts']} {named}; Kueue preempted {preempted or 'none'}"
            )
        if predicted and admitted:
            got = kueue_flavors(live)
            wanted = {
                f"{ps['name']}/{res}": group["flavor"]
                for ps in answer["podSets"]
                for group in ps["resourceGroups"]
                for res in group["resources"]
                if f"{ps['name']}/{res}" in got
            }
            if wanted != got:
                out.append(f"flavors {wanted}; Kueue: {got}")
            if not alone:  # the others of the step count in the ClusterQueue's reservation
                return out
            borrows = any(g["borrows"] for ps in answer["podSets"] for g in ps["resourceGroups"])
            cq_name = ((live.get("status") or {}).get("admission") or {}).get("clusterQueue")
            cq = settled_cluster_queue(self.kube, cq_name, workloads) if cq_name else None
            kueue = kueue_borrows(cq, got)
            if borrows != kueue:
                out.append(f"borrows {borrows}; Kueue's ClusterQueue over nominal: {kueue}")
        return out

    # diagnose
    def _compare_diagnose(self, case: Case, index: int, wl: Obj) -> Check:
        meta = wl["metadata"]
        check = Check("diagnose", index, meta["name"])
        d, wl = self._diagnose_as_of(wl)
        differs = check.differs
        stages = expected_stages(wl)
        if d["stage"] not in stages:
            differs.append(f"stage {d['stage']}; Kueue's conditions say {sorted(stages)}")
        waiting = stages & {"WAITING_FOR_QUOTA_RESERVATION", "WAITING_FOR_ADMISSION_CHECKS"}
        if waiting and stages == waiting and d["layer"] != "KUEUE":
            differs.append(f"layer {d['layer']}; Kueue decides (KUEUE)")
        reserved = condition(wl, "QuotaReserved") or {}
        message = str(reserved.get("message") or "") if reserved.get("status") == "False" else ""
        blocking = d.get("blockingRef") or {}
        inactive = re.match(r"ClusterQueue (\S+) is inactive", message)
        if inactive and (blocking.get("kind"), blocking.get("name")) != (
            "ClusterQueue",
            inactive.group(1),
        ):
            differs.append(
                f"blocking {blocking or None}; Kueue: ClusterQueue {inactive.group(1)} is inactive"
            )
        if (
            "LocalQueue" in message
            and "stopped" in message.lower()
            and blocking.get("kind") != "LocalQueue"
        ):
            differs.append(f"blocking {blocking or None}; Kueue: {message}")
        if stages == {"WAITING_FOR_QUOTA_RESERVATION"} and message:
            differs.extend(self._limiting_differs(d, message))
        if stages == {"WAITING_FOR_QUOTA_RESERVATION"}:
            # One source of arithmetic (arithmetic.py): a difference counts.
            differs.extend(arithmetic.diagnose_differs(d, wl, message))
            asked = self._asked.pop((case.id, index, meta["name"]), None)
            if asked is not None:
                differs.extend(arithmetic.what_if_differs(asked, message, d["summary"]))
        if stages == {"WAITING_FOR_QUOTA_RESERVATION"}:
            differs.extend(self._position_differs(d, wl))
        record = self._record(case)
        record.not_asked += [
            f"diagnose {meta['name']} step {index}: {d[1:]}" for d in differs if d.startswith("\0")
        ]
        differs[:] = [d for d in differs if not d.startswith("\0")]
        if differs:
            check.cls = classify(case, None, wl, differs)
        return check

    def _diagnose_as_of(self, wl: Obj) -> tuple[dict[str, Any], Obj]:
        """The diagnosis and the Workload as it was when diagnosed: Kueue may act between the
        case's list of Workloads and the diagnosis (a step without an expectation, e.g. a
        preemption under way), so the Workload is read again after the diagnosis, and diagnosed
        again (at most 5 times) while its resourceVersion moved."""
        meta = wl["metadata"]
        variables = {"namespace": meta["namespace"], "kind": "Workload", "name": meta["name"]}
        d: dict[str, Any] = {}
        for _ in range(5):
            d = self._query(WHY_QUERY, variables, "diagnose")["diagnose"]
            after = self.kube.get("Workload", meta["name"], meta["namespace"])
            if after is None:
                break
            moved = after["metadata"].get("resourceVersion") != wl["metadata"].get(
                "resourceVersion"
            )
            wl = after
            if not moved:
                break
        return d, wl

    def _limiting_differs(self, d: dict[str, Any], message: str) -> list[str]:
        named = {
            (m.group(3), m.group(2), bool(m.group(1))) for m in _INSUFFICIENT.finditer(message)
        }
        if not named:
            return []
        quota = d["quota"]
        if quota["visibility"] != "AVAILABLE":
            return [
                f"quota {quota['visibility']} ({quota.get('detail')}); Kueue names {sorted(named)}"
            ]
        lines = {(ln["flavor"], ln["resource"]): ln for ln in quota["lines"]}
        earlier = d["summary"].partition(arithmetic.EARLIER)[2]
        out = []
        for flavor, resource, unused in sorted(named):
            if f"quota for {resource} in flavor {flavor}," in earlier:
                continue  # reported as Kueue's earlier attempt (arithmetic.py)
            line = lines.get((flavor, resource))
            wanted = "MUST_WAIT" if unused else "NEVER_FITS"
            if line is None:
                out.append(f"no quota line {flavor}/{resource}; Kueue: insufficient there")
            elif line["verdict"] == "FITS_NOW":
                out.append(
                    f"quota line {flavor}/{resource} FITS_NOW; Kueue: insufficient ({wanted})"
                )
        return out

    def _pending_workloads(self, cq: str) -> dict[str, Any]:
        """Kueue's visibility API (through the aggregator, which answers 503 now and then)."""
        for attempt in range(10):
            try:
                with self._visibility:  # one at a time: concurrent calls fail more often
                    url = f"{VISIBILITY}/clusterqueues/{cq}/pendingworkloads"
                    return self.kube.get_path(url) or {}
            except KubeError:
                if attempt == 9:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")

    def _position_differs(self, d: dict[str, Any], wl: Obj) -> list[str]:
        lq = self.kube.get(
            "LocalQueue", wl["spec"].get("queueName", ""), wl["metadata"]["namespace"]
        )
        cq = ((lq or {}).get("spec") or {}).get("clusterQueue")
        if not cq:
            return []
        try:
            pending = self._pending_workloads(cq)
        except KubeError:
            # Kueue v0.17.0's visibility API panics (storage/utils.go:44 dereferences
            # spec.priority) when a pending Workload has no spec.priority, as the Workloads the
            # Go tests create directly often have: then there is no position to compare with.
            return ["\0position not measured: Kueue's visibility API failed (HTTP 503)"]
        positions = {
            (item["metadata"]["namespace"], item["metadata"]["name"]): item.get(
                "positionInClusterQueue"
            )
            for item in pending.get("items") or []
        }
        key = (wl["metadata"]["namespace"], wl["metadata"]["name"])
        position = d["queuePosition"]
        if key not in positions:
            return []  # not in Kueue's heap (inadmissible): no position to compare
        if position["visibility"] != "AVAILABLE":
            return [f"queue position {position['visibility']}; Kueue: {positions[key]}"]
        if position["positionInClusterQueue"] != positions[key]:
            return [f"queue position {position['positionInClusterQueue']}; Kueue: {positions[key]}"]
        return []


# -- classes -----------------------------------------------------------------------------------
def _specs(case: Case, kind: str) -> list[dict[str, Any]]:
    return [m.get("spec") or {} for m in case.all_manifests() if m["kind"] == kind]


def classify(case: Case, step: Step | None, wl: Manifest, differs: list[str]) -> str:
    """The issue-21 class a disagreement most likely belongs to, from the case's features."""
    text = " ".join(differs)
    cqs = _specs(case, "ClusterQueue")
    together = step is not None and sum(m["kind"] == "Workload" for m in step.create) > 1
    if "doesn't match ClusterQueue selector" in text:
        return "other: whatIf ignores the ClusterQueue's namespaceSelector"
    if together and text.startswith("verdict FITS_NOW"):
        return "other: Workloads submitted together (whatIf sees none of the others)"
    if text.startswith("quota FORBIDDEN"):
        return "other: diagnose shows a tenant no quota despite --quota-disclosure quota"
    if re.match(r"stage (PREEMPTED|EVICTED); Kueue's conditions say \['ADMITTED", text):
        return STALE
    if text.startswith("verdict") and "is inactive" in text:
        return "other: whatIf does not see the ClusterQueue inactive (deleted, finalizer holds)"
    if text.startswith("blocking {'kind': 'ResourceFlavor'"):
        return (
            "other: blocking names the missing ResourceFlavor that makes the ClusterQueue inactive"
        )
    if any(s.get("queueingStrategy") == "StrictFIFO" for s in cqs) and (
        "no condition" in text or "queue position" in text or "stage" in text
    ):
        return QUEUEING
    if "stop" in text.lower() or any(
        s.get("stopPolicy") for s in [*cqs, *_specs(case, "LocalQueue")]
    ):
        return STALE
    lending = any(
        "lendingLimit" in r
        for s in cqs + _specs(case, "Cohort")
        for g in s.get("resourceGroups") or []
        for f in g.get("flavors") or []
        for r in f.get("resources") or []
    )
    parent_quota = any(s.get("resourceGroups") for s in _specs(case, "Cohort"))
    if (lending or parent_quota) and ("borrow" in text or "verdict" in text):
        return COHORT_LIMITS
    if text.startswith("flavors ") or "quota line" in text:
        return FLAVORS
    if case.requires_config.get("fairSharing") is not None or any(
        s.get("fairSharing") for s in cqs
    ):
        return "other: fair sharing"
    if "preempt" in text:
        return "other: preemption simulation"
    if "queue position" in text:
        return "other: queue position"
    if "stage" in text:
        return "other: stage"
    return "other"


# -- running and reporting ---------------------------------------------------------------------
def run_cases(
    kube: Kube, observer: AgreementObserver | None, cases: list[Case]
) -> dict[str, CaseResult]:
    """Every case concurrently (as test_port.py does), namespaces waited for once at the end."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        done = pool.map(
            lambda case: run_case(kube, case, wait_for_namespaces=False, observer=observer), cases
        )
        by_id = {result.case.id: result for result in done}
    left = wait_gone(
        kube,
        [ns for case in cases for ns in case_namespaces(case)],
        "the namespaces of the ported cases to be gone",
    )
    for result in by_id.values():
        result.failures.extend(f"cleanup: {problem}" for problem in left)
    return by_id


def _cell(checks: list[Check], kind: str) -> str:
    asked = [c for c in checks if c.kind == kind]
    bad = [c for c in asked if c.differs]
    if not asked:
        return "- (none asked)"
    if not bad:
        return f"yes ({len(asked)})"
    first = bad[0]
    what = f"{first.workload} step {first.step}: {first.differs[0]}".replace("|", "/")
    return f"**no** ({len(bad)}/{len(asked)}): {what}"


def render(
    records: dict[str, CaseAgreement],
    results: dict[str, CaseResult],
    seconds: float,
    observed: float,
) -> str:
    agree = sum(r.agrees for r in records.values())
    lines = [
        "# kueue-graphql against Kueue's own scheduler tests (issue 21, item 1: measurement)",
        "",
        "Generated by `python -m tests.kueue_port.agreement` (against `make cluster-up`); do not",
        "edit by hand. For each ported case (tests/kueue_port/README.md): before each step",
        "that creates Workloads, `whatIf` as alice (tenant reader in the case's namespaces,",
        "which she may `get`; service with `--quota-disclosure quota`) for each Workload (a",
        "later Workload of a step in one ClusterQueue: once the earlier ones exist and were",
        "decided, see README); after the step's",
        "expectation holds, `diagnose` of every Workload of the case as viewer (a cluster-wide",
        "reader: as alice `diagnose { quota }` is FORBIDDEN, diagnose does not apply the",
        "disclosure policy that kueue_graphql/lookups/disclosure.py documents). Compared",
        "with Kueue's live Workloads and ClusterQueues (see the docstring of agreement.py",
        "for each fact). The class of a",
        "disagreement is assigned from the case's features (`classify`): check it against what",
        "differs.",
        "",
        f"{len(records)} cases measured, {agree} agree on everything. Cases took {seconds:.0f} s"
        f" wall clock; the whatIf/diagnose calls {observed:.0f} s summed over cases.",
        "",
        "| case | Kueue reached the Go test | whatIf agrees | diagnose agrees | class(es) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for case_id, record in records.items():
        result = results.get(case_id)
        reached = (
            "yes" if result and result.passed else ("divergent" if record.case.divergent else "no")
        )
        classes = sorted({c.cls for c in record.disagreements()})
        if record.errors:
            classes.append("error: " + "; ".join(record.errors)[:120])
        lines.append(
            f"| `{case_id}` | {reached} | {_cell(record.checks, 'whatIf')} | "
            f"{_cell(record.checks, 'diagnose')} | {', '.join(classes) or '-'} |"
        )
    by_class: dict[str, int] = {}
    for record in records.values():
        for c in record.disagreements():
            by_class[c.cls] = by_class.get(c.cls, 0) + 1
    lines += ["", "## Disagreements by class", "", "| class | checks |", "| --- | --- |"]
    lines += [f"| {cls} | {n} |" for cls, n in sorted(by_class.items(), key=lambda kv: -kv[1])]
    lines += ["", "## Every disagreement", ""]
    for case_id, record in records.items():
        for c in record.disagreements():
            lines.append(f"- `{case_id}` {c.kind} `{c.workload}` after step {c.step} [{c.cls}]:")
            lines += [f"  - {d}" for d in c.differs]
        lines += [f"- `{case_id}` error: {e}" for e in record.errors]
    lines += [
        "",
        "## One source of arithmetic (issue 21 item 3: held)",
        "",
        "For every one-pod-set Workload waiting for quota, the figures of diagnose's summary,",
        "reasons and next steps, the quota lines' `requested`, whatIf's (asked for the same",
        'state) and Kueue\'s own "N more needed" are requested - availableNow',
        "(tests/kueue_port/arithmetic.py); Kueue's figure is exempt only where diagnose reports",
        "it as Kueue's earlier attempt (the ClusterQueue's usage changed since, without a new",
        "attempt for the Workload). A difference counts as a disagreement above.",
        "",
    ]
    lines += ["", "## Not compared", ""]
    for case_id, record in records.items():
        lines += [f"- `{case_id}` {n}" for n in record.not_asked]
    return "\n".join(lines) + "\n"


@contextmanager
def observing(cluster: Cluster) -> Iterator[tuple[Kube, AgreementObserver]]:
    """An admin client and an observer asking a kueue-graphql started for the purpose."""
    kube = admin_client(cluster)
    user_kube = Kube(cluster.api_url, cluster.token(USER), str(cluster.ca_file))
    try:
        with running_service(cluster) as service:
            observer = AgreementObserver(
                kube, user_kube, service.url, cluster.token(USER), cluster.token(DIAGNOSE_USER)
            )
            try:
                yield kube, observer
            finally:
                observer.close()
    finally:
        user_kube.close()
        kube.close()


def main() -> int:
    from tests.cluster.driver import DEFAULT_STATE_DIR

    cluster = Cluster(DEFAULT_STATE_DIR)
    if not cluster.is_healthy():
        sys.stderr.write("no running control plane: run `make cluster-up` first\n")
        return 2
    config = yaml.safe_load((cluster.state_dir / "kueue" / "config.yaml").read_text())
    only = set(sys.argv[1:])  # case ids: measure only these (the files are written as usual)
    cases = [
        c
        for c in load_cases()
        if all(k in config for k in c.requires_config) and (not only or c.id in only)
    ]
    start = time.monotonic()
    with observing(cluster) as (kube, observer):
        results = run_cases(kube, observer, cases)
    seconds = time.monotonic() - start
    records = {c.id: observer.results.get(c.id, CaseAgreement(c)) for c in cases}
    text = render(records, results, seconds, sum(observer.seconds.values()))
    REPORT.write_text(text)
    DISAGREEMENTS.write_text(
        "# Written by `python -m tests.kueue_port.agreement`: the cases where kueue-graphql does\n"
        "# not agree with Kueue today (test_agreement.py marks them xfail).\n"
        + yaml.safe_dump({cid: r.reason() for cid, r in records.items() if not r.agrees}, width=100)
    )
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
