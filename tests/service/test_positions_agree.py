"""Queue positions agree with Kueue's visibility API, in both read modes (issue 26, item 2).

On the real control plane (Kueue v0.17.0): one ClusterQueue without quota (nothing is admitted,
so the order holds still) fed by LocalQueue `lq-pos` of namespaces pos-a and pos-b (same name:
Kueue's LocalQueue list of one shows the other's Workloads too, kueue#10575) and `lq-other` of
pos-a; Workloads of three priorities, created in bulk (many in the same second: Kueue then
orders by UID). In `cache` mode the positions come from the service's store, in `impersonate`
mode from the visibility API read as the caller; each is compared with what the visibility
API lists for the admin: positionInClusterQueue as Kueue gives it, positionInLocalQueue among
the Workload's own namespace's entries, and aheadOfMe's counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.kueue_objects import pending_workload, tenant_reader_binding
from tests.service.conftest import Server
from tests.teardown import remove, remove_namespace
from tests.waiting import BULK_SECONDS, SETTLE_SECONDS, async_wait_until, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

NAMESPACES = ("pos-a", "pos-b")
CLUSTER_QUEUE = "cq-pos-agree"
LABEL = "kueue-graphql.example/test=positions-agree"
TEST_LABELS = {"kueue-graphql.example/test": "positions-agree"}
# (namespace, LocalQueue, priority, how many)
CROWD = (
    ("pos-a", "lq-pos", 0, 8),
    ("pos-b", "lq-pos", 0, 8),
    ("pos-b", "lq-pos", 5, 3),
    ("pos-a", "lq-other", 0, 4),
    ("pos-a", "lq-pos", -1, 3),
    ("pos-a", "lq-pos", 5, 2),
)

POSITION = """
query Position($ns: String!, $name: String!) {
  diagnose(namespace: $ns, kind: "Workload", name: $name) {
    queuePosition { visibility positionInClusterQueue positionInLocalQueue positionBeyond }
    aheadOfMe { inLocalQueue inClusterQueue }
  }
}
"""


def _objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for ns in NAMESPACES:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "labels": TEST_LABELS},
            }
        )
        objects.append(tenant_reader_binding(ns))
    objects.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": CLUSTER_QUEUE, "labels": TEST_LABELS},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "standard",
                                "resources": [{"name": "cpu", "nominalQuota": "0"}],
                            }
                        ],
                    }
                ],
            },
        }
    )
    for ns, lq in {(ns, lq) for ns, lq, _, _ in CROWD}:
        objects.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": ns, "labels": TEST_LABELS},
                "spec": {"clusterQueue": CLUSTER_QUEUE},
            }
        )
    for ns, lq, priority, count in CROWD:
        for index in range(count):
            name = f"{lq}-p{priority}-{index}".replace("-p-", "-m")
            objects.append(pending_workload(ns, name, lq, priority, labels=TEST_LABELS))
    return objects


TOTAL = sum(count for *_, count in CROWD)


def _visibility(cluster: Cluster, ns: str, lq: str) -> list[dict[str, Any]]:
    out = cluster.kubectl(
        "get",
        "--raw",
        f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{lq}"
        "/pendingworkloads?limit=1000",
        check=False,
    )
    return list(json.loads(out.stdout)["items"]) if out.returncode == 0 else []


def _remove(cluster: Cluster) -> None:
    for ns in NAMESPACES:
        remove_namespace(cluster, ns)
    remove(cluster, "clusterqueues", "-l", LABEL)


@pytest.fixture(scope="module")
def crowd(cluster: Cluster) -> Iterator[None]:
    _remove(cluster)  # what an interrupted earlier run left
    try:
        manifest = cluster.state_dir / "positions-agree.json"
        manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects()}))
        proc = cluster.kubectl("create", "-f", str(manifest), check=False, timeout=BULK_SECONDS)
        assert proc.returncode == 0, proc.stderr[-2000:]
        wait_until(
            f"Kueue queueing all {TOTAL} Workloads of {CLUSTER_QUEUE}",
            lambda: len(_visibility(cluster, "pos-a", "lq-pos"))
            + len(_visibility(cluster, "pos-a", "lq-other"))
            == TOTAL,
            BULK_SECONDS,
            interval=1,
        )
        yield
    finally:
        _remove(cluster)


def _expected(cluster: Cluster) -> dict[tuple[str, str], tuple[int, int]]:
    """(namespace, name) -> (positionInClusterQueue, position among its own namespace's
    entries of its LocalQueue), from Kueue's visibility API as the admin sees it."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for ns, lq in {(ns, lq) for ns, lq, _, _ in CROWD}:
        own = 0
        for item in _visibility(cluster, ns, lq):
            meta = item["metadata"]
            if meta["namespace"] != ns:
                continue  # a same-named LocalQueue of another namespace (kueue#10575)
            out[(ns, meta["name"])] = (item["positionInClusterQueue"], own)
            own += 1
    return out


@pytest.mark.parametrize("user", ["alice", "viewer"])
async def test_positions_equal_kueues_visibility_api(
    server: Server, cluster: Cluster, crowd: None, user: str
) -> None:
    expected = _expected(cluster)
    assert len(expected) == TOTAL
    # Same-named LocalQueues of the other namespace put pos-a's entries behind pos-b's.
    assert any(ns == "pos-a" and cq > lq for (ns, _), (cq, lq) in expected.items())
    answers: dict[tuple[str, str], Any] = {}

    async def agree() -> bool:
        for (ns, name), _ in sorted(expected.items()):
            body = await server.query(POSITION, {"ns": ns, "name": name}, token=cluster.token(user))
            assert "errors" not in body, body.get("errors")
            answers[(ns, name)] = body["data"]["diagnose"]
        return all(
            (
                answers[key]["queuePosition"]["positionInClusterQueue"],
                answers[key]["queuePosition"]["positionInLocalQueue"],
                answers[key]["aheadOfMe"]["inClusterQueue"] if answers[key]["aheadOfMe"] else None,
                answers[key]["aheadOfMe"]["inLocalQueue"] if answers[key]["aheadOfMe"] else None,
            )
            == (*value, *value)
            for key, value in expected.items()
        )

    def differences() -> str:
        return "; ".join(
            f"{key}: kueue {value}, service {answers.get(key)}"
            for key, value in sorted(expected.items())
            if answers.get(key, {}).get("queuePosition", {}).get("positionInClusterQueue")
            != value[0]
        )[:3000]

    # The cache follows the API server's watch: bounded wait, never a guessed sleep.
    await async_wait_until(
        "the service's positions equal Kueue's", agree, SETTLE_SECONDS, detail=differences
    )
    for answer in answers.values():
        assert answer["queuePosition"]["visibility"] == "AVAILABLE"
        assert answer["queuePosition"]["positionBeyond"] is None
