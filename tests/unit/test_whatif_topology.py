"""whatIf's TAS step (kueue_graphql.whatif.topology) on objects captured from the real control
plane (tests/fixtures/topology/README.md): the verdict, the assignment and Kueue's message for
pod sets as the captured Jobs ask them, what a caller who may not list Nodes gets, and Kueue's
flavor checks for TAS (checkPodSetAndFlavorMatchForTAS)."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from kueue_graphql.kueue.model import Forbidden, Verdict
from kueue_graphql.kueue.topology import TopologyRequest, decode_assignment
from kueue_graphql.whatif import ProposedPodSet, TopologyInput, WhatIfInput, what_if

FIXTURES = Path(__file__).parents[1] / "fixtures" / "topology"
RACK = "kueue-graphql.example/tas-rack"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _input(
    pods: int,
    request: TopologyRequest | None,
    *,
    tas: TopologyInput | None = None,
    flavors: list[Any] | None = None,
    workloads: list[Any] | None = None,
) -> WhatIfInput:
    cq = _load("clusterqueue.json")
    every = _load("workloads.json")["items"] if workloads is None else workloads
    return WhatIfInput(
        namespace="tas-a",
        local_queue=_load("localqueue.json"),
        pod_sets=[ProposedPodSet("main", pods, {"cpu": Decimal(2)}, topology=request)],
        cluster_queue=cq,
        resource_flavors=flavors if flavors is not None else [_load("resourceflavor.json")],
        namespace_labels={"kubernetes.io/metadata.name": "tas-a"},
        tas=tas
        or TopologyInput(
            topologies=[_load("topology.json")],
            nodes=_load("nodes.json")["items"],
            pods=_load("pods.json")["items"],
            workloads=every,
        ),
    )


def _without_fits() -> list[Any]:
    return [
        w
        for w in _load("workloads.json")["items"]
        if not w["metadata"]["name"].startswith("job-fits")
    ]


def test_fits_in_the_rack_kueue_chose() -> None:
    result = what_if(_input(3, TopologyRequest("required", RACK), workloads=_without_fits()))
    assert result.verdict is Verdict.FITS_NOW
    placed = result.pod_sets[0].topology
    assert placed is not None
    fits = next(
        w for w in _load("workloads.json")["items"] if w["metadata"]["name"].startswith("job-fits")
    )
    kueue = decode_assignment(
        fits["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    )
    assert placed.assignment == kueue
    assert placed.domains == (("b1", "r1"),)
    assert "placed by topology-aware scheduling in one" in result.summary
    assert "r1" in result.summary


def test_required_rack_never_fits_with_kueues_message() -> None:
    """Job `too-big`: no rack takes 5 Pods of 2 cpu even empty (2 Nodes of 4 cpu per rack)."""
    result = what_if(_input(5, TopologyRequest("required", RACK)))
    too_big = next(
        w
        for w in _load("workloads.json")["items"]
        if w["metadata"]["name"].startswith("job-too-big")
    )
    said = next(c for c in too_big["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert (result.verdict, result.limited_by) == (Verdict.NEVER_FITS, "TOPOLOGY")
    assert result.kueue_message == said["message"]
    placed = result.pod_sets[0].topology
    assert placed is not None
    assert placed.most_ever == 4
    assert any(
        "largest takes 4 of 5 Pods even with nothing running" in s for s in result.next_steps
    )
    assert any("podset-preferred-topology" in s for s in result.next_steps)


def test_must_wait_when_admitted_tas_workloads_hold_the_room() -> None:
    """4 Pods in one rack: r1 holds `fits` (room 1), r2 the plain Pod (room 2), and a
    fictitious admitted copy of `fits` fills r3: nothing now, r1 once they go."""
    fits = next(
        w for w in _load("workloads.json")["items"] if w["metadata"]["name"].startswith("job-fits")
    )
    in_r3 = copy.deepcopy(fits)
    in_r3["metadata"]["name"] = "in-r3"
    in_r3["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [{"domainCount": 2, "podCounts": {"universal": 2}, "valuesPerLevel": [
            {"individual": {"prefix": "tas-r3-n", "roots": ["1", "2"]}}]}],
    }  # fmt: skip
    result = what_if(_input(4, TopologyRequest("required", RACK), workloads=[fits, in_r3]))
    assert (result.verdict, result.limited_by) == (Verdict.MUST_WAIT, "TOPOLOGY")
    assert result.kueue_message is not None
    assert "allows to fit only 2 out of 4 pod(s)" in result.kueue_message


def test_hidden_names_keep_the_verdict() -> None:
    tas = TopologyInput(
        topologies=[_load("topology.json")],
        nodes=_load("nodes.json")["items"],
        pods=_load("pods.json")["items"],
        workloads=_without_fits(),
        names_shown=False,
        hidden_because="you may not list Nodes",
    )
    result = what_if(_input(3, TopologyRequest("required", RACK), tas=tas))
    placed = result.pod_sets[0].topology
    assert placed is not None
    assert result.verdict is Verdict.FITS_NOW
    assert (placed.domains, placed.assignment, placed.placed_at) == (None, None, RACK)
    assert "tas-r" not in result.summary.replace("tas-rack", "")


def test_unreadable_nodes_leave_the_tas_step_unknown() -> None:
    tas = TopologyInput(
        topologies=[_load("topology.json")],
        nodes=Forbidden("nodes is forbidden"),
        names_shown=False,
        hidden_because="you may not list Nodes (the quota disclosure policy is off)",
    )
    result = what_if(_input(3, TopologyRequest("required", RACK), tas=tas))
    assert (result.verdict, result.limited_by) == (Verdict.UNKNOWN, "TOPOLOGY")
    placed = result.pod_sets[0].topology
    assert placed is not None
    assert "you may not list Nodes" in placed.why


def test_a_plain_pod_set_may_not_take_a_tas_flavor_of_a_mixed_cluster_queue() -> None:
    """checkPodSetAndFlavorMatchForTAS: the ClusterQueue is TAS-only (its one flavor has a
    Topology), so a pod set without a request is placed (implied); add a second flavor
    without a Topology and the plain pod set may no longer take the TAS one."""
    implied = what_if(_input(1, None, workloads=_without_fits()))
    assert implied.verdict is Verdict.FITS_NOW
    assert implied.pod_sets[0].topology is not None
    cq = _load("clusterqueue.json")
    cq["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "plain", "resources": [{"name": "cpu", "nominalQuota": "10"}]}
    )
    flavors = [_load("resourceflavor.json"), {"metadata": {"name": "plain"}, "spec": {}}]
    inp = _input(1, None, flavors=flavors)
    inp = WhatIfInput(**{**inp.__dict__, "cluster_queue": cq})
    mixed = what_if(inp)
    [group] = mixed.pod_sets[0].groups
    tas_attempt = group.attempts[0]
    assert tas_attempt.reasons == (
        'Flavor "tas-test-flavor" supports only TopologyAwareScheduling',
    )
    assert group.flavor == "plain"
    assert mixed.pod_sets[0].topology is None
    # And a pod set asking TAS may not take a flavor without a Topology (tried first here).
    cq["spec"]["resourceGroups"][0]["flavors"].reverse()
    asks = _input(1, TopologyRequest("required", RACK), flavors=flavors, workloads=_without_fits())
    result = what_if(WhatIfInput(**{**asks.__dict__, "cluster_queue": cq}))
    [group] = result.pod_sets[0].groups
    assert group.attempts[0].reasons == ('Flavor "plain" does not support TopologyAwareScheduling',)
    assert group.flavor == "tas-test-flavor"
    assert result.verdict is Verdict.FITS_NOW


def test_from_job_reads_the_templates_topology_annotations() -> None:
    """fromJob: Kueue builds the pod set's topologyRequest from the template's annotations."""
    from kueue_graphql.whatif import pod_sets_from_job

    annotations = {
        "kueue.x-k8s.io/podset-required-topology": "kueue-graphql.example/tas-block",
        "kueue.x-k8s.io/podset-slice-required-topology": RACK,
        "kueue.x-k8s.io/podset-slice-size": "2",
    }
    job = {
        "spec": {
            "parallelism": 4,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
            },
        }
    }
    [pod_set] = pod_sets_from_job(job)
    assert pod_set.topology == TopologyRequest(
        "required", "kueue-graphql.example/tas-block", RACK, 2
    )
    plain = {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    assert pod_sets_from_job(plain)[0].topology is None
