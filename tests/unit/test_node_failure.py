"""A failed Node under an admitted TAS Workload, on objects captured from the real control plane
(tests/fixtures/topology/README.md, "Node failure"): Kueue evicted the Workload (NodeFailures)
for tas-r1-n1 and re-admitted it in rack r2; tas-r1-n1 is then NotReady and tainted, two
Terminating Pods of the Job still bound to it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from kueue_graphql import diagnosis as dx
from kueue_graphql.kueue.node_failure import (
    assigned_nodes,
    node_failure_eviction,
    node_trouble,
    troubled_nodes,
    unhealthy_nodes,
)
from kueue_graphql.kueue.vocabulary import Code

FIXTURES = Path(__file__).parents[1] / "fixtures" / "topology"
FAILED = "tas-r1-n1"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _workload() -> Any:
    return _load("workload-node-failure-evicted.json")


def _pods() -> list[Any]:
    return list(_load("pods-node-failure.json")["items"])


def _ready_node(name: str) -> Any:
    node = copy.deepcopy(_load("node-notready-tainted.json"))
    node["metadata"]["name"] = name
    node["spec"]["taints"] = [t for t in node["spec"]["taints"] if "tas-only" in t["key"]]
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    return node


def _nodes() -> list[Any]:
    others = ["tas-r1-n2", "tas-r2-n1", "tas-r2-n2"]
    return [_load("node-notready-tainted.json"), *(_ready_node(n) for n in others)]


def test_the_eviction_kueue_wrote_names_the_failed_node() -> None:
    found = node_failure_eviction(_workload())
    assert found is not None
    assert found.nodes == (FAILED,)
    assert not found.current  # re-admitted: Evicted is False, Requeued keeps the reason
    assert found.message.startswith("Workload was evicted as there was no replacement")
    assert unhealthy_nodes(_workload()) == ()
    assert assigned_nodes(_workload()) == {"tas-r2-n1", "tas-r2-n2"}


def test_unhealthy_nodes_and_a_standing_eviction() -> None:
    wl = copy.deepcopy(_workload())
    wl["status"]["unhealthyNodes"] = [{"name": FAILED}]
    assert unhealthy_nodes(wl) == (FAILED,)
    for c in wl["status"]["conditions"]:
        if c["type"] == "Evicted":
            c.update(status="True", reason="NodeFailures", message=c["message"].split(": ", 1)[1])
    found = node_failure_eviction(wl)
    assert found is not None
    assert found.current
    assert found.nodes == (FAILED,)
    wl["status"]["conditions"] = [c for c in wl["status"]["conditions"] if c["type"] == "Admitted"]
    assert node_failure_eviction(wl) is None


def test_the_notready_tainted_node_is_told_with_its_terminating_pods() -> None:
    [trouble] = troubled_nodes(_workload(), _pods(), _nodes())
    assert trouble.node == FAILED
    assert (trouble.ready, trouble.ready_reason) == ("False", "KubeletNotReady")
    assert trouble.since is not None
    # The flavor's taint is tolerated by the Pods; the one the test added is not.
    assert trouble.taints == ("example.com/broken=true:NoSchedule",)
    assert len(trouble.pods) == 2
    assert not trouble.assigned
    assert node_trouble(_ready_node("x"), _pods()[0]["spec"]["tolerations"]) is None


def _input(*, node_reader: bool) -> dx.DiagnosisInput:
    return dx.DiagnosisInput(
        workload=_workload(),
        pods=_pods(),
        nodes=_nodes() if node_reader else dx.Forbidden("may not list nodes"),
    )


def test_diagnose_for_a_node_reader() -> None:
    d = dx.diagnose(_input(node_reader=True))
    codes = [r.code for r in d.reasons]
    assert Code.NODE_FAILURES in codes
    assert Code.TOPOLOGY_NODE_UNHEALTHY in codes
    assert d.summary.startswith("Kueue evicted the Workload at ")
    unhealthy = next(r for r in d.reasons if r.code == Code.TOPOLOGY_NODE_UNHEALTHY)
    assert unhealthy.object is not None
    assert unhealthy.object.name == FAILED
    assert "NotReady (Ready=False) since" in unhealthy.message
    assert any(f"kubectl describe node {FAILED}" in s for s in d.next_steps)


def test_diagnose_for_a_tenant_tells_only_what_her_workload_says() -> None:
    d = dx.diagnose(_input(node_reader=False))
    codes = [r.code for r in d.reasons]
    assert Code.NODE_FAILURES in codes
    assert Code.TOPOLOGY_NODE_UNHEALTHY not in codes
    shown = json.dumps([d.summary, [r.message for r in d.reasons], d.next_steps])
    assert "NotReady" not in shown
    assert "broken" not in shown
