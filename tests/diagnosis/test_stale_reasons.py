"""Issue 21, class "Stale reasons", on the real Kueue: a reason Kueue wrote before its queue was
stopped is not shown as current, and no next step is given from it.

Its own BestEffortFIFO ClusterQueue has 2 CPU, held by `holder`; `waits` asks 2 CPU and Kueue
writes "insufficient unused quota ... 2 more needed" (QuotaReserved=False and a Pending event).
Stopping the LocalQueue (or the ClusterQueue) makes Kueue rewrite the condition ("LocalQueue lq
is inactive", or "ClusterQueue ... is inactive") but the Pending event stays the latest: before
the fix the diagnosis showed its quota reason beside the stop, with a "Wait: 2 more cpu" step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.diagnosis.own_objects import (
    GROUP,
    apply,
    condition,
    merge_patch,
    namespace,
    quota_message,
    with_admitted_holder,
    workload,
)
from tests.service.conftest import Server
from tests.teardown import remove, remove_namespace
from tests.waiting import SETTLE_SECONDS, wait_until

pytestmark = pytest.mark.cluster

NS, CQ, FLAVOR = "stale-reasons", "stale-reasons-cq", "stale-reasons-flavor"
LABELS = {"kueue-graphql.example/test": "stale-reasons"}
INSUFFICIENT = "insufficient unused quota for cpu in flavor stale-reasons-flavor, 2 more needed"

QUERY = """
query Stale($ns: String!, $name: String!) {
  diagnose(namespace: $ns, kind: "Workload", name: $name) {
    stage summary nextSteps
    reasons { code source message }
    quota { verdict }
  }
}
"""


def _objects() -> list[dict[str, Any]]:
    return [
        namespace(NS, LABELS),
        {"apiVersion": GROUP, "kind": "ResourceFlavor",
         "metadata": {"name": FLAVOR, "labels": LABELS}},
        {"apiVersion": GROUP, "kind": "ClusterQueue", "metadata": {"name": CQ, "labels": LABELS},
         "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                      {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}},
        {"apiVersion": GROUP, "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": NS, "labels": LABELS},
         "spec": {"clusterQueue": CQ}},
    ]  # fmt: skip


def _pending_event(cluster: Cluster) -> bool:
    events = cluster.get_json(
        "events",
        "-n",
        NS,
        "--field-selector",
        "involvedObject.kind=Workload,involvedObject.name=waits",
    )
    return any(
        e.get("reason") == "Pending" and INSUFFICIENT in str(e.get("message"))
        for e in events.get("items") or []
    )


@pytest.fixture(scope="module")
def setting(cluster: Cluster) -> Iterator[None]:
    with_admitted_holder(cluster, _objects(), NS, LABELS)
    apply(cluster, [workload("waits", NS, "2", LABELS)])
    # Kueue's own verdict first, on the condition and as the Pending event.
    wait_until(
        "Kueue's insufficient-quota reason on waits",
        lambda: INSUFFICIENT in quota_message(cluster, "waits", NS) and _pending_event(cluster),
        SETTLE_SECONDS,
        detail=lambda: quota_message(cluster, "waits", NS),
    )
    yield
    remove_namespace(cluster, NS)
    remove(cluster, "clusterqueues", "-l", "kueue-graphql.example/test=stale-reasons")
    remove(cluster, "resourceflavors", "-l", "kueue-graphql.example/test=stale-reasons")


async def _diagnose(server: Server, cluster: Cluster) -> dict[str, Any]:
    body = await server.query(QUERY, {"ns": NS, "name": "waits"}, token=cluster.token("admin"))
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["diagnose"]
    return result


def _stop(cluster: Cluster, target: tuple[str, ...], policy: str) -> None:
    merge_patch(cluster, *target, patch={"spec": {"stopPolicy": policy}})


def _resumed(cluster: Cluster, target: tuple[str, ...]) -> bool:
    """Resume the queue and wait until it is active again; True when Kueue has also written its
    quota reason again. Under load Kueue may write another message meanwhile (a fresh-clone run
    saw "ClusterQueue  doesn't exist" after a resume): then the checks that need Kueue's reason
    back are not made."""
    _stop(cluster, target, "None")
    wait_until(
        "the queue active again",
        lambda: condition(cluster, *target[:2], "Active", *target[2:]).get("status") == "True",
        SETTLE_SECONDS,
    )
    try:
        wait_until(
            "Kueue's quota reason back",
            lambda: INSUFFICIENT in quota_message(cluster, "waits", NS),
            SETTLE_SECONDS / 3,
            detail=lambda: quota_message(cluster, "waits", NS),
        )
    except AssertionError:
        return False
    return True


def _assert_quota_reason_is_earlier(d: dict[str, Any], stopped: str) -> None:
    codes = [r["code"] for r in d["reasons"]]
    assert "WaitingForQuota" not in codes, d["reasons"]
    assert not [s for s in d["nextSteps"] if s.startswith("Wait:")], d["nextSteps"]
    assert "earlier, no longer current" in d["summary"], d["summary"]
    assert INSUFFICIENT in d["summary"]
    assert f"before {stopped} was stopped at " in d["summary"]
    assert d["quota"]["verdict"] == "QUEUE_INACTIVE"


async def test_a_stopped_local_queue_makes_the_quota_reason_earlier(
    setting: None, server: Server, cluster: Cluster
) -> None:
    target = ("localqueue", "lq", "-n", NS)
    _stop(cluster, target, "Hold")
    try:
        wait_until(
            "Kueue's own view of the stop (LocalQueue Active=False, the condition rewritten)",
            lambda: condition(cluster, "localqueue", "lq", "Active", "-n", NS).get("reason")
            == "Stopped"
            and "is inactive" in quota_message(cluster, "waits", NS),
            SETTLE_SECONDS,
            detail=lambda: quota_message(cluster, "waits", NS),
        )
        assert _pending_event(cluster), "the Pending event is still the latest: the stale evidence"
        d = await _diagnose(server, cluster)
        _assert_quota_reason_is_earlier(d, "LocalQueue lq")
        assert any("LocalQueue lq is stopped" in s for s in d["nextSteps"]), d["nextSteps"]
    finally:
        back = _resumed(cluster, target)
    if not back:
        return
    d = await _diagnose(server, cluster)
    # Resumed: Kueue's quota reason is current again, and nothing is marked earlier.
    assert "WaitingForQuota" in [r["code"] for r in d["reasons"]], d["reasons"]
    assert "earlier" not in d["summary"], d["summary"]
    assert any(s.startswith("Wait: 2 more cpu") for s in d["nextSteps"]), d["nextSteps"]


async def test_a_stopped_cluster_queue_makes_the_quota_reason_earlier(
    setting: None, server: Server, cluster: Cluster
) -> None:
    target = ("clusterqueue", CQ)
    _stop(cluster, target, "Hold")
    try:
        wait_until(
            # Kueue may or may not rewrite the Workload's condition (a fresh-clone run under
            # load saw it keep "insufficient unused quota" for 180 s): written before the stop,
            # it is earlier either way.
            "Kueue's own view of the stop (ClusterQueue Active=False)",
            lambda: condition(cluster, "clusterqueue", CQ, "Active").get("reason") == "Stopped",
            SETTLE_SECONDS,
            detail=lambda: quota_message(cluster, "waits", NS),
        )
        d = await _diagnose(server, cluster)
        _assert_quota_reason_is_earlier(d, f"ClusterQueue {CQ}")
    finally:
        _resumed(cluster, target)
