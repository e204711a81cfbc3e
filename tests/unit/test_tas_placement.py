"""Kueue's TAS placement (kueue_graphql.kueue.tas_placement) on objects captured from the real
control plane (tests/fixtures/topology/README.md): the assignment and the message must be the
ones Kueue v0.17.0 wrote for the same objects."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from kueue_graphql.kueue.tas_placement import PlacementAsk, TasSnapshot
from kueue_graphql.kueue.topology import (
    TopologyRequest,
    decode_assignment,
    podset_topology_request,
    tas_leaves,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "topology"
RACK = "kueue-graphql.example/tas-rack"
BLOCK = "kueue-graphql.example/tas-block"
TWO_CPU = {"cpu": Decimal(2)}


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _snapshot(workloads: list[Any]) -> TasSnapshot:
    flavor = _load("resourceflavor.json")
    levels = [lv["nodeLabel"] for lv in _load("topology.json")["spec"]["levels"]]
    leaves = tas_leaves(
        levels=levels,
        flavor=flavor,
        flavor_names=frozenset({flavor["metadata"]["name"]}),
        nodes=_load("nodes.json")["items"],
        pods=_load("pods.json")["items"],
        workloads=workloads,
    )
    return TasSnapshot("tas-test-topology", levels, leaves, flavor["spec"]["tolerations"])


def _workloads() -> list[Any]:
    return list(_load("workloads.json")["items"])


def _named(prefix: str) -> Any:
    return next(w for w in _workloads() if w["metadata"]["name"].startswith(prefix))


def _message(workload: Any) -> str:
    reserved = next(c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")
    return str(reserved["message"]).removeprefix("couldn't assign flavors to pod set main: ")


def test_fits_where_kueue_placed_it() -> None:
    """Job `fits` (3 Pods, required rack), asked without its own usage: Kueue's assignment."""
    fits = _named("job-fits")
    others = [w for w in _workloads() if w["metadata"]["name"] != fits["metadata"]["name"]]
    found = _snapshot(others).find(
        PlacementAsk(3, TWO_CPU, podset_topology_request(fits["spec"]["podSets"][0]))
    )
    kueue = decode_assignment(
        fits["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    )
    assert found.assignment == kueue
    assert found.level == RACK
    assert found.domains == (("b1", "r1"),)


def test_required_rack_too_small_says_what_kueue_says() -> None:
    too_big = _named("job-too-big")
    found = _snapshot(_workloads()).find(
        PlacementAsk(5, TWO_CPU, podset_topology_request(too_big["spec"]["podSets"][0]))
    )
    assert found.assignment is None
    assert (found.fitting, found.wanted) == (4, 5)
    assert found.reason == _message(too_big)


def test_preferred_falls_back_to_the_blocks_as_kueue_did() -> None:
    """Job `spread` (5 Pods, preferred rack) was admitted while `fits` held r1: no rack, no
    block takes 5, so Kueue spread it over b2 and one Pod in b1."""
    spread = _load("workload-spread.json")
    found = _snapshot(_workloads()).find(
        PlacementAsk(5, TWO_CPU, podset_topology_request(spread["spec"]["podSets"][0]))
    )
    placed = spread["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert found.assignment == decode_assignment(placed)
    assert found.level == BLOCK
    assert set(found.domains) == {("b1",), ("b2",)}


def test_slices_count_whole_slices_as_kueue_did() -> None:
    """Job `sliced` (6 Pods in one block, slices of 3 each in one rack), captured with only the
    plain Pod: one slice fits."""
    sliced = _load("workload-sliced.json")
    found = _snapshot([]).find(
        PlacementAsk(6, TWO_CPU, podset_topology_request(sliced["spec"]["podSets"][0]))
    )
    assert found.assignment is None
    assert (found.fitting, found.wanted) == (1, 2)
    assert found.reason == _message(sliced)


def test_two_slices_of_two_fit_in_one_rack_each() -> None:
    found = _snapshot([]).find(
        PlacementAsk(4, TWO_CPU, TopologyRequest("required", BLOCK, RACK, 2))
    )
    assert found.assignment is not None
    racks = {d.values[0].split("-n")[0] for d in found.assignment.domains}
    assert sum(d.count for d in found.assignment.domains) == 4
    assert found.level == BLOCK
    # Best fit: block b2 (room 4) takes exactly 2 slices; b1 has room 6 (r2 holds the plain Pod).
    assert found.domains == (("b2",),)
    assert racks == {"tas-r3"}


def test_simulate_empty_ignores_admitted_usage() -> None:
    """With `fits` admitted in r1 no rack takes 4 more Pods; with no TAS Workload r1 would."""
    ask = PlacementAsk(4, TWO_CPU, TopologyRequest("required", RACK))
    snapshot = _snapshot(_workloads())
    assert snapshot.find(ask).assignment is not None  # r3 is free
    assumed = {("b2", "r3", "tas-r3-n1"): {"cpu": 4000}, ("b2", "r3", "tas-r3-n2"): {"cpu": 4000}}
    assert snapshot.find(ask, assumed).assignment is None
    assert snapshot.find(ask, assumed, simulate_empty=True).domains == (("b1", "r1"),)


def test_untolerated_taint_and_node_selector_are_counted_in_the_message() -> None:
    snapshot = _snapshot([])
    snapshot.tolerations = []
    found = snapshot.find(PlacementAsk(1, TWO_CPU, TopologyRequest("required", RACK)))
    assert found.reason == (
        'topology "tas-test-topology" doesn\'t allow to fit any of 1 pod(s). Total nodes: 6; '
        'excluded: taint "kueue-graphql.example/tas-only=true:NoSchedule": 6'
    )
    found = _snapshot([]).find(
        PlacementAsk(1, TWO_CPU, TopologyRequest("required", RACK), node_selector={"a": "b"})
    )
    assert found.reason.endswith("excluded: nodeSelector: 6")


def test_requests_kueue_refuses() -> None:
    snapshot = _snapshot([])
    assert snapshot.find(PlacementAsk(1, TWO_CPU, None)).reason == "topology level not specified"
    assert snapshot.find(PlacementAsk(1, TWO_CPU, TopologyRequest("required", "zone"))).reason == (
        "no requested topology level: zone"
    )
    assert (
        snapshot.find(PlacementAsk(2, TWO_CPU, TopologyRequest("required", RACK, BLOCK, 2))).reason
        == f"podset slice topology {BLOCK} is above the podset topology {RACK}"
    )
    implied = snapshot.find(PlacementAsk(1, TWO_CPU, None, implied=True))
    assert implied.assignment is not None
    assert len(implied.assignment.domains) == 1


def test_an_overdrawn_node_counts_negative_as_kueue_says() -> None:
    """A Node whose "pods" allocatable Pods Kueue did not place use up (as seen on the real
    Kueue: 'allows to fit only -1 out of 1 pod(s)'): Go's division truncates toward zero."""
    from kueue_graphql.kueue.topology import TasLeaf

    leaf = TasLeaf(("b1", "r1"), [{}], {"cpu": 1000, "pods": -1}, {})
    snapshot = TasSnapshot("t", ["block", "rack"], {leaf.values: leaf})
    found = snapshot.find(PlacementAsk(1, {"cpu": Decimal(1)}, TopologyRequest("required", "rack")))
    assert found.reason == 'topology "t" allows to fit only -1 out of 1 pod(s)'
    leaf.free["pods"] = -3
    found = snapshot.find(PlacementAsk(1, {"cpu": Decimal(1)}, TopologyRequest("required", "rack")))
    assert found.fitting == -3
