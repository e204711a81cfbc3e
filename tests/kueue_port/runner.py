"""Run a ported case on the real control plane: create, act, wait for Kueue's state, clean up.

`unmet` (pure) compares what Kueue wrote with a step's expectation; `run_case` drives the steps with
bounded, condition-based waits and always deletes what the case made, waiting until it is gone.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from tests.kueue_port.cases import Case, Expectation, Manifest, Step, WorkloadExpectation
from tests.kueue_port.kube import Kube, KubeError

POLL_SECONDS = 0.25
# Generous: the machine running the suite may be loaded (2 cores shared by several runs).
EXPECT_DEADLINE_SECONDS = 90.0
CLEANUP_DEADLINE_SECONDS = 120.0

Obj = dict[str, Any]


@dataclass
class CaseResult:
    case: Case
    failures: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures


class StepObserver(Protocol):
    """Called by `run_case` around the steps (e.g. to ask kueue-graphql what it predicts)."""

    def started(self, case: Case) -> None:
        """The case's namespaces and objects exist; no step has run."""

    def before_act(self, case: Case, index: int, step: Step) -> None:
        """Just before step `index` (1-based) acts."""

    def before_create(self, case: Case, index: int, manifest: Manifest) -> None:
        """Just before step `index` creates this object (data manifest), after the objects the
        step creates before it."""

    def after_expect(self, case: Case, index: int, step: Step) -> None:
        """Step `index` acted and its expectation (if any) holds."""

    def finished(self, case: Case) -> None:
        """The steps are over (the case's objects are deleted next)."""


# -- observing --------------------------------------------------------------------------------
def condition(obj: Obj | None, kind: str) -> Obj | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            found: Obj = cond
            return found
    return None


def is_true(obj: Obj | None, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


@dataclass
class Observed:
    workloads: dict[tuple[str, str], Obj]
    cluster_queues: dict[str, Obj]
    local_queues: dict[tuple[str, str], Obj]
    # {materialized ClusterQueue name: status} from kueue_cluster_queue_status (value 1)
    cluster_queue_status: dict[str, str] = field(default_factory=dict)


_STATUS_SAMPLE = re.compile(
    r"^kueue_cluster_queue_status\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)$", re.MULTILINE
)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def cluster_queue_statuses(metrics_text: str) -> dict[str, str]:
    """{ClusterQueue: status} where Kueue's kueue_cluster_queue_status gauge is 1."""
    out = {}
    for sample in _STATUS_SAMPLE.finditer(metrics_text):
        if float(sample["value"]) == 1:
            labels = dict(_LABEL.findall(sample["labels"]))
            out[labels.get("cluster_queue", "")] = labels.get("status", "")
    return out


def observe(kube: Kube, case: Case, expect: Expectation) -> Observed:
    workloads: dict[tuple[str, str], Obj] = {}
    local_queues: dict[tuple[str, str], Obj] = {}
    namespaces = {case.workload_key(ref)[0] for ref in expect.workload_names()}
    if expect.reserved_count:
        namespaces.update(case.name("Namespace", ns) for ns in case.namespaces())
    for namespace in namespaces:
        for wl in kube.list("Workload", namespace):
            workloads[(namespace, wl["metadata"]["name"])] = wl
    for ref in expect.local_queue_active:
        namespace, name = case.workload_key(ref)
        lq = kube.get("LocalQueue", name, namespace)
        if lq:
            local_queues[(namespace, name)] = lq
    cluster_queues = {}
    for name in {*expect.borrowed, *expect.cluster_queue_active, *expect.weighted_share}:
        cq = kube.get("ClusterQueue", case.name("ClusterQueue", name))
        if cq:
            cluster_queues[name] = cq
    statuses = cluster_queue_statuses(kube.kueue_metrics()) if expect.cluster_queue_status else {}
    return Observed(workloads, cluster_queues, local_queues, statuses)


def _describe(wl: Obj | None) -> str:
    if wl is None:
        return "absent"
    conds = ", ".join(
        f"{c['type']}={c['status']}/{c.get('reason', '')}"
        for c in (wl.get("status") or {}).get("conditions") or []
    )
    admission = (wl.get("status") or {}).get("admission")
    where = ""
    if admission:
        flavors = [psa.get("flavors") for psa in admission.get("podSetAssignments") or []]
        where = f" in {admission.get('clusterQueue')} {flavors}"
    return f"[{conds or 'no conditions'}]{where}"


def _placement_unmet(case: Case, ref: str, wl: Obj, want: WorkloadExpectation) -> list[str]:
    admission = (wl.get("status") or {}).get("admission") or {}
    out = []
    if want.cluster_queue:
        cq = case.name("ClusterQueue", want.cluster_queue)
        if admission.get("clusterQueue") != cq:
            out.append(f"{ref}: wanted in ClusterQueue {cq}, got {admission.get('clusterQueue')}")
    assignments = {psa["name"]: psa for psa in admission.get("podSetAssignments") or []}
    for pod_set, flavors in want.flavors.items():
        got = (assignments.get(pod_set) or {}).get("flavors") or {}
        wanted = {res: case.name("ResourceFlavor", f) for res, f in flavors.items()}
        if {res: got.get(res) for res in wanted} != wanted:
            out.append(f"{ref}: pod set {pod_set} wanted flavors {wanted}, got {got}")
    for pod_set, count in want.counts.items():
        got_count = (assignments.get(pod_set) or {}).get("count")
        if got_count != count:
            out.append(f"{ref}: pod set {pod_set} wanted count {count}, got {got_count}")
    return out


def has_condition(
    kind: str, status: str, reason: str | None = None, message: str | None = None
) -> Callable[[str, Obj], list[str]]:
    """A check that a Workload has condition `kind` with this status (and reason, message)."""
    wanted = f"{kind}={status}" + (f"/{reason}" if reason else "")
    wanted += f" {message!r}" if message is not None else ""

    def check(ref: str, wl: Obj) -> list[str]:
        cond = condition(wl, kind) or {}
        if (
            cond.get("status") == status
            and reason in (None, cond.get("reason"))
            and message in (None, cond.get("message"))
        ):
            return []
        got = f" (message {cond.get('message')!r})" if message is not None else ""
        return [f"{ref}: wanted {wanted}, is {_describe(wl)}{got}"]

    return check


def unmet(case: Case, expect: Expectation, seen: Observed) -> list[str]:
    """Every fact of `expect` that `seen` does not show (empty: the expectation holds)."""
    out: list[str] = []

    def each(refs: Any, check: Callable[[str, Obj], list[str]]) -> None:
        for ref in refs:
            wl = seen.workloads.get(case.workload_key(ref))
            if wl is None:
                out.append(f"{ref}: Workload absent")
            else:
                out.extend(check(ref, wl))

    def reserved(
        want: WorkloadExpectation, admitted: bool | None
    ) -> Callable[[str, Obj], list[str]]:
        def check(ref: str, wl: Obj) -> list[str]:
            if not is_true(wl, "QuotaReserved"):
                return [f"{ref}: wanted quota reserved, is {_describe(wl)}"]
            if admitted is True and not is_true(wl, "Admitted"):
                return [f"{ref}: wanted Admitted, is {_describe(wl)}"]
            if admitted is False and is_true(wl, "Admitted"):
                return [f"{ref}: wanted not Admitted (checks pending), is {_describe(wl)}"]
            return _placement_unmet(case, ref, wl, want)

        return check

    for ref, want in expect.admitted.items():
        each([ref], reserved(want, True))
    for ref, want in expect.reserved.items():
        each([ref], reserved(want, None))
    for ref, want in expect.reserved_not_admitted.items():
        each([ref], reserved(want, False))

    each(expect.pending, has_condition("QuotaReserved", "False", "Pending"))

    def not_reserved(ref: str, wl: Obj) -> list[str]:
        if is_true(wl, "QuotaReserved"):
            return [f"{ref}: wanted no quota reservation, is {_describe(wl)}"]
        return []

    each(expect.not_reserved, not_reserved)
    for ref, cq_name in expect.frozen.items():
        message = f"ClusterQueue {case.name('ClusterQueue', cq_name)} is inactive"
        each([ref], has_condition("QuotaReserved", "False", "Inadmissible", message))
    each(expect.preempted, has_condition("Evicted", "True", "Preempted"))
    for ref, reason in expect.evicted.items():
        each([ref], has_condition("Evicted", "True", reason))
    for ref, reason in expect.preempted_reason.items():
        each([ref], has_condition("Preempted", "True", reason))

    for cq_name, flavors in expect.borrowed.items():
        cq = seen.cluster_queues.get(cq_name)
        got = {
            f["name"]: {r["name"]: r.get("borrowed", "0") for r in f.get("resources") or []}
            for f in ((cq or {}).get("status") or {}).get("flavorsReservation") or []
        }
        for flavor, resources in flavors.items():
            got_flavor = got.get(case.name("ResourceFlavor", flavor), {})
            for res, qty in resources.items():
                if str(got_flavor.get(res, "0")) != qty:
                    out.append(
                        f"ClusterQueue {cq_name}: wanted {qty} {res} borrowed in {flavor}, "
                        f"got {got_flavor.get(res, '0')}"
                    )
    for cq_name, status in expect.cluster_queue_active.items():
        cond = condition(seen.cluster_queues.get(cq_name), "Active") or {}
        if cond.get("status") != status:
            out.append(f"ClusterQueue {cq_name}: wanted Active={status}, got {cond}")
    for ref, message in expect.pending_message.items():
        wanted = message.replace("{prefix}", case.prefix())
        each([ref], has_condition("QuotaReserved", "False", None, wanted))
    for cq_name, count in expect.reserved_count.items():
        cq_ref = case.name("ClusterQueue", cq_name)
        holding = sorted(
            key[1]
            for key, obj in seen.workloads.items()
            if is_true(obj, "QuotaReserved")
            and ((obj.get("status") or {}).get("admission") or {}).get("clusterQueue") == cq_ref
        )
        if len(holding) != count:
            out.append(f"ClusterQueue {cq_name}: wanted {count} holding quota, got {holding}")
    for cq_name, share in expect.weighted_share.items():
        cq_status = (seen.cluster_queues.get(cq_name) or {}).get("status") or {}
        got_share = (cq_status.get("fairSharing") or {}).get("weightedShare")
        if got_share != share:
            out.append(f"ClusterQueue {cq_name}: wanted weightedShare {share}, got {got_share}")
    for cq_name, status in expect.cluster_queue_status.items():
        got_status = seen.cluster_queue_status.get(case.name("ClusterQueue", cq_name))
        if got_status != status:
            out.append(f"ClusterQueue {cq_name}: wanted {status} (Kueue's cache), got {got_status}")
    for ref, status in expect.local_queue_active.items():
        cond = condition(seen.local_queues.get(case.workload_key(ref)), "Active") or {}
        if cond.get("status") != status:
            out.append(f"LocalQueue {ref}: wanted Active={status}, got {cond}")
    return out


# -- acting -----------------------------------------------------------------------------------
def _ref(case: Case, ref: str) -> tuple[str, str, str | None]:
    """(kind, materialized name, materialized namespace or None) of "Kind/name" / "Kind/ns/name"."""
    kind, _, rest = ref.partition("/")
    if kind in ("Workload", "LocalQueue", "Job"):
        ns, name = case.workload_key(rest)
        return kind, name, ns
    return kind, case.name(kind, rest), None


def _wait(what: str, done: Callable[[], bool], deadline: float = EXPECT_DEADLINE_SECONDS) -> None:
    end = time.monotonic() + deadline
    while not done():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {deadline:.0f}s waiting for {what}")
        time.sleep(POLL_SECONDS)


def _update_status(
    kube: Kube, kind: str, name: str, ns: str | None, change: Callable[[Obj], None]
) -> None:
    for _ in range(20):
        obj = kube.get(kind, name, ns)
        if obj is None:
            raise KubeError(f"{kind} {ns}/{name} not found")
        change(obj)
        if kube.update_status(obj):
            return
        time.sleep(0.05)
    raise KubeError(f"could not update the status of {kind} {ns}/{name}: conflicts")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _set_condition(obj: Obj, cond: Obj) -> None:
    conds = obj.setdefault("status", {}).get("conditions") or []
    conds = [c for c in conds if c["type"] != cond["type"]]
    old = condition(obj, cond["type"])
    if old and old.get("status") == cond["status"]:
        cond["lastTransitionTime"] = old["lastTransitionTime"]
    obj["status"]["conditions"] = [*conds, cond]


def _finish(obj: Obj) -> None:
    _set_condition(
        obj,
        {
            "type": "Finished",
            "status": "True",
            "reason": "ByTest",
            "message": "Finished by test",
            "lastTransitionTime": _now(),
        },
    )


def _unset_quota_reservation(obj: Obj) -> None:
    """What Go's workload.UnsetQuotaReservationWithCondition(wl, "Pending", "By test") writes."""
    status = obj.setdefault("status", {})
    if not is_true(obj, "QuotaReserved"):
        return
    generation = obj["metadata"].get("generation", 1)
    _set_condition(
        obj,
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "By test",
            "lastTransitionTime": _now(),
            "observedGeneration": generation,
        },
    )
    status.pop("admission", None)
    if is_true(obj, "Admitted"):
        _set_condition(
            obj,
            {
                "type": "Admitted",
                "status": "False",
                "reason": "NoReservation",
                "message": "The workload has no reservation",
                "lastTransitionTime": _now(),
                "observedGeneration": generation,
            },
        )


def _parse_time(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def act(
    kube: Kube, case: Case, step: Step, before_create: Callable[[Manifest], None] | None = None
) -> None:
    for manifest in step.create:
        if before_create is not None:
            before_create(manifest)
        obj = case.materialize(manifest)
        if obj["kind"] == "Namespace" and kube.get("Namespace", obj["metadata"]["name"]):
            # Declared namespaces are created with the case; a later step may only relabel them.
            kube.merge_patch("Namespace", obj["metadata"]["name"], {"metadata": obj["metadata"]})
            continue
        kube.create(obj)
    for ref in step.delete:
        kind, name, ns = _ref(case, ref)
        kube.delete(kind, name, ns)
    for patch in step.patch:
        kind, name, ns = _ref(case, patch["ref"])
        merge = dict(patch["merge"])
        if "spec" in merge:
            partial = case.materialize({"kind": kind, "metadata": {}, "spec": merge["spec"]})
            merge["spec"] = partial["spec"]
        kube.merge_patch(kind, name, merge, ns)
    for ref in step.finish:
        ns, name = case.workload_key(ref)
        _update_status(kube, "Workload", name, ns, _finish)
    for ref in step.finish_eviction:
        wl_ns, wl_name = case.workload_key(ref)

        def evicted(ns: str = wl_ns, name: str = wl_name) -> bool:
            return is_true(kube.get("Workload", name, ns), "Evicted")

        _wait(f"{ref} to be evicted", evicted)
        _update_status(kube, "Workload", wl_name, wl_ns, _unset_quota_reservation)
    for cq_name, count in step.finish_eviction_in.items():
        cq = case.name("ClusterQueue", cq_name)
        found: list[tuple[str, str]] = []

        def enough_evicted(
            cq: str = cq, count: int = count, evicted: list[tuple[str, str]] = found
        ) -> bool:
            evicted.clear()
            for ns in case.namespaces():
                namespace = case.name("Namespace", ns)
                for wl in kube.list("Workload", namespace):
                    admission = (wl.get("status") or {}).get("admission") or {}
                    if admission.get("clusterQueue") == cq and is_true(wl, "Evicted"):
                        evicted.append((namespace, wl["metadata"]["name"]))
            return len(evicted) >= count

        _wait(f"{count} evicted Workloads in {cq_name}", enough_evicted)
        for namespace, name in found[:count]:
            _update_status(kube, "Workload", name, namespace, _unset_quota_reservation)
    for ref, pods in step.reclaimable_pods.items():
        ns, name = case.workload_key(ref)

        def reclaim(obj: Obj, pods: list[Obj] = pods) -> None:
            obj.setdefault("status", {})["reclaimablePods"] = pods

        _update_status(kube, "Workload", name, ns, reclaim)
    for check in step.activate_checks:

        def activate(obj: Obj) -> None:
            _set_condition(
                obj,
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "ByTest",
                    "message": "by test",
                    "lastTransitionTime": _now(),
                },
            )

        _update_status(kube, "AdmissionCheck", case.name("AdmissionCheck", check), None, activate)
    for change in step.check_state:
        ns, name = case.workload_key(change["workload"])
        check_name = case.name("AdmissionCheck", change["check"])

        def set_state(obj: Obj, check_name: str = check_name, state: str = change["state"]) -> None:
            checks = [
                c
                for c in (obj.setdefault("status", {}).get("admissionChecks") or [])
                if c["name"] != check_name
            ]
            checks.append(
                {
                    "name": check_name,
                    "state": state,
                    "message": "by test",
                    "lastTransitionTime": _now(),
                }
            )
            obj["status"]["admissionChecks"] = checks

        _update_status(kube, "Workload", name, ns, set_state)
    for ref in step.wait_next_second:
        ns, name = case.workload_key(ref)
        wl = kube.get("Workload", name, ns)
        if wl is None:
            raise KubeError(f"Workload {ref} not found")
        created = _parse_time(wl["metadata"]["creationTimestamp"])

        def next_second(created: float = created) -> bool:
            return time.time() >= created + 1.0

        _wait(f"the second after {ref}'s creation", next_second)


def expect_state(kube: Kube, case: Case, expect: Expectation, deadline: float) -> list[str]:
    """Wait (bounded) until `expect` holds; then hold it `hold_seconds`. The unmet facts, if any."""
    end = time.monotonic() + deadline
    missing = unmet(case, expect, observe(kube, case, expect))
    while missing and time.monotonic() < end:
        time.sleep(POLL_SECONDS)
        missing = unmet(case, expect, observe(kube, case, expect))
    if missing or not expect.hold_seconds:
        return missing
    hold_end = time.monotonic() + expect.hold_seconds
    while time.monotonic() < hold_end:
        time.sleep(POLL_SECONDS)
        missing = unmet(case, expect, observe(kube, case, expect))
        if missing:
            return [f"(after holding) {m}" for m in missing]
    return []


# -- cleaning up ------------------------------------------------------------------------------
# Namespaces are deleted after their Workloads and LocalQueues are gone, and (by default) not
# waited for here: the namespace controller takes seconds per namespace on a loaded machine, and
# nothing else depends on them. `wait_gone` waits for them, e.g. once for all cases at the end.
_CLEANUP_ORDER = (
    ("Workload",),
    ("LocalQueue", "Job", "LimitRange"),
    ("ClusterQueue",),
    ("Cohort",),
    ("AdmissionCheck", "ResourceFlavor", "WorkloadPriorityClass", "PriorityClass"),
)


def wait_gone(kube: Kube, targets: list[tuple[str, str, str | None]], what: str) -> list[str]:
    """Wait (bounded) until every (kind, name, namespace) is gone; what is left, if anything."""
    try:
        _wait(
            what,
            lambda: all(kube.get(k, n, s) is None for k, n, s in targets),
            CLEANUP_DEADLINE_SECONDS,
        )
    except TimeoutError as err:
        left = [f"{k} {s or ''}/{n}" for k, n, s in targets if kube.get(k, n, s) is not None]
        return [f"{err}: left {left}"]
    return []


def case_namespaces(case: Case) -> list[tuple[str, str, str | None]]:
    return [("Namespace", case.name("Namespace", ns), None) for ns in case.namespaces()]


def cleanup(kube: Kube, case: Case, wait_for_namespaces: bool = True) -> list[str]:
    """Delete everything the case may have made, in dependency order, waiting until it is gone."""
    made: dict[str, set[tuple[str, str | None]]] = {}
    created = [
        *case.materialized_objects(),
        *(case.materialize(m) for s in case.steps for m in s.create),
    ]
    for manifest in created:
        meta = manifest["metadata"]
        made.setdefault(manifest["kind"], set()).add((meta["name"], meta.get("namespace")))
    namespaces = case_namespaces(case)
    for _, namespace, _ in namespaces:
        for kind in ("Workload", "LocalQueue"):
            try:
                items = kube.list(kind, namespace)
            except KubeError:
                items = []
            for item in items:
                made.setdefault(kind, set()).add((item["metadata"]["name"], namespace))
    problems = []
    for kinds in _CLEANUP_ORDER:
        targets = [(kind, name, ns) for kind in kinds for name, ns in made.get(kind, ())]
        for kind, name, ns in targets:
            kube.delete(kind, name, ns)
        problems += wait_gone(kube, targets, f"{', '.join(kinds)} of {case.id} to be gone")
        if kinds[0] == "LocalQueue":
            for ns_kind, ns_name, _ in namespaces:
                kube.delete(ns_kind, ns_name)
    if wait_for_namespaces:
        problems += wait_gone(kube, namespaces, f"namespaces of {case.id} to be gone")
    return problems


def run_case(
    kube: Kube,
    case: Case,
    deadline: float = EXPECT_DEADLINE_SECONDS,
    wait_for_namespaces: bool = True,
    observer: StepObserver | None = None,
) -> CaseResult:
    result = CaseResult(case)
    start = time.monotonic()
    try:
        for obj in case.materialized_objects():
            kube.create(obj)
        if observer is not None:
            observer.started(case)
        for index, step in enumerate(case.steps, 1):
            label = f"step {index} ({step.name})" if step.name else f"step {index}"
            if observer is not None:
                observer.before_act(case, index, step)
            act(
                kube,
                case,
                step,
                None
                if observer is None
                else functools.partial(observer.before_create, case, index),
            )
            if step.expect is not None:
                missing = expect_state(kube, case, step.expect, deadline)
                if missing:
                    result.failures.extend(f"{label}: {m}" for m in missing)
                    break
            if observer is not None:
                observer.after_expect(case, index, step)
            result.log.append(f"{label}: ok at {time.monotonic() - start:.1f}s")
    except (KubeError, TimeoutError) as err:
        result.failures.append(f"{type(err).__name__}: {err}")
    finally:
        if observer is not None:
            observer.finished(case)
        problems = cleanup(kube, case, wait_for_namespaces)
        result.failures.extend(f"cleanup: {p}" for p in problems)
        result.seconds = time.monotonic() - start
    return result
