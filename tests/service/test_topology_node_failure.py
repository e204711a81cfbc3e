"""A Node that fails under an admitted topology-aware (TAS) Workload, on the real control plane
(Kueue v0.17.0, its node-failure feature gates at their defaults: on), read through `diagnose`
and `Workload.unhealthyNodes` as viewer (may list Nodes) and as alice (her namespace only), in
both read modes.

The setting of tests/service/topology_setting.py (its six fake Nodes, no kubelet): Job `held`, 4
Pods of 2 cpu in one rack (required), fills both 4-cpu Nodes of that rack. Then one of them goes
NotReady (Ready=False on the status subresource, as a node lifecycle controller writes it) and
the other is tainted NoExecute. Kueue changes nothing while the Pods on them are still there
(TASReplaceNodeOnPodTermination). Then the NotReady Node's Pods are deleted, as the taint
manager would: they stay Terminating (no kubelet), Kueue marks the Node failed, finds no
replacement in the rack (the other Node is full and tainted) and evicts the Workload with reason
NodeFailures (TASFailedNodeReplacementFailFast), then re-admits it in another rack.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.service import topology_setting as setting
from tests.service.conftest import Server
from tests.teardown import force_delete_pods
from tests.waiting import SETTLE_SECONDS, async_wait_until, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes, pytest.mark.changes_nodes]

JOB = "held"
PODS = 4
BROKEN_TAINT = "example.com/broken=true:NoExecute"

DIAGNOSE = """
query D($ns: String!, $job: String!) {
  diagnose(namespace: $ns, kind: "Job", name: $job) {
    stage layer summary nextSteps
    blockingObject { __typename ... on KubernetesNode { name } }
    reasons { code message object { kind name } }
  }
  workloadFor(namespace: $ns, kind: "Job", name: $job) { status unhealthyNodes }
}
"""


def _held_job() -> dict[str, Any]:
    made = setting.job(JOB, PODS, setting.REQUIRED, setting.RACK)
    made["spec"]["backoffLimit"] = 10  # the deleted Pods count as failures
    return made


def _pods_by_node(cluster: Cluster) -> dict[str, list[str]]:
    listed = cluster.get_json("pods", "-n", setting.NS, "-l", f"job-name={JOB}")["items"]
    out: dict[str, list[str]] = {}
    for pod in listed:
        if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            out.setdefault(pod["spec"]["nodeName"], []).append(pod["metadata"]["name"])
    return out


def _not_ready(cluster: Cluster, node: str) -> None:
    """Ready=False since now, as the node lifecycle controller writes it. (Without a
    lastTransitionTime Kueue takes the Node for NotReady since ever, past its 30 s delay, and
    marks it failed at once.)"""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p",
                    json.dumps({"status": {"conditions": [
                        {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                         "lastTransitionTime": now, "lastHeartbeatTime": now,
                         "message": "simulated: kubelet stopped posting"}]}}))  # fmt: skip


@pytest.fixture(scope="module")
def failed(cluster: Cluster) -> Iterator[dict[str, str]]:
    setting.clean_up(cluster)  # what an interrupted earlier run left
    try:
        setting.set_up(cluster)
        setting.apply(cluster, [_held_job()])

        def placed() -> bool:
            wl = setting.workload_of(cluster, JOB)
            on = _pods_by_node(cluster)
            return setting.condition(wl, "Admitted").get("status") == "True" and (
                sum(len(p) for p in on.values()) == PODS
            )

        wait_until(f"Job {JOB} admitted and bound", placed, SETTLE_SECONDS, interval=1)
        not_ready, tainted = sorted(_pods_by_node(cluster))
        _not_ready(cluster, not_ready)
        cluster.kubectl("taint", "node", tainted, BROKEN_TAINT)
        # Observed: while the Workload's Pods are still on them, Kueue leaves it as it was.
        wl = setting.workload_of(cluster, JOB)
        assert setting.condition(wl, "Admitted").get("status") == "True"
        assert not (wl or {}).get("status", {}).get("unhealthyNodes")
        # The taint manager's eviction, which this control plane does not run.
        cluster.kubectl("delete", "pods", "-n", setting.NS, *_pods_by_node(cluster)[not_ready],
                        "--wait=false")  # fmt: skip

        def evicted_and_readmitted() -> bool:
            wl = setting.workload_of(cluster, JOB)
            requeued = setting.condition(wl, "Requeued")
            return (
                requeued.get("reason") == "NodeFailures"
                and setting.condition(wl, "Admitted").get("status") == "True"
            )

        wait_until(
            "Kueue's NodeFailures eviction and re-admission",
            evicted_and_readmitted,
            SETTLE_SECONDS,
            interval=1,
        )
        yield {"not_ready": not_ready, "tainted": tainted}
    finally:
        force_delete_pods(cluster, setting.NS)
        setting.clean_up(cluster)


async def _diagnose(server: Server, cluster: Cluster, user: str, want: str) -> Any:
    """The answer once it carries reason `want` (the cache-mode server follows the watch)."""
    answer: dict[str, Any] = {}

    async def has_it() -> bool:
        body = await server.query(
            DIAGNOSE, {"ns": setting.NS, "job": JOB}, token=cluster.token(user)
        )
        assert "errors" not in body, body
        answer.update(body["data"])
        return any(r["code"] == want for r in body["data"]["diagnose"]["reasons"])

    await async_wait_until(
        f"diagnose as {user} giving {want}", has_it, interval=1, detail=lambda: str(answer)
    )
    return answer


def _requeued_message(cluster: Cluster) -> str:
    wl = setting.workload_of(cluster, JOB)
    return str(setting.condition(wl, "Requeued").get("message"))


async def test_node_reader_sees_the_eviction_and_the_failed_nodes(
    server: Server, cluster: Cluster, failed: dict[str, str]
) -> None:
    assert cluster.kubectl("auth", "can-i", "list", "nodes", user="viewer").stdout.strip() == "yes"
    data = await _diagnose(server, cluster, "viewer", "TopologyNodeUnhealthy")
    d, wl = data["diagnose"], data["workloadFor"]
    assert wl["status"] == "ADMITTED"
    # As kubectl shows: Kueue cleared unhealthyNodes when it evicted.
    kubectl_wl = setting.workload_of(cluster, JOB) or {}
    assert (
        wl["unhealthyNodes"]
        == [n["name"] for n in kubectl_wl["status"].get("unhealthyNodes") or []]
        == []
    )
    by_code: dict[str, list[Any]] = {}
    for r in d["reasons"]:
        by_code.setdefault(r["code"], []).append(r)
    [eviction] = by_code["NodeFailures"]
    message = _requeued_message(cluster)
    assert failed["not_ready"] in message
    assert message in eviction["message"]
    assert d["summary"].startswith("Kueue evicted the Workload at ")
    assert d["blockingObject"] == {"__typename": "KubernetesNode", "name": failed["not_ready"]}
    troubles = {r["object"]["name"]: r["message"] for r in by_code["TopologyNodeUnhealthy"]}
    assert set(troubles) == {failed["not_ready"], failed["tainted"]}
    node = cluster.get_json("node", failed["not_ready"])
    [ready] = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert (
        f"NotReady (Ready=False) since {ready['lastTransitionTime']}"
        in troubles[failed["not_ready"]]
    )
    assert f"tainted {BROKEN_TAINT}" in troubles[failed["tainted"]]
    assert any(f"kubectl describe node {failed['not_ready']}" in s for s in d["nextSteps"])


async def test_tenant_sees_what_her_workload_says_and_no_node_state(
    server: Server, cluster: Cluster, failed: dict[str, str]
) -> None:
    refused = cluster.kubectl("auth", "can-i", "list", "nodes", user="alice", check=False)
    assert refused.stdout.strip() == "no"
    data = await _diagnose(server, cluster, "alice", "NodeFailures")
    d = data["diagnose"]
    codes = {r["code"] for r in d["reasons"]}
    assert "TopologyNodeUnhealthy" not in codes
    [eviction] = [r for r in d["reasons"] if r["code"] == "NodeFailures"]
    # Her Workload names the Node in Kueue's message: that much she may see.
    assert _requeued_message(cluster) in eviction["message"]
    shown = json.dumps(d)
    assert "NotReady" not in shown
    assert "broken" not in shown
