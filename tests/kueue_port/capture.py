"""Capture the objects of a ported case as diagnose reads them, after one of its steps.

    python -m tests.kueue_port.capture <case id> <step> <out.json>

Runs the one case on the running control plane (`make cluster-up`) with the agreement observer
(so the state is settled as the agreement run compares it: README "Settled") and, after step
`<step>`'s expectation holds, writes the case's Workloads, Events, LocalQueues and ClusterQueues
(managedFields dropped), with diagnose's answer for each Workload as `viewer`. Unit tests read
such files (tests/fixtures/issue21/) instead of a control plane.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kueue_graphql.cli.render import WHY_QUERY
from tests.kueue_port.agreement import AgreementObserver, observing
from tests.kueue_port.cases import Case, Step, load_cases
from tests.kueue_port.runner import case_namespaces, run_case

__all__ = ["capture"]


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


class _Capturing:
    """Wraps the agreement observer: after step `at`, reads the case's objects."""

    def __init__(self, inner: AgreementObserver, at: int) -> None:
        self.inner, self.at = inner, at
        self.captured: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def after_expect(self, case: Case, index: int, step: Step) -> None:
        self.inner.after_expect(case, index, step)
        if index != self.at:
            return
        kube = self.inner.kube
        namespaces = [ns for _, ns, _ in case_namespaces(case)]
        workloads = [_clean(w) for ns in namespaces for w in kube.list("Workload", ns)]
        events = [
            _clean(e)
            for ns in namespaces
            for e in (kube.get_path(f"/api/v1/namespaces/{ns}/events") or {}).get("items", [])
        ]
        cqs = {
            m["metadata"]["name"]
            for m in case.materialized_objects()
            if m["kind"] == "ClusterQueue"
        }
        diagnoses = {}
        for w in workloads:
            meta = w["metadata"]
            variables = {"namespace": meta["namespace"], "kind": "Workload", "name": meta["name"]}
            diagnoses[meta["name"]] = self.inner._query(WHY_QUERY, variables, "diagnose")
        self.captured = {
            "case": case.id,
            "goTest": case.go_test,
            "step": index,
            "workloads": workloads,
            "events": events,
            "localQueues": [_clean(q) for ns in namespaces for q in kube.list("LocalQueue", ns)],
            "clusterQueues": [_clean(kube.get("ClusterQueue", n) or {}) for n in sorted(cqs)],
            "diagnose": diagnoses,
        }


def capture(case_id: str, step: int) -> dict[str, Any]:
    from tests.cluster.driver import DEFAULT_STATE_DIR, Cluster

    case = next(c for c in load_cases() if c.id == case_id)
    with observing(Cluster(DEFAULT_STATE_DIR)) as (kube, observer):
        capturing = _Capturing(observer, step)
        result = run_case(kube, case, observer=capturing)  # type: ignore[arg-type]
    if result.failures:
        sys.stderr.write(f"{case_id}: {result.failures}\n")
    return capturing.captured


def main() -> int:
    case_id, step, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    out.write_text(json.dumps(capture(case_id, step), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
