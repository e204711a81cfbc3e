"""The contract: the admission path of a Job in ONE request, as alice and as viewer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.kube.client import ApiCall
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server

pytestmark = pytest.mark.cluster

CONTRACT = """
query AdmissionPath($ns: String!, $job: String!) {
  workloadFor(namespace: $ns, kind: "Job", name: $job) {
    name
    conditions { type status reason message }
    totalRequests { resource value { quantity } }
    localQueue { name stopPolicy conditions { type status reason } }
    clusterQueue { name }
    job { name pods { name phase conditions { type status reason message } } }
    events { reason message }
  }
}
"""

VIEWER_CONTRACT = CONTRACT.replace(
    "clusterQueue { name }",
    """clusterQueue {
      name
      cohort { name parent { name } }
      resourceGroups {
        flavors { name resources { name nominalQuota borrowingLimit lendingLimit } }
      }
      flavorsUsage { name resources { name total borrowed } }
    }""",
)


def kubectl_json(cluster: Cluster, user: str, *args: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(cluster.kubectl(*args, "-o", "json", user=user).stdout)
    return loaded


def workload_of_job(cluster: Cluster, user: str, job: str) -> dict[str, Any]:
    uid = kubectl_json(cluster, user, "get", "job", job, "-n", "team-a")["metadata"]["uid"]
    (workload,) = kubectl_json(
        cluster, user, "get", "workloads", "-n", "team-a", "-l", f"kueue.x-k8s.io/job-uid={uid}"
    )["items"]
    return workload


async def test_alice_sees_why_too_big_waits(server: Server, cluster: Cluster) -> None:
    body = await server.query(
        CONTRACT, {"ns": "team-a", "job": "too-big-3x1cpu"}, token=cluster.token("alice")
    )
    assert "errors" not in body, body.get("errors")
    workload = body["data"]["workloadFor"]
    expected = workload_of_job(cluster, "alice", "too-big-3x1cpu")
    assert workload["name"] == expected["metadata"]["name"]
    # 3 pods x 1 CPU at once: the Workload needs 3 CPU, more than cq-small-2cpu's 2.
    totals = {r["resource"]: r["value"]["quantity"] for r in workload["totalRequests"]}
    assert totals == {"cpu": "3", "memory": "768Mi"}
    conditions = {c["type"]: c for c in workload["conditions"]}
    assert conditions["QuotaReserved"]["status"] == "False"
    assert "Admitted" not in conditions or conditions["Admitted"]["status"] != "True"
    assert conditions == {c["type"]: c for c in _conditions(expected)}
    assert workload["localQueue"]["name"] == "lq-small"
    assert workload["localQueue"]["stopPolicy"] in (None, "None")
    # The ClusterQueue's name, which alice may not read as an object, comes from her LocalQueue.
    assert workload["clusterQueue"] == {"name": "cq-small-2cpu"}
    assert (
        cluster.kubectl(
            "get", "clusterqueue", "cq-small-2cpu", user="alice", check=False
        ).returncode
        != 0
    )
    assert workload["job"]["name"] == "too-big-3x1cpu"
    assert workload["job"]["pods"] == []  # never admitted, so never unsuspended
    assert any("insufficient quota" in (e["message"] or "") for e in workload["events"])


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: c.get(k) for k in ("type", "status", "reason", "message")}
        for c in obj["status"].get("conditions", [])
    ]


async def test_viewer_sees_the_quota_behind_borrowing(server: Server, cluster: Cluster) -> None:
    body = await server.query(
        VIEWER_CONTRACT, {"ns": "team-a", "job": "borrows-one-cpu"}, token=cluster.token("viewer")
    )
    assert "errors" not in body, body.get("errors")
    cluster_queue = body["data"]["workloadFor"]["clusterQueue"]
    assert cluster_queue["name"] == "cq-research-borrower"
    assert cluster_queue["cohort"] == {"name": "research", "parent": {"name": "org"}}
    expected = kubectl_json(cluster, "viewer", "get", "clusterqueue", "cq-research-borrower")
    (group,) = expected["spec"]["resourceGroups"]
    assert cluster_queue["resourceGroups"] == [
        {
            "flavors": [
                {
                    "name": flavor["name"],
                    "resources": [
                        {
                            "name": r["name"],
                            "nominalQuota": r["nominalQuota"],
                            "borrowingLimit": r.get("borrowingLimit"),
                            "lendingLimit": r.get("lendingLimit"),
                        }
                        for r in flavor["resources"]
                    ],
                }
                for flavor in group["flavors"]
            ]
        }
    ]
    usage = {
        (f["name"], r["name"]): (r["total"], r["borrowed"])
        for f in cluster_queue["flavorsUsage"]
        for r in f["resources"]
    }
    # 2 CPU admitted against 1 nominal: 1 borrowed from the cohort.
    assert usage[("standard", "cpu")] == ("2", "1")
    expected_usage = {
        (f["name"], r["name"]): (r["total"], r.get("borrowed", "0"))
        for f in expected["status"]["flavorsUsage"]
        for r in f["resources"]
    }
    assert usage == expected_usage


async def test_alice_gets_forbidden_for_cluster_queue_details_only(
    server: Server, cluster: Cluster
) -> None:
    body = await server.query(
        VIEWER_CONTRACT, {"ns": "team-a", "job": "borrows-one-cpu"}, token=cluster.token("alice")
    )
    workload = body["data"]["workloadFor"]
    assert workload["clusterQueue"]["name"] == "cq-research-borrower"
    assert workload["clusterQueue"]["cohort"] is None
    assert workload["clusterQueue"]["resourceGroups"] is None
    assert workload["totalRequests"]  # the rest of the query still answers
    assert workload["job"]["name"] == "borrows-one-cpu"
    paths = {tuple(e["path"]) for e in body["errors"]}
    assert ("workloadFor", "clusterQueue", "cohort") in paths
    for error in body["errors"]:
        assert error["extensions"]["code"] == "FORBIDDEN"
        assert error["extensions"]["verb"] == "get"
        assert error["extensions"]["resource"] == "clusterqueues"
        assert "get clusterqueues.kueue.x-k8s.io" in error["message"]


@pytest.mark.parametrize(("user", "query"), [("alice", CONTRACT), ("viewer", VIEWER_CONTRACT)])
async def test_contract_query_costs_few_api_calls_and_fetches_nothing_twice(
    service_kubeconfig: Path, cluster: Cluster, user: str, query: str
) -> None:
    # A fresh server: cold caches, so the count includes TokenReview and every access review.
    async with running_server(service_kubeconfig) as fresh:
        calls: list[ApiCall] = []
        fresh.kube.observers.append(calls.append)
        variables = {"ns": "team-a", "job": "healthy-running"}
        cold = await fresh.query(query, variables, token=cluster.token(user))
        cold_calls = list(calls)
        calls.clear()
        warm = await fresh.query(query, variables, token=cluster.token(user))
        warm_calls = list(calls)
    assert "errors" not in cold, cold.get("errors")
    assert cold["data"]["workloadFor"]["job"]["pods"], "healthy-running has a Pod"
    assert warm["data"] == cold["data"]
    for made in (cold_calls, warm_calls):
        reads = Counter(c.describe() for c in made if c.method == "GET")
        assert [r for r, n in reads.items() if n > 1] == [], "an object was fetched twice"
    # The response reports the same number the transport saw.
    assert cold["extensions"]["apiCalls"] == len(cold_calls)
    assert warm["extensions"]["apiCalls"] == len(warm_calls)
    # Warm: TokenReview and access reviews come from their per-identity caches.
    assert all(c.method == "GET" for c in warm_calls)
    assert len(warm_calls) < len(cold_calls) <= 20
    print(
        f"\ncontract query as {user}: API calls cold={len(cold_calls)} warm={len(warm_calls)}\n"
        + "\n".join(c.describe() for c in cold_calls)
    )
