"""Capture, from the real control plane, what whatIf sees just before a ported case's
preemptor is created, for the pure preemption tests (tests/unit/test_whatif_reclaim.py).

`python -m tests.kueue_port.capture_preemption` (against `make cluster-up`) runs the cases below
and, before each step whose expectation names preempted Workloads, writes
tests/fixtures/issue21/preemption/<case>-step<N>.json: the case's ClusterQueues (their status
once it counts the Workloads holding quota), Cohorts, ResourceFlavors and Workloads, the
Workloads the step creates, and what Kueue then preempted and why (its Preempted
condition's reason, read after the step).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.cluster.driver import DEFAULT_STATE_DIR, Cluster
from tests.kueue_port.agreement import settled_cluster_queue
from tests.kueue_port.cases import Case, Step, load_cases
from tests.kueue_port.kube import Kube, admin_client
from tests.kueue_port.runner import Obj, case_namespaces, condition, run_case

OUT = Path(__file__).parent.parent / "fixtures" / "issue21" / "preemption"
CASES = (
    "f-guaranteed-preempts-one",
    "p-cohort-reclaim",
    "p-strict-fifo-reclaim",
    "p-borrow-while-preempting",
    "p-lending-limit",
    "p-multi-level-cohort",
    "s-reclaim-dynamic",
    "s-preempt-before-next-flavor",
)


def _strip(obj: Obj) -> Obj:
    meta = {k: obj["metadata"][k] for k in ("name", "namespace", "uid") if k in obj["metadata"]}
    return {"metadata": meta, "spec": obj.get("spec") or {}, "status": obj.get("status") or {}}


class Capture:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.pending: dict[str, Any] | None = None

    def _workloads(self, case: Case) -> list[Obj]:
        return [w for _, ns, _ in case_namespaces(case) for w in self.kube.list("Workload", ns)]

    def started(self, case: Case) -> None:
        pass

    def before_act(self, case: Case, index: int, step: Step) -> None:
        if step.expect is None or not step.expect.preempted or not step.create:
            return
        prefix = f"kp-{case.id}-"
        workloads = self._workloads(case)
        queues = [
            settled_cluster_queue(self.kube, cq["metadata"]["name"], workloads)
            for cq in self.kube.list("ClusterQueue")
            if cq["metadata"]["name"].startswith(prefix)
        ]
        self.pending = {
            "case": case.id,
            "goTest": case.go_test,
            "step": index,
            "clusterQueues": [_strip(q) for q in queues if q is not None],
            "cohorts": [
                _strip(c)
                for c in self.kube.list("Cohort")
                if c["metadata"]["name"].startswith(prefix)
            ],
            "resourceFlavors": [
                _strip(f)
                for f in self.kube.list("ResourceFlavor")
                if f["metadata"]["name"].startswith(prefix)
            ],
            "localQueues": [
                _strip(lq)
                for _, ns, _ in case_namespaces(case)
                for lq in self.kube.list("LocalQueue", ns)
            ],
            "workloads": [_strip(w) for w in self._workloads(case)],
            "create": [case.materialize(m) for m in step.create],
        }

    def after_expect(self, case: Case, index: int, step: Step) -> None:
        if self.pending is None or self.pending["step"] != index:
            return
        created = {m["metadata"]["name"] for m in self.pending["create"]}
        preemptors = {
            w["metadata"]["uid"]: w["metadata"]["name"]
            for w in self._workloads(case)
            if w["metadata"]["name"] in created
        }
        preempted: dict[str, list[str]] = {}
        reasons: dict[str, str] = {}
        for wl in self._workloads(case):
            cond = condition(wl, "Preempted") or {}
            for uid, name in preemptors.items():
                if cond.get("status") == "True" and uid in str(cond.get("message", "")):
                    preempted.setdefault(name, []).append(wl["metadata"]["name"])
                    reasons[wl["metadata"]["name"]] = str(cond.get("reason"))
        self.pending["kueuePreempted"] = {k: sorted(v) for k, v in preempted.items()}
        self.pending["kueueReasons"] = reasons
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"{case.id}-step{index}.json"
        path.write_text(json.dumps(self.pending, indent=1, sort_keys=True) + "\n")
        print(f"wrote {path}")
        self.pending = None


def main(ids: list[str]) -> int:
    kube = admin_client(Cluster(DEFAULT_STATE_DIR))
    failed = 0
    for case in load_cases():
        if case.id in (ids or CASES):
            result = run_case(kube, case, observer=Capture(kube))
            if not result.passed:
                print(f"{case.id}: Kueue did not reach the Go test: {result.failures}")
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
