"""Issue 21, class "Queueing strategy", on the real Kueue: under StrictFIFO Kueue tries only the
head of the ClusterQueue's queue and writes nothing on the Workloads behind it. The diagnosis
says so: how many are ahead, who is at the head (named where the caller may read it, counted
otherwise, never another tenant's name), the Workload's own quota verdict, and next steps.

Its own StrictFIFO ClusterQueue (2 CPU) serves namespaces hol-a and hol-b. In hol-a `holder`
(2 CPU) is admitted, `hol-head-of-a` (2 CPU) is at the head and waits for quota, `behind-a`
(1 CPU) is behind it; in hol-b `behind-b` (1 CPU) is behind both. alice reads hol-b only.
Before the fix each Workload behind the head was told "Kueue has not written a reason yet",
with no next step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
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
    tenant_binding,
    with_admitted_holder,
    workload,
)
from tests.service.conftest import Server
from tests.teardown import remove, remove_namespace
from tests.waiting import SETTLE_SECONDS, wait_until

pytestmark = pytest.mark.cluster

NS_A, NS_B, CQ, FLAVOR = "hol-a", "hol-b", "hol-cq", "hol-flavor"
HEAD = "hol-head-of-a"
LABELS = {"kueue-graphql.example/test": "head-of-line"}

QUERY = """
query HeadOfLine($ns: String!, $name: String!) {
  diagnose(namespace: $ns, kind: "Workload", name: $name) {
    stage summary nextSteps
    blockingRef { kind name namespace }
    reasons { code message }
    quota { verdict }
    queuePosition { visibility positionInClusterQueue positionInLocalQueue }
  }
}
"""


def _objects() -> list[dict[str, Any]]:
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                      "values": [NS_A, NS_B]}]}  # fmt: skip
    return [
        namespace(NS_A, LABELS),
        namespace(NS_B, LABELS),
        tenant_binding("alice", NS_B),
        {"apiVersion": GROUP, "kind": "ResourceFlavor",
         "metadata": {"name": FLAVOR, "labels": LABELS}},
        {"apiVersion": GROUP, "kind": "ClusterQueue", "metadata": {"name": CQ, "labels": LABELS},
         "spec": {"namespaceSelector": selector, "queueingStrategy": "StrictFIFO",
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                      {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}},
        *({"apiVersion": GROUP, "kind": "LocalQueue",
           "metadata": {"name": "lq", "namespace": ns, "labels": LABELS},
           "spec": {"clusterQueue": CQ}} for ns in (NS_A, NS_B)),
    ]  # fmt: skip


def _has_conditions(cluster: Cluster, name: str, ns: str) -> bool:
    wl = cluster.get_json("workload", name, "-n", ns)
    return bool((wl.get("status") or {}).get("conditions"))


def _next_second_after(cluster: Cluster, name: str, ns: str) -> None:
    raw = cluster.get_json("workload", name, "-n", ns)["metadata"]["creationTimestamp"]
    created = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    wait_until(
        f"a second later than {name}'s creation",
        lambda: datetime.now(UTC) >= created + timedelta(seconds=1),
        SETTLE_SECONDS,
        interval=0.1,
    )


@pytest.fixture(scope="module")
def setting(cluster: Cluster) -> Iterator[None]:
    with_admitted_holder(cluster, _objects(), NS_A, LABELS)
    # One at a time, each in a later second than the one before: Kueue orders a queue by
    # creation time, which has whole seconds.
    apply(cluster, [workload(HEAD, NS_A, "2", LABELS)])
    wait_until(
        "Kueue's quota reason on the head",
        lambda: "2 more needed" in quota_message(cluster, HEAD, NS_A),
        SETTLE_SECONDS,
    )
    _next_second_after(cluster, HEAD, NS_A)
    apply(cluster, [workload("behind-a", NS_A, "1", LABELS)])
    _next_second_after(cluster, "behind-a", NS_A)
    apply(cluster, [workload("behind-b", NS_B, "1", LABELS)])
    yield
    for ns in (NS_A, NS_B):
        remove_namespace(cluster, ns)
    remove(cluster, "clusterqueues", "-l", "kueue-graphql.example/test=head-of-line")
    remove(cluster, "resourceflavors", "-l", "kueue-graphql.example/test=head-of-line")


async def _diagnose(
    server: Server, cluster: Cluster, ns: str, name: str, user: str = "admin"
) -> tuple[dict[str, Any], str]:
    """The diagnosis once Kueue's visibility API lists the Workload, and the raw answer."""
    body: dict[str, Any] = {}
    for _ in range(60):
        body = await server.query(QUERY, {"ns": ns, "name": name}, token=cluster.token(user))
        assert "errors" not in body, body
        if body["data"]["diagnose"]["queuePosition"]["visibility"] == "AVAILABLE":
            break
    result: dict[str, Any] = body["data"]["diagnose"]
    return result, json.dumps(body)


async def test_behind_the_head_names_the_callers_own_head(
    setting: None, server: Server, cluster: Cluster
) -> None:
    assert not _has_conditions(cluster, "behind-a", NS_A), "Kueue wrote nothing behind the head"
    d, _ = await _diagnose(server, cluster, NS_A, "behind-a")
    assert d["queuePosition"]["positionInClusterQueue"] == 1, d["queuePosition"]
    assert [r["code"] for r in d["reasons"]] == ["BehindQueueHead"], d["reasons"]
    assert d["blockingRef"] == {"kind": "Workload", "name": HEAD, "namespace": NS_A}
    assert "is StrictFIFO" in d["summary"]
    assert f"at the head: Workload {HEAD} of the same LocalQueue lq" in d["summary"]
    assert "1 Workload(s) are ahead of this one, 1 of them in its LocalQueue" in d["summary"]
    # Its own verdict: 1 CPU, all 2 held by holder.
    assert d["quota"]["verdict"] == "MUST_WAIT"
    assert "MUST_WAIT (1 more cpu in flavor hol-flavor)" in d["summary"]
    assert d["nextSteps"][0].startswith("Wait: 1 Workload(s) are ahead in ClusterQueue hol-cq")
    assert any(s.startswith(f"If Workload {HEAD} should not go first") for s in d["nextSteps"])


async def test_another_namespaces_head_is_counted_not_named(
    setting: None, server: Server, cluster: Cluster
) -> None:
    assert not _has_conditions(cluster, "behind-b", NS_B), "Kueue wrote nothing behind the head"
    d, raw = await _diagnose(server, cluster, NS_B, "behind-b")
    assert d["queuePosition"]["positionInClusterQueue"] == 2, d["queuePosition"]
    assert [r["code"] for r in d["reasons"]] == ["BehindQueueHead"], d["reasons"]
    assert "2 Workload(s) are ahead of this one, none in its LocalQueue" in d["summary"]
    assert "a Workload of another LocalQueue" in d["summary"]
    assert HEAD not in raw
    assert "behind-a" not in raw
    assert d["blockingRef"] == {"kind": "ClusterQueue", "name": CQ, "namespace": None}
    assert d["nextSteps"], d


async def test_a_tenant_who_may_not_read_the_cluster_queue_gets_the_position_and_a_step(
    setting: None, server: Server, cluster: Cluster
) -> None:
    d, raw = await _diagnose(server, cluster, NS_B, "behind-b", user="alice")
    assert d["queuePosition"]["positionInClusterQueue"] == 2, d["queuePosition"]
    assert [r["code"] for r in d["reasons"]] == ["BehindQueueHead"], d["reasons"]
    assert "queueingStrategy is hidden from you" in d["summary"]
    assert "2 Workload(s) are ahead of this one" in d["summary"]
    assert HEAD not in raw
    assert "behind-a" not in raw
    assert "holder" not in raw
    assert d["nextSteps"][0].startswith("Wait: 2 Workload(s) are ahead"), d["nextSteps"]


async def test_a_queue_inactive_reason_from_before_a_resume_is_earlier(
    setting: None, server: Server, cluster: Cluster
) -> None:
    """Stale reasons under StrictFIFO: stopping hol-a's LocalQueue makes Kueue write "LocalQueue
    lq is inactive" on behind-a; after the resume Kueue tries only the head, so that message
    stays. It is earlier than the resume, not current."""
    target = ("localqueue", "lq", "-n", NS_A)
    merge_patch(cluster, *target, patch={"spec": {"stopPolicy": "Hold"}})
    try:
        wait_until(
            "Kueue's queue-inactive reason on behind-a",
            lambda: "is inactive" in quota_message(cluster, "behind-a", NS_A),
            SETTLE_SECONDS,
        )
    finally:
        merge_patch(cluster, *target, patch={"spec": {"stopPolicy": "None"}})
    wait_until(
        "the LocalQueue active again",
        lambda: condition(cluster, *target[:2], "Active", *target[2:]).get("status") == "True",
        SETTLE_SECONDS,
    )
    # Usually Kueue keeps the message; under load it may write another one meanwhile (a
    # fresh-clone run of ac39c10 saw "ClusterQueue  doesn't exist" there). The inactive reason
    # is never current after the resume either way; its "earlier" wording needs Kueue to have
    # kept it.
    kept = "is inactive" in quota_message(cluster, "behind-a", NS_A)
    d, _ = await _diagnose(server, cluster, NS_A, "behind-a")
    codes = [r["code"] for r in d["reasons"]]
    assert "LocalQueueInactive" not in codes, d["reasons"]
    assert not [s for s in d["nextSteps"] if "resume" in s], d["nextSteps"]
    if kept:
        assert codes[0] == "BehindQueueHead", d["reasons"]
        assert "earlier, no longer current: LocalQueue lq is inactive" in d["summary"]
        assert "before LocalQueue lq became active at " in d["summary"]
