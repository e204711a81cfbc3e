"""A LocalQueue with more than 1,000 pending Workloads, and one whose list Kueue's visibility
server cannot produce, on the real control plane (Kueue v0.17.0). Kueue answers at most 1,000
items when asked without a limit; a Workload without spec.priority makes v0.17's visibility
server fail for its whole queue. The objects are created here in bulk (one kubectl call) and
deleted afterwards, so the other tests' queues stay small."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.diagnosis.test_diagnose_cluster import DIAGNOSE
from tests.service.conftest import Server
from tests.teardown import remove, remove_namespace
from tests.waiting import BULK_SECONDS, wait_until

pytestmark = pytest.mark.cluster

CROWD = 1005
LABEL = "kueue-graphql.example/test=busy-queue"
# Its own namespace (alice is its tenant for the test's length), deleted afterwards with the
# thousands of Events Kueue writes for these Workloads, which would otherwise weigh on every
# namespace-wide Event list in team-a for an hour.
NS = "busy-queue"
TEST_LABELS = {"kueue-graphql.example/test": "busy-queue"}


def _queue(name: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": f"cq-{name}", "labels": TEST_LABELS},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "standard",
                                "resources": [{"name": "cpu", "nominalQuota": "1"}],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": f"lq-{name}", "namespace": NS, "labels": TEST_LABELS},
            "spec": {"clusterQueue": f"cq-{name}"},
        },
    ]  # fmt: skip


def _workload(name: str, queue: str, priority: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "queueName": queue,
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "registry.invalid/kueue-graphql/sleep:never-pulled",
                                "resources": {"requests": {"cpu": "2"}},
                            }
                        ],
                    }
                },
            }
        ],
    }
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": TEST_LABELS,
        },
        "spec": spec,
    }


def _pending(cluster: Cluster, queue: str, limit: int, offset: int) -> list[Any]:
    out = cluster.kubectl(
        "get",
        "--raw",
        f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/{queue}"
        f"/pendingworkloads?limit={limit}&offset={offset}",
        check=False,
    )
    return list(json.loads(out.stdout)["items"]) if out.returncode == 0 else []


@pytest.fixture(scope="module")
def busy(cluster: Cluster) -> Iterator[None]:
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": TEST_LABELS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice-tenant-reader", "namespace": NS},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "kueue-graphql-tenant-reader",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}
            ],
        },
    ]
    objects += _queue("crowd") + _queue("no-priority")
    # Created first, with the higher priority: every one of them is ahead of crowd-last.
    objects += [_workload(f"crowd-{i:04d}", "lq-crowd", 10) for i in range(CROWD - 1)]
    objects += [_workload("crowd-last", "lq-crowd", 0)]
    objects += [_workload("no-priority", "lq-no-priority", None)]
    listing = {"apiVersion": "v1", "kind": "List", "items": objects}
    _remove(cluster)  # what an interrupted earlier run left
    try:
        manifest = cluster.state_dir / "busy-queue.json"
        manifest.write_text(json.dumps(listing))
        # One request per object: bounded as bulk work, not by a guess at the machine's speed.
        proc = cluster.kubectl("create", "-f", str(manifest), check=False, timeout=BULK_SECONDS)
        assert proc.returncode == 0, proc.stderr[-2000:]
        wait_until(
            "Kueue listing crowd-last among the pending Workloads",
            lambda: any(
                i["metadata"]["name"] == "crowd-last"
                for i in _pending(cluster, "lq-crowd", 10, CROWD - 5)
            ),
            # Kueue queues the crowd one Workload at a time: the bound of bulk work.
            BULK_SECONDS,
            interval=3,
        )
        yield
    finally:
        _remove(cluster)


def _remove(cluster: Cluster) -> None:
    """The namespace with its 1,000 Workloads and their Events (the namespace controller
    deletes them as collections, not one request each), then the ClusterQueues, each waited
    until gone: the next module lists Workloads and namespaces as they were before."""
    remove_namespace(cluster, NS)
    remove(cluster, "clusterqueues", "-l", LABEL)


@pytest.mark.parametrize("user", ["alice", "viewer"])
async def test_position_past_1000(server: Server, cluster: Cluster, busy: None, user: str) -> None:
    # Kueue's own answer without a limit stops at 1,000 items
    first = json.loads(
        cluster.kubectl(
            "get",
            "--raw",
            f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/lq-crowd"
            "/pendingworkloads",
        ).stdout
    )["items"]
    assert len(first) == 1000
    assert all(i["metadata"]["name"] != "crowd-last" for i in first)
    [own] = [
        i
        for i in _pending(cluster, "lq-crowd", 10, CROWD - 5)
        if i["metadata"]["name"] == "crowd-last"
    ]
    assert own["positionInLocalQueue"] == CROWD - 1
    body = await server.query(
        DIAGNOSE, {"ns": NS, "kind": "Workload", "name": "crowd-last"}, token=cluster.token(user)
    )
    assert "errors" not in body, body.get("errors")
    d = body["data"]["diagnose"]
    assert d["queuePosition"]["visibility"] == "AVAILABLE", d["queuePosition"]
    assert d["queuePosition"]["positionInLocalQueue"] == own["positionInLocalQueue"]
    assert d["queuePosition"]["positionInClusterQueue"] == own["positionInClusterQueue"]


@pytest.mark.parametrize("user", ["alice", "viewer"])
async def test_visibility_failure_is_said(
    server: Server, cluster: Cluster, busy: None, user: str
) -> None:
    answer = cluster.kubectl(
        "get",
        "--raw",
        f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/lq-no-priority"
        "/pendingworkloads",
        check=False,
    )
    assert answer.returncode != 0  # Kueue v0.17's visibility server fails for this queue
    body = await server.query(
        f'{{ diagnose(namespace: "{NS}", kind: "Workload", name: "no-priority") '
        "{ queuePosition { visibility detail positionInLocalQueue } } }",
        token=cluster.token(user),
    )
    position = body["data"]["diagnose"]["queuePosition"]
    assert (position["visibility"], position["positionInLocalQueue"]) == ("UNAVAILABLE", None)
    assert position["detail"].startswith("not reported: Kueue's visibility server failed")
