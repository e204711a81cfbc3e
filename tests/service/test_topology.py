"""Topology-aware scheduling (TAS) on the real control plane, read and explained through the
service as a tenant (alice: her namespace only, no Nodes) and as viewer (may list Nodes, Pods
and Workloads everywhere), in both read modes.

The setting (tests/service/topology_setting.py, made and removed here): six 4-cpu Nodes in racks
r1, r2 (block b1) and r3 (block b2), a plain Pod of 3 cpu on one r2 Node, then Jobs of 2-cpu Pods:
`fits` (3 Pods, required rack: admitted in one rack), `spread` (5 Pods, preferred rack: no rack
has room, Kueue falls back and places it across racks), `too-big` (5 Pods, required rack: the
ClusterQueue has the quota, no rack has the room), `sliced` (4 Pods in one block, in slices of 2
each in one rack: one slice fits). The room per rack `diagnose` reports is
checked against a count made here from kubectl's Nodes and Pods (allocatable minus the requests
of the Pods bound to each Node) and against the figure in Kueue's own message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from kueue_graphql.kueue.quantity import parse_quantity
from tests.cluster.driver import Cluster
from tests.service import topology_setting as setting
from tests.service.conftest import Server
from tests.waiting import SETTLE_SECONDS, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes, pytest.mark.changes_nodes]

POD_CPU = 2
SLICE = 2

WORKLOAD = """
query W($ns: String!, $job: String!) {
  workloadFor(namespace: $ns, kind: "Job", name: $job) {
    status
    podSets { name count topologyRequest { mode level sliceLevel sliceSize } }
    admission { podSetAssignments { name count topologyAssignment {
      levels domains { values count } } } }
    job { pods { name nodeName schedulingGates } }
  }
}
"""

DIAGNOSE = """
query D($ns: String!, $job: String!) {
  diagnose(namespace: $ns, kind: "Job", name: $job) {
    stage layer summary nextSteps
    topology {
      podSet topology mode level podsWanted kueueFitting flavor hiddenBecause
      sliceLevel sliceSize
      perPod { resource value { amount } }
      domains { values name pods nodes }
    }
  }
}
"""


def _admitted_and_bound(cluster: Cluster, job: str, pods: int) -> None:
    """Kueue admitted the Job's Workload, lifted every Pod's topology gate, and kube-scheduler
    bound each Pod (to the Node of its domain)."""

    def done() -> bool:
        if setting.condition(setting.workload_of(cluster, job), "Admitted").get("status") != "True":
            return False
        listed = cluster.get_json("pods", "-n", setting.NS, "-l", f"job-name={job}")["items"]
        return len(listed) == pods and all(
            p["spec"].get("nodeName") and not p["spec"].get("schedulingGates") for p in listed
        )

    wait_until(f"Job {job} admitted and its {pods} Pods bound", done, SETTLE_SECONDS, interval=1)


def _tas_message(cluster: Cluster, job: str) -> str:
    reserved = setting.condition(setting.workload_of(cluster, job), "QuotaReserved")
    message = str(reserved.get("message") or "")
    return message if reserved.get("status") == "False" and 'topology "' in message else ""


def _wait_for_tas_verdict(cluster: Cluster, job: str) -> None:
    wait_until(
        f"Kueue's TAS verdict on Job {job}",
        lambda: bool(_tas_message(cluster, job)),
        SETTLE_SECONDS,
        interval=1,
    )


@pytest.fixture(scope="module")
def tas(cluster: Cluster) -> Iterator[Cluster]:
    setting.clean_up(cluster)  # what an interrupted earlier run left
    try:
        setting.set_up(cluster)
        setting.apply(cluster, [setting.NON_TAS_POD])
        setting.apply(cluster, [setting.job("fits", 3, setting.REQUIRED, setting.RACK)])
        _admitted_and_bound(cluster, "fits", 3)
        setting.apply(cluster, [setting.job("spread", 5, setting.PREFERRED, setting.RACK)])
        _admitted_and_bound(cluster, "spread", 5)
        setting.apply(cluster, [setting.job("too-big", 5, setting.REQUIRED, setting.RACK)])
        setting.apply(cluster, [setting.sliced_job("sliced", 4, SLICE)])
        for job in ("too-big", "sliced"):
            _wait_for_tas_verdict(cluster, job)
        yield cluster
    finally:
        setting.clean_up(cluster)


def _rooms_by_kubectl(
    cluster: Cluster, level: str = setting.RACK, slice_size: int = 1
) -> dict[str, int]:
    """2-cpu Pods each rack (or block, in whole slices of racks) has room for, from kubectl's
    Nodes and Pods: per Node, allocatable cpu minus the cpu requests of the Pods bound to it
    (every TAS Pod is bound by now)."""
    nodes = cluster.get_json("nodes", "-l", "kueue-graphql.example/test=topology")["items"]
    used: dict[str, int] = {}
    for pod in cluster.get_json("pods", "-A")["items"]:
        node = pod["spec"].get("nodeName")
        if not node or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for container in pod["spec"]["containers"]:
            cpu = (container.get("resources") or {}).get("requests", {}).get("cpu")
            if cpu is not None:
                used[node] = used.get(node, 0) + int(parse_quantity(cpu).amount * 1000)
    rooms: dict[str, int] = {}
    for node in nodes:
        free = int(parse_quantity(node["status"]["allocatable"]["cpu"]).amount * 1000)
        free -= used.get(node["metadata"]["name"], 0)
        rack = node["metadata"]["labels"][setting.RACK]
        rooms[rack] = rooms.get(rack, 0) + max(free, 0) // (POD_CPU * 1000)
    if level == setting.RACK:
        return rooms
    # Slices of `slice_size` Pods, each in one rack, counted per block.
    blocks: dict[str, int] = {}
    for rack, room in rooms.items():
        block = setting.RACKS[rack]
        blocks[block] = blocks.get(block, 0) + room // slice_size * slice_size
    return blocks


def _rack_of(cluster: Cluster) -> dict[str, str]:
    nodes = cluster.get_json("nodes", "-l", "kueue-graphql.example/test=topology")["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"][setting.RACK] for n in nodes}


async def _ask(server: Server, cluster: Cluster, query: str, job: str, user: str) -> Any:
    body = await server.query(query, {"ns": setting.NS, "job": job}, token=cluster.token(user))
    assert "errors" not in body, body
    return body["data"]


@pytest.mark.parametrize("user", ["alice", "viewer"])
async def test_fits_in_one_rack(server: Server, tas: Cluster, user: str) -> None:
    wl = (await _ask(server, tas, WORKLOAD, "fits", user))["workloadFor"]
    assert wl["status"] == "ADMITTED"
    [podset] = wl["podSets"]
    assert podset["topologyRequest"] == {
        "mode": "required", "level": setting.RACK, "sliceLevel": None, "sliceSize": None,
    }  # fmt: skip
    [assignment] = wl["admission"]["podSetAssignments"]
    placed = assignment["topologyAssignment"]
    # The Topology's lowest level is the hostname: Kueue writes that level alone.
    assert placed["levels"] == [setting.HOST]
    racks = _rack_of(tas)
    assert len({racks[d["values"][0]] for d in placed["domains"]}) == 1, placed
    assert sum(d["count"] for d in placed["domains"]) == 3
    pods = wl["job"]["pods"]
    assert len(pods) == 3
    assert all(p["schedulingGates"] == [] for p in pods)
    on_nodes = sorted(p["nodeName"] for p in pods)
    wanted = sorted(d["values"][0] for d in placed["domains"] for _ in range(d["count"]))
    assert on_nodes == wanted


async def test_preferred_rack_falls_back(server: Server, tas: Cluster) -> None:
    wl = (await _ask(server, tas, WORKLOAD, "spread", "viewer"))["workloadFor"]
    assert wl["status"] == "ADMITTED"
    assert wl["podSets"][0]["topologyRequest"]["mode"] == "preferred"
    placed = wl["admission"]["podSetAssignments"][0]["topologyAssignment"]
    racks = _rack_of(tas)
    # No rack had room for 5 Pods: Kueue placed them across racks rather than not at all.
    assert len({racks[d["values"][0]] for d in placed["domains"]}) > 1, placed
    assert sum(d["count"] for d in placed["domains"]) == 5


async def test_required_rack_too_small_for_a_node_reader(server: Server, tas: Cluster) -> None:
    assert tas.kubectl("auth", "can-i", "list", "nodes", user="viewer").stdout.strip() == "yes"
    d = (await _ask(server, tas, DIAGNOSE, "too-big", "viewer"))["diagnose"]
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    [fit] = d["topology"]
    assert (fit["podSet"], fit["mode"], fit["level"], fit["podsWanted"]) == (
        "main", "required", setting.RACK, 5,
    )  # fmt: skip
    assert (fit["topology"], fit["flavor"]) == (setting.TOPOLOGY, setting.FLAVOR)
    assert fit["perPod"] == [{"resource": "cpu", "value": {"amount": str(POD_CPU)}}]
    assert fit["hiddenBecause"] is None
    rooms = {r["name"]: r["pods"] for r in fit["domains"]}
    assert rooms == _rooms_by_kubectl(tas)
    assert all(r["nodes"] == 2 for r in fit["domains"])
    best = fit["domains"][0]
    assert best["pods"] == max(rooms.values()) < 5
    # Kueue's own message says its best rack takes exactly that many.
    said = re.search(r"allows to fit only (\d+) out of 5", _tas_message(tas, "too-big"))
    assert said is not None
    assert fit["kueueFitting"] == int(said.group(1)) == best["pods"]
    assert f"the best, {best['name']}, has room for {best['pods']}" in d["summary"]
    assert any("podset-preferred-topology" in s for s in d["nextSteps"])


async def test_required_rack_too_small_for_a_tenant(server: Server, tas: Cluster) -> None:
    refused = tas.kubectl("auth", "can-i", "list", "nodes", user="alice", check=False)
    assert refused.stdout.strip() == "no"
    d = (await _ask(server, tas, DIAGNOSE, "too-big", "alice"))["diagnose"]
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    [fit] = d["topology"]
    assert (fit["mode"], fit["level"], fit["podsWanted"]) == ("required", setting.RACK, 5)
    assert fit["domains"] is None
    assert "Nodes" in fit["hiddenBecause"]
    assert fit["kueueFitting"] == max(_rooms_by_kubectl(tas).values())
    assert f"Kueue's best domain has room for {fit['kueueFitting']}" in d["summary"]
    shown = json.dumps(d)
    assert "tas-r" not in shown.replace("tas-rack", ""), shown
    assert not re.search(r"\br[123]\b", shown), shown


async def test_slices_counted_whole(server: Server, tas: Cluster) -> None:
    d = (await _ask(server, tas, DIAGNOSE, "sliced", "viewer"))["diagnose"]
    [fit] = d["topology"]
    assert (fit["level"], fit["sliceLevel"], fit["sliceSize"], fit["podsWanted"]) == (
        setting.BLOCK, setting.RACK, SLICE, 4,
    )  # fmt: skip
    rooms = {r["name"]: r["pods"] for r in fit["domains"]}
    assert rooms == _rooms_by_kubectl(tas, setting.BLOCK, SLICE)
    said = re.search(r"allows to fit only (\d+) out of 2 slice", _tas_message(tas, "sliced"))
    assert said is not None, _tas_message(tas, "sliced")
    assert fit["kueueFitting"] == int(said.group(1)) * SLICE == max(rooms.values())
