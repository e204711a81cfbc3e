"""Issue 21, class "Several flavors", on the real Kueue: when Kueue tried two flavors for a pod
set, the summary and the next steps speak from both, never from the first one alone.

Its own ClusterQueue offers flavors several-a (1 CPU) and several-b (2 CPU, held by an admitted
Workload of 2 CPU). Kueue's own messages, as v0.17.0 writes them:
- `never` asks 3 CPU: more than either flavor can ever provide (ExceedsMaxQuota twice);
- `waits` asks 2 CPU: several-a can never provide it, several-b could once its 2 CPU are free
  (ExceedsMaxQuota, then WaitingForQuota). It must WAIT, not be told to shrink.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.diagnosis.own_objects import apply, quota_message
from tests.service.conftest import Server
from tests.teardown import remove, remove_namespace
from tests.waiting import SETTLE_SECONDS, wait_until

pytestmark = pytest.mark.cluster

NS, CQ = "several-flavors", "several-flavors-cq"
LABELS = {"kueue-graphql.example/test": "several-flavors"}

QUERY = """
query Several($ns: String!, $name: String!) {
  diagnose(namespace: $ns, kind: "Workload", name: $name) {
    stage summary nextSteps
    reasons { code flavor }
    quota { verdict lines { flavor verdict } }
  }
}
"""


def _workload(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NS, "labels": LABELS},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.invalid/never-pulled",
                                "resources": {"requests": {"cpu": cpu}}}]}}}],
        },
    }  # fmt: skip


def _objects() -> list[dict[str, Any]]:
    group = "kueue.x-k8s.io/v1beta2"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": LABELS}},
        *({"apiVersion": group, "kind": "ResourceFlavor", "metadata": {"name": f, "labels": LABELS}}
          for f in ("several-a", "several-b")),
        {"apiVersion": group, "kind": "ClusterQueue", "metadata": {"name": CQ, "labels": LABELS},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                  "flavors": [
                      {"name": "several-a", "resources": [{"name": "cpu", "nominalQuota": "1"}]},
                      {"name": "several-b", "resources": [{"name": "cpu", "nominalQuota": "2"}]},
                  ]}]}},
        {"apiVersion": group, "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": NS, "labels": LABELS},
         "spec": {"clusterQueue": CQ}},
    ]  # fmt: skip


def _reserved(cluster: Cluster) -> int:
    status = cluster.get_json("clusterqueue", CQ).get("status") or {}
    for flavor in status.get("flavorsReservation") or []:
        if flavor["name"] == "several-b":
            return sum(int(r.get("total", "0")) for r in flavor["resources"])
    return 0


@pytest.fixture(scope="module")
def setting(cluster: Cluster) -> Iterator[None]:
    apply(cluster, _objects())
    apply(cluster, [_workload("holder", "2")])
    wait_until(
        "holder admitted in several-b",
        lambda: "several-b"
        in str(cluster.get_json("workload", "holder", "-n", NS).get("status", {}).get("admission")),
        SETTLE_SECONDS,
    )
    # The ClusterQueue's status counts it too (Kueue writes it apart from the Workload's).
    wait_until(
        "the ClusterQueue's reservation of the holder",
        lambda: _reserved(cluster) == 2,
        SETTLE_SECONDS,
        detail=lambda: f"reserved: {_reserved(cluster)}",
    )
    apply(cluster, [_workload("never", "3"), _workload("waits", "2")])
    # Kueue's own verdicts first: the port is wrong if Kueue does not say this.
    wait_until(
        "Kueue's two-flavor messages",
        lambda: quota_message(cluster, "never", NS).count("maximum capacity") == 2
        and "2 more needed" in quota_message(cluster, "waits", NS),
        SETTLE_SECONDS,
        detail=lambda: repr([quota_message(cluster, n, NS) for n in ("never", "waits")]),
    )
    yield
    remove_namespace(cluster, NS)
    remove(cluster, "clusterqueues", "-l", "kueue-graphql.example/test=several-flavors")
    remove(cluster, "resourceflavors", "-l", "kueue-graphql.example/test=several-flavors")


async def _diagnose(server: Server, cluster: Cluster, name: str) -> dict[str, Any]:
    body = await server.query(QUERY, {"ns": NS, "name": name}, token=cluster.token("admin"))
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["diagnose"]
    return result


async def test_never_fits_names_every_flavor_tried(
    setting: None, server: Server, cluster: Cluster
) -> None:
    d = await _diagnose(server, cluster, "never")
    assert [r["code"] for r in d["reasons"]] == ["ExceedsMaxQuota", "ExceedsMaxQuota"]
    assert d["quota"]["verdict"] == "NEVER_FITS"
    assert "3 cpu at once" in d["summary"]
    assert "2 in flavor several-b" in d["summary"]
    assert "1 in flavor several-a" in d["summary"]
    shrink = [s for s in d["nextSteps"] if s.startswith("Shrink the request")]
    assert len(shrink) == 1, d["nextSteps"]
    assert "several-a" in shrink[0]
    assert "several-b" in shrink[0]


async def test_a_flavor_that_only_waits_means_wait_not_shrink(
    setting: None, server: Server, cluster: Cluster
) -> None:
    d = await _diagnose(server, cluster, "waits")
    assert sorted(r["code"] for r in d["reasons"]) == ["ExceedsMaxQuota", "WaitingForQuota"]
    assert d["quota"]["verdict"] == "MUST_WAIT"
    assert d["summary"].startswith("waits for quota: 2 more cpu must be free in flavor several-b")
    assert "at most 1 in flavor several-a" in d["summary"]
    assert not [s for s in d["nextSteps"] if s.startswith("Shrink")], d["nextSteps"]
    assert any(s.startswith("Wait: 2 more cpu") and "several-b" in s for s in d["nextSteps"])
