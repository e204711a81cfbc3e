"""TAS as Kueue v0.17.0 reads and counts it (kueue_graphql.kueue.topology), on objects captured
from the real control plane (tests/fixtures/topology/README.md): the room per domain must be
what Kueue's own message for the same objects says."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from kueue_graphql.kueue.requests import kueue_podset_requests
from kueue_graphql.kueue.topology import (
    DomainAssignment,
    TopologyRequest,
    decode_assignment,
    domain_rooms,
    is_tas_pod,
    podset_topology_request,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "topology"
RACK = "kueue-graphql.example/tas-rack"
BLOCK = "kueue-graphql.example/tas-block"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _captured() -> dict[str, Any]:
    workloads = _load("workloads.json")["items"]
    return {
        "nodes": _load("nodes.json")["items"],
        "pods": _load("pods.json")["items"],
        "workloads": workloads,
        "flavor": _load("resourceflavor.json"),
        "levels": [lv["nodeLabel"] for lv in _load("topology.json")["spec"]["levels"]],
        "too_big": next(w for w in workloads if w["metadata"]["name"].startswith("job-too-big")),
    }


def _rooms(c: dict[str, Any], level: str) -> dict[str, int]:
    podset = c["too_big"]["spec"]["podSets"][0]
    found = domain_rooms(
        levels=c["levels"],
        level=level,
        flavor=c["flavor"],
        flavor_names=frozenset({c["flavor"]["metadata"]["name"]}),
        per_pod={r: q.amount for r, q in kueue_podset_requests(c["too_big"])[0].per_pod.items()},
        pod_template=podset["template"],
        nodes=c["nodes"],
        pods=c["pods"],
        workloads=c["workloads"],
    )
    return {r.name: r.pods for r in found}


def _kueue_message(workload: dict[str, Any]) -> str:
    return next(
        c["message"] for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved"
    )


def test_room_per_rack_is_what_kueues_message_says() -> None:
    c = _captured()
    message = _kueue_message(c["too_big"])
    fit = re.search(r"allows to fit only (\d+) out of (\d+) pod", message)
    assert fit is not None, message
    racks = _rooms(c, RACK)
    # Kueue's best rack holds exactly the Pods its message says fit.
    assert max(racks.values()) == int(fit.group(1))
    # r3 is empty; r2 lost 3 cpu of one Node to the non-TAS Pod; r1 holds the admitted
    # 3-Pod Workload `fits` (2 Pods on n1, 1 on n2), leaving n2 room for one more.
    assert racks == {"r3": 4, "r2": 2, "r1": 1}
    hosts = _rooms(c, "kubernetes.io/hostname")
    # "excluded: resource \"cpu\": 2": the two Nodes without room for one Pod.
    excluded = re.search(r'excluded: resource "cpu": (\d+)', message)
    assert excluded is not None
    assert sum(1 for room in hosts.values() if room == 0) == int(excluded.group(1))
    assert _rooms(c, BLOCK) == {"b2": 4, "b1": 3}


def test_a_node_not_ready_tainted_or_cordoned_holds_nothing() -> None:
    c = _captured()
    nodes = copy.deepcopy(c["nodes"])
    by_name = {n["metadata"]["name"]: n for n in nodes}
    by_name["tas-r3-n1"]["status"]["conditions"][0]["status"] = "False"
    by_name["tas-r3-n2"]["spec"]["taints"].append({"key": "other", "effect": "NoExecute"})
    by_name["tas-r2-n2"]["spec"]["unschedulable"] = True
    assert _rooms({**c, "nodes": nodes}, RACK) == {"r3": 0, "r2": 0, "r1": 1}


def test_non_tas_pods_count_tas_pods_count_through_their_workload() -> None:
    c = _captured()
    non_tas = next(p for p in c["pods"] if p["metadata"]["name"] == "non-tas")
    assert not is_tas_pod(non_tas)
    assert all(is_tas_pod(p) for p in c["pods"] if p is not non_tas)
    finished = copy.deepcopy(c["pods"])
    for pod in finished:
        if pod["metadata"]["name"] == "non-tas":
            pod["status"]["phase"] = "Succeeded"
    assert _rooms({**c, "pods": finished}, RACK)["r2"] == 4
    # Without the admitted Workload its Pods free nothing by themselves: Kueue counts the
    # Workload's topologyAssignment, not the TAS Pods.
    others = [w for w in c["workloads"] if w is not c["too_big"]]
    assert _rooms({**c, "workloads": [c["too_big"]]}, RACK)["r1"] == 4
    assert _rooms({**c, "workloads": others}, RACK)["r1"] == 1


def test_request_from_spec_and_from_annotations() -> None:
    c = _captured()
    podset = c["too_big"]["spec"]["podSets"][0]
    assert podset_topology_request(podset) == TopologyRequest("required", RACK)
    by_hand = {"template": {"metadata": {"annotations": {
        "kueue.x-k8s.io/podset-preferred-topology": BLOCK,
        "kueue.x-k8s.io/podset-slice-required-topology": RACK,
        "kueue.x-k8s.io/podset-slice-size": "2"}}}}  # fmt: skip
    assert podset_topology_request(by_hand) == TopologyRequest("preferred", BLOCK, RACK, 2)
    assert podset_topology_request({"template": {}}) is None


def test_assignment_decoded_as_kueue_does() -> None:
    spread = _load("workload-spread.json")
    raw = spread["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    decoded = decode_assignment(raw)
    assert decoded is not None
    assert decoded.levels == ("kubernetes.io/hostname",)
    # prefix "tas-r" + roots ["1-n2", "3-n1", "3-n2"], podCounts.individual [1, 2, 2]
    assert decoded.domains == (
        DomainAssignment(("tas-r1-n2",), 1),
        DomainAssignment(("tas-r3-n1",), 2),
        DomainAssignment(("tas-r3-n2",), 2),
    )
    assert sum(d.count for d in decoded.domains) == spread["spec"]["podSets"][0]["count"]
    # workload_types.go Example 2: universal value, prefix, individual counts.
    example = {"levels": [BLOCK, RACK], "slices": [{"domainCount": 2, "valuesPerLevel": [
        {"universal": "block-1"}, {"individual": {"prefix": "rack-", "roots": ["1", "2"]}}],
        "podCounts": {"individual": [4, 2]}}]}  # fmt: skip
    plain = {"levels": [BLOCK, RACK], "slices": [{"domainCount": 2, "valuesPerLevel": [
        {"individual": {"roots": ["block-1", "block-1"]}},
        {"individual": {"roots": ["rack-1", "rack-2"]}}],
        "podCounts": {"individual": [4, 2]}}]}  # fmt: skip
    assert decode_assignment(example) == decode_assignment(plain)
    decoded_example = decode_assignment(example)
    assert decoded_example is not None
    assert decoded_example.domains == (
        DomainAssignment(("block-1", "rack-1"), 4),
        DomainAssignment(("block-1", "rack-2"), 2),
    )
    assert decode_assignment({"levels": []}) is None
    assert decode_assignment("x") is None
