"""aheadOfMe on the real control plane: counts equal Kueue's visibility API as admin sees it,
and no other tenant's name reaches a tenant.

Its own ClusterQueue (1 CPU, held by an admitted blocker) takes Workloads from two namespaces:
alice's (ahead-a) and another tenant's (ahead-secret-b, Workloads named secret-*). Created one
second apart so creation times order them: other tenant's high-priority and same-priority ones,
alice's own earlier one, her target, then a later high-priority one of the other tenant.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.http import ReadMode
from kueue_graphql.kube.client import ApiCall
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server, server_in_mode
from tests.teardown import remove, remove_namespace
from tests.waiting import SETTLE_SECONDS

pytestmark = pytest.mark.cluster

NS, OTHER = "ahead-a", "ahead-secret-b"
LABEL_KEY = "kueue-graphql.example/test"
LABELS = {LABEL_KEY: "ahead-of-me"}
CQ = "ahead-cq"
VIS = "/apis/visibility.kueue.x-k8s.io/v1beta2"

QUERY = """
query A($ns: String!, $name: String!) {
  diagnose(namespace: $ns, kind: "Workload", name: $name) {
    stage summary
    queuePosition { visibility positionInClusterQueue positionInLocalQueue priority detail }
    aheadOfMe {
      inLocalQueue inClusterQueue
      requestedAheadInLocalQueue { resource value { quantity } }
      requestedAheadInClusterQueue { resource value { quantity } }
      heldByAdmitted { flavor resource value { quantity } }
      whyAheadInLocalQueue { higherPriority samePriorityEarlier samePriorityRequeued }
      whyAheadInClusterQueue { higherPriority samePriorityEarlier samePriorityRequeued }
      queueingStrategy ordering unavailable
      startEstimate { releasesBy explanation }
    }
    reasons { code message }
    nextSteps
  }
}
"""


def _workload(
    namespace: str,
    name: str,
    queue: str,
    cpu: str,
    count: int,
    priority: int,
    max_seconds: int | None = None,
) -> Any:
    extra = {} if max_seconds is None else {"maximumExecutionTimeSeconds": max_seconds}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
        "spec": {
            "queueName": queue,
            "priority": priority,
            **extra,
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "registry.invalid/kueue-graphql/sleep:never-pulled",
                                    "resources": {"requests": {"cpu": cpu}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


def _apply(cluster: Cluster, objects: list[Any]) -> None:
    kubectl = [str(cluster.kubectl_bin), "--kubeconfig", str(cluster.admin_kubeconfig)]
    proc = subprocess.run(
        [*kubectl, "apply", "-f", "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
        text=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


def _setting() -> list[Any]:
    out: list[Any] = []
    for ns in (NS, OTHER):
        out.append({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "labels": LABELS}})  # fmt: skip
    out.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice-tenant-reader", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "kueue-graphql-tenant-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": "alice"}],
        }
    )  # fmt: skip
    out.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": CQ, "labels": LABELS},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "standard", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}],
            },
        }
    )  # fmt: skip
    for ns, lq in ((NS, "lq-ahead"), (OTHER, "lq-secret")):
        out.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                    "metadata": {"name": lq, "namespace": ns, "labels": LABELS},
                    "spec": {"clusterQueue": CQ}})  # fmt: skip
    return out


# In creation order (one second apart), after the blocker is admitted.
PENDING = [
    (OTHER, "secret-high", "lq-secret", "1", 1, 100),
    (OTHER, "secret-early", "lq-secret", "1", 1, 0),
    (NS, "own-early", "lq-ahead", "500m", 2, 0),
    (NS, "target", "lq-ahead", "1", 1, 0),
    (OTHER, "secret-high-later", "lq-secret", "1", 1, 100),
    (OTHER, "secret-behind", "lq-secret", "1", 1, 0),
]


def _cleanup(cluster: Cluster) -> None:
    """Both namespaces with their Workloads, then the ClusterQueue, waited until gone."""
    for ns in (NS, OTHER):
        remove_namespace(cluster, ns)
    remove(cluster, "clusterqueue", CQ)


def _raw(cluster: Cluster, path: str) -> Any:
    return json.loads(cluster.kubectl("get", "--raw", path).stdout)


@pytest.fixture(scope="module")
def queue(cluster: Cluster) -> Iterator[None]:
    _cleanup(cluster)  # what an interrupted earlier run left
    try:
        _apply(cluster, _setting())
        _apply(cluster, [_workload(NS, "blocker", "lq-ahead", "1", 1, 0, max_seconds=3600)])
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            wl = cluster.get_json("workload", "blocker", "-n", NS)
            conds = {
                c["type"]: c["status"] for c in (wl.get("status") or {}).get("conditions") or []
            }
            if conds.get("QuotaReserved") == "True":
                break
            assert time.monotonic() < deadline, "the blocker was not admitted"
            time.sleep(0.5)
        for ns, name, lq, cpu, count, priority in PENDING:
            _apply(cluster, [_workload(ns, name, lq, cpu, count, priority)])
            time.sleep(1.1)  # creationTimestamp has a resolution of one second
        deadline = time.monotonic() + SETTLE_SECONDS
        while len(_raw(cluster, f"{VIS}/clusterqueues/{CQ}/pendingworkloads")["items"]) < len(
            PENDING
        ):
            assert time.monotonic() < deadline, "Kueue did not list every pending Workload"
            time.sleep(0.5)
        yield
    finally:
        _cleanup(cluster)


@pytest.fixture(scope="module")
async def disclosing(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA) as s:
        yield s


@pytest.fixture(scope="module")
async def disclosing_cached(cluster: Cluster, queue: None) -> AsyncIterator[Server]:
    async with server_in_mode(
        cluster, ReadMode.CACHE, quota_disclosure=QuotaDisclosure.QUOTA
    ) as started:
        yield started


def _admin_positions(cluster: Cluster) -> tuple[int, int]:
    cq_items = _raw(cluster, f"{VIS}/clusterqueues/{CQ}/pendingworkloads")["items"]
    lq_items = _raw(cluster, f"{VIS}/namespaces/{NS}/localqueues/lq-ahead/pendingworkloads")[
        "items"
    ]
    in_cq = next(i for i in cq_items if i["metadata"]["name"] == "target")
    in_lq = next(i for i in lq_items if i["metadata"]["name"] == "target")
    return in_cq["positionInClusterQueue"], in_lq["positionInLocalQueue"]


def _no_other_tenant(body: dict[str, Any]) -> None:
    text = json.dumps(body)
    for secret in ("secret", OTHER, "lq-secret"):
        assert secret not in text, f"{secret!r} reached alice: {text}"


async def test_counts_equal_the_visibility_api_and_names_stay_hidden(
    disclosing: Server, cluster: Cluster, queue: None
) -> None:
    body = await disclosing.query(QUERY, {"ns": NS, "name": "target"}, token=cluster.token("alice"))
    assert "errors" not in body, body
    ahead = body["data"]["diagnose"]["aheadOfMe"]
    in_cq, in_lq = _admin_positions(cluster)
    assert (ahead["inClusterQueue"], ahead["inLocalQueue"]) == (in_cq, in_lq)
    assert (in_cq, in_lq) == (4, 1)  # secret-high, secret-high-later, secret-early, own-early
    # Why: by priority and creation time, from the ClusterQueue's list the service read.
    assert ahead["whyAheadInClusterQueue"] == {
        "higherPriority": 2, "samePriorityEarlier": 2, "samePriorityRequeued": 0
    }  # fmt: skip
    assert ahead["whyAheadInLocalQueue"] == {
        "higherPriority": 0, "samePriorityEarlier": 1, "samePriorityRequeued": 0
    }  # fmt: skip
    assert ahead["requestedAheadInLocalQueue"] == [{"resource": "cpu", "value": {"quantity": "1"}}]
    assert ahead["requestedAheadInClusterQueue"] is None
    assert ahead["heldByAdmitted"] == [
        {"flavor": "standard", "resource": "cpu", "value": {"quantity": "1"}}
    ]
    assert ahead["queueingStrategy"] == "BestEffortFIFO"
    assert "BestEffortFIFO" in ahead["ordering"]
    assert any("cache" in u for u in ahead["unavailable"])
    # The only holder is alice's blocker with maximumExecutionTimeSeconds 3600: the quota is
    # free again one hour after its admission at the latest.
    blocker = cluster.get_json("workload", "blocker", "-n", NS)
    admitted = next(
        c["lastTransitionTime"] for c in blocker["status"]["conditions"] if c["type"] == "Admitted"
    )
    at = datetime.fromisoformat(admitted.replace("Z", "+00:00")) + timedelta(seconds=3600)
    estimate = ahead["startEstimate"]
    assert estimate["releasesBy"] == at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "maximumExecutionTimeSeconds 3600" in estimate["explanation"]
    assert "4 Workload(s) ahead" in estimate["explanation"]
    _no_other_tenant(body)


async def test_policy_off_counts_only_from_the_callers_own_access(
    server: Server, cluster: Cluster, queue: None
) -> None:
    body = await server.query(QUERY, {"ns": NS, "name": "target"}, token=cluster.token("alice"))
    assert "errors" not in body, body
    ahead = body["data"]["diagnose"]["aheadOfMe"]
    assert (ahead["inClusterQueue"], ahead["inLocalQueue"]) == _admin_positions(cluster)
    assert ahead["whyAheadInClusterQueue"] is None
    assert ahead["heldByAdmitted"] is None
    assert ahead["requestedAheadInLocalQueue"] == [{"resource": "cpu", "value": {"quantity": "1"}}]
    assert len(ahead["unavailable"]) == 3
    assert ahead["startEstimate"]["releasesBy"] is None
    _no_other_tenant(body)


async def test_admitted_workload_has_nothing_ahead(
    disclosing: Server, cluster: Cluster, queue: None
) -> None:
    body = await disclosing.query(
        QUERY, {"ns": NS, "name": "blocker"}, token=cluster.token("alice")
    )
    assert "errors" not in body, body
    assert body["data"]["diagnose"]["aheadOfMe"] is None


async def test_cache_mode_orders_the_cluster_queue_from_the_cache(
    disclosing: Server, disclosing_cached: Server, cluster: Cluster, queue: None
) -> None:
    """In `cache` mode the policy's ClusterQueue pending list comes from the Workload store in
    Kueue's queue order: the same aheadOfMe as from the visibility API, and no Kueue read
    (objects or visibility) under the service's own identity."""
    variables, token = {"ns": NS, "name": "target"}, cluster.token("alice")
    from_api = await disclosing.query(QUERY, variables, token=token)
    await disclosing_cached.query(QUERY, variables, token=token)  # access decisions cached
    calls: list[ApiCall] = []
    disclosing_cached.kube.observers.append(calls.append)
    try:
        from_cache = await disclosing_cached.query(QUERY, variables, token=token)
    finally:
        disclosing_cached.kube.observers.remove(calls.append)
    assert "errors" not in from_cache, from_cache
    ahead = from_cache["data"]["diagnose"]["aheadOfMe"]
    assert ahead == from_api["data"]["diagnose"]["aheadOfMe"]
    assert ahead["whyAheadInClusterQueue"] == {
        "higherPriority": 2, "samePriorityEarlier": 2, "samePriorityRequeued": 0
    }  # fmt: skip
    kueue = ("/apis/kueue.x-k8s.io/", "/apis/visibility.kueue.x-k8s.io/")
    as_service = [c.describe() for c in calls if c.as_user is None and c.path.startswith(kueue)]
    assert as_service == []
    _no_other_tenant(from_cache)
