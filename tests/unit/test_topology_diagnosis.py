"""`diagnose` for a Workload Kueue's topology-aware scheduling could not place, on the objects
captured from the real control plane (tests/fixtures/topology/README.md): for a caller who may
read Nodes, Pods and Workloads the room per rack; for one who may not, Kueue's figure and no
domain names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kueue_graphql import diagnosis as dx
from kueue_graphql.kueue.messages import parse_kueue_message
from kueue_graphql.kueue.model import ReasonSource
from kueue_graphql.kueue.vocabulary import Code

FIXTURES = Path(__file__).parents[1] / "fixtures" / "topology"
RACK = "kueue-graphql.example/tas-rack"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _too_big(workloads: list[Any]) -> Any:
    return next(w for w in workloads if w["metadata"]["name"].startswith("job-too-big"))


def _input(*, may_list_cluster: bool) -> dx.DiagnosisInput:
    workloads = _load("workloads.json")["items"]
    refused = dx.Forbidden("may not list")
    return dx.DiagnosisInput(
        workload=_too_big(workloads),
        local_queue=_load("localqueue.json"),
        cluster_queue=_load("clusterqueue.json"),
        resource_flavors=[_load("resourceflavor.json")] if may_list_cluster else refused,
        topologies=[_load("topology.json")] if may_list_cluster else refused,
        nodes=_load("nodes.json")["items"] if may_list_cluster else refused,
        cluster_pods=_load("pods.json")["items"] if may_list_cluster else refused,
        cluster_workloads=workloads if may_list_cluster else refused,
    )


def test_kueues_tas_message_is_one_reason_with_its_figures() -> None:
    # Regression: "; " inside TAS's message ("Total nodes: 6; excluded: ...") was taken for
    # the separator of pod sets, and neither half was recognized.
    message = _too_big(_load("workloads.json")["items"])["status"]["conditions"][0]["message"]
    reasons = parse_kueue_message(message, "Pending", ReasonSource.CONDITION)
    assert [r.code for r in reasons] == [Code.TOPOLOGY_PLACEMENT_FAILED]
    assert reasons[0].pod_set == "main"
    assert reasons[0].number("fitting") == 4
    assert reasons[0].number("wanted") == 5
    assert reasons[0].object is not None
    assert reasons[0].object.kind == "Topology"
    two = (
        "couldn't assign flavors to pod set a: topology \"t\" doesn't allow to fit any of 2 "
        "slice(s); couldn't assign flavors to pod set b: insufficient unused quota for cpu in "
        "flavor f, 1 more needed"
    )
    parsed = parse_kueue_message(two, "Pending", ReasonSource.CONDITION)
    assert [(r.code, r.pod_set) for r in parsed] == [
        (Code.TOPOLOGY_PLACEMENT_FAILED, "a"),
        (Code.WAITING_FOR_QUOTA, "b"),
    ]


def test_a_node_reader_gets_the_room_of_every_rack() -> None:
    d = dx.diagnose(_input(may_list_cluster=True))
    assert d.stage is dx.Stage.WAITING_FOR_QUOTA_RESERVATION
    assert d.layer is dx.Layer.KUEUE
    [fit] = d.topology
    assert (fit.pod_set, fit.mode, fit.level, fit.pods_wanted) == ("main", "required", RACK, 5)
    assert fit.flavor == "tas-test-flavor"
    assert fit.domains is not None
    assert [(r.name, r.pods, r.nodes) for r in fit.domains] == [
        ("r3", 4, 2),
        ("r2", 2, 2),
        ("r1", 1, 2),
    ]
    assert fit.kueue_fitting == fit.domains[0].pods
    assert d.summary.startswith(
        "topology-aware scheduling cannot place pod set main: it needs 5 Pods of 2 cpu in one "
        f"{RACK} (required) of Topology tas-test-topology: the best, r3, has room for 4; "
        "then r2 2, r1 1"
    ), d.summary
    steps = " ".join(d.next_steps)
    assert "kueue.x-k8s.io/podset-preferred-topology" in steps
    assert "has room for 4 of the 5" in steps
    assert "podset-slice-size" in steps
    assert "flavor with more capacity" in steps
    # The ClusterQueue has the quota: no "quota is free now" step that would mislead.
    assert not any("Quota is free now" in s for s in d.next_steps)


def test_a_tenant_gets_kueues_figure_without_domain_names() -> None:
    d = dx.diagnose(_input(may_list_cluster=False))
    [fit] = d.topology
    assert fit.domains is None
    assert fit.hidden_because is not None
    assert "Nodes" in fit.hidden_because
    assert fit.kueue_fitting == 4
    assert "Kueue's best domain has room for 4" in d.summary
    text = json.dumps([d.summary, list(d.next_steps), fit.hidden_because])
    for hidden in ("r1", "r2", "r3", "tas-r"):
        assert f"{hidden}" not in text.replace("tas-rack", ""), text


def _fits_input(pods: list[Any]) -> dx.DiagnosisInput:
    workloads = _load("workloads.json")["items"]
    fits = next(w for w in workloads if w["metadata"]["name"].startswith("job-fits"))
    return dx.DiagnosisInput(
        workload=fits,
        local_queue=_load("localqueue.json"),
        cluster_queue=_load("clusterqueue.json"),
        pods=pods,
        events=[],
        nodes=_load("nodes.json")["items"],
    )


def _fits_pods() -> list[Any]:
    return [p for p in _load("pods.json")["items"] if p["metadata"]["name"].startswith("fits-")]


def test_a_pod_kueue_has_not_ungated_is_kueues_layer() -> None:
    pods = _fits_pods()
    gated = pods[0]
    gated["spec"].pop("nodeName")
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
    gated["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}  # fmt: skip
    d = dx.diagnose(_fits_input(pods))
    assert (d.stage, d.layer) == (dx.Stage.ADMITTED_PODS_PENDING, dx.Layer.KUEUE)
    assert d.reasons[0].code == Code.TOPOLOGY_GATED
    assert d.blocking_object is not None
    assert d.blocking_object.name == gated["metadata"]["name"]
    assert any("topology ungater" in s for s in d.next_steps)


def test_an_ungated_pod_that_does_not_schedule_is_the_schedulers() -> None:
    pods = _fits_pods()
    stuck = pods[0]
    stuck["spec"].pop("nodeName")
    stuck["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/6 nodes are available: 6 Insufficient cpu."}]}  # fmt: skip
    d = dx.diagnose(_fits_input(pods))
    assert (d.stage, d.layer) == (dx.Stage.ADMITTED_PODS_PENDING, dx.Layer.SCHEDULER)
    assert all(r.code != Code.TOPOLOGY_GATED for r in d.reasons)


def test_slices_are_counted_whole_as_kueue_counts_them() -> None:
    # Job `sliced` (captured alone with the non-TAS Pod): 6 Pods in one block, slices of 3
    # Pods each in one rack. r1 has room for 4 Pods (1 slice), r2 for 2 (none), r3 for 4 (1):
    # Kueue says "allows to fit only 1 out of 2 slice(s)".
    sliced = _load("workload-sliced.json")
    non_tas = [p for p in _load("pods.json")["items"] if p["metadata"]["name"] == "non-tas"]
    message = sliced["status"]["conditions"][0]["message"]
    assert "allows to fit only 1 out of 2 slice(s)" in message
    d = dx.diagnose(
        dx.DiagnosisInput(
            workload=sliced,
            local_queue=_load("localqueue.json"),
            cluster_queue=_load("clusterqueue.json"),
            resource_flavors=[_load("resourceflavor.json")],
            topologies=[_load("topology.json")],
            nodes=_load("nodes.json")["items"],
            cluster_pods=non_tas,
            cluster_workloads=[sliced],
        )
    )
    [fit] = d.topology
    assert (fit.level, fit.slice_level, fit.slice_size) == (
        "kueue-graphql.example/tas-block", RACK, 3,
    )  # fmt: skip
    assert fit.pods_wanted == 6
    assert fit.kueue_fitting == 3  # one whole slice
    assert fit.domains is not None
    assert [(r.name, r.pods) for r in fit.domains] == [("b1", 3), ("b2", 3)]
    assert "in slices of 3, each in one kueue-graphql.example/tas-rack" in d.summary


def test_without_a_request_the_level_is_kueues_implied_lowest() -> None:
    # tas_flavor_snapshot.go levelKeyWithImpliedFallback: a pod set in a TAS flavor that asks
    # nothing is placed per Node (the lowest level).
    inp = _input(may_list_cluster=True)
    assert isinstance(inp.workload, dict)
    podset = inp.workload["spec"]["podSets"][0]
    podset.pop("topologyRequest")
    podset["template"]["metadata"].pop("annotations", None)
    [fit] = dx.diagnose(inp).topology
    assert (fit.mode, fit.level) == (None, "kubernetes.io/hostname")
    assert fit.domains is not None
    assert len(fit.domains) == 6
