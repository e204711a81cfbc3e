"""Edges of the graph, checked against what kubectl shows the same user."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]


def kubectl_items(cluster: Cluster, user: str, *args: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(
        cluster.kubectl(*args, "-o", "json", user=user).stdout
    )["items"]
    return items


async def ok(server: Server, cluster: Cluster, query: str, user: str = "viewer") -> Any:
    body = await server.query(query, token=cluster.token(user))
    assert "errors" not in body, body.get("errors")
    return body["data"]


async def test_implicit_and_explicit_cohorts(server: Server, cluster: Cluster) -> None:
    data = await ok(
        server,
        cluster,
        """{
          sharedPool: cohort(name: "shared-pool") {
            name explicit parent { name } members(first: 100) { nodes { name } } raw
          }
          org: cohort(name: "org") {
            explicit children(first: 100) { nodes { name } } members(first: 100) { nodes { name } }
          }
          research: cohort(name: "research") {
            explicit parentName members(first: 100) { nodes { name } }
          }
          cohorts(first: 100) { nodes { name explicit } }
        }""",
    )
    queues = kubectl_items(cluster, "viewer", "get", "clusterqueues")

    def members(cohort: str) -> set[str]:
        return {q["metadata"]["name"] for q in queues if q["spec"].get("cohortName") == cohort}

    shared = data["sharedPool"]
    # shared-pool has no Cohort object: it exists only as cq-team-a's and cq-team-b's cohortName.
    assert shared["explicit"] is False
    assert shared["parent"] is None
    assert shared["raw"] is None
    assert (
        {m["name"] for m in shared["members"]["nodes"]}
        == members("shared-pool")
        == {
            "cq-team-a",
            "cq-team-b",
        }
    )
    assert data["org"]["explicit"] is True
    assert data["org"]["children"]["nodes"] == [{"name": "research"}]
    assert data["research"]["parentName"] == "org"
    assert {m["name"] for m in data["research"]["members"]["nodes"]} == members("research")
    listed = {c["name"]: c["explicit"] for c in data["cohorts"]["nodes"]}
    assert listed == {"org": True, "research": True, "shared-pool": False}


async def test_flavor_to_queues_and_nodes(server: Server, cluster: Cluster) -> None:
    data = await ok(
        server,
        cluster,
        """{ resourceFlavor(name: "gpu-a100") {
              nodeLabels tolerations { key operator effect }
              clusterQueues(first: 100) { nodes { name } }
              nodes { name taints { key effect }
                      allocatable { resource value { quantity amount } } }
        } }""",
    )
    flavor = data["resourceFlavor"]
    assert flavor["clusterQueues"]["nodes"] == [{"name": "cq-gpu"}]
    nodes = kubectl_items(cluster, "viewer", "get", "nodes", "-l", "kueue-graphql.example/pool=gpu")
    assert [n["name"] for n in flavor["nodes"]] == [n["metadata"]["name"] for n in nodes]
    (node,) = flavor["nodes"]
    gpus = {a["resource"]: a for a in node["allocatable"]}["example.com/gpu"]
    assert (gpus["value"]["quantity"], gpus["value"]["amount"]) == ("4", "4")
    assert node["taints"] == [{"key": "example.com/gpu", "effect": "NoSchedule"}]


async def test_workload_to_job_to_pods_to_node(server: Server, cluster: Cluster) -> None:
    data = await ok(
        server,
        cluster,
        """{ workloadFor(namespace: "team-a", kind: "Job", name: "healthy-running") {
              status priority priorityClass { name value }
              admission { clusterQueue podSetAssignments { flavors { resource flavor } } }
              job { suspend workload { name } pods { name phase nodeName node { name } } }
        } }""",
    )
    workload = data["workloadFor"]
    assert workload["status"] == "ADMITTED"
    assert workload["priorityClass"] == {"name": "high-priority", "value": 1000}
    assert workload["priority"] == 1000
    assert workload["admission"]["clusterQueue"] == "cq-team-a"
    assert {"resource": "cpu", "flavor": "standard"} in workload["admission"]["podSetAssignments"][
        0
    ]["flavors"]
    job = workload["job"]
    assert job["suspend"] is False
    assert job["workload"]["name"] == workload["job"]["workload"]["name"]
    pods = kubectl_items(
        cluster,
        "viewer",
        "get",
        "pods",
        "-n",
        "team-a",
        "-l",
        "batch.kubernetes.io/job-name=healthy-running",
    )
    assert sorted(p["name"] for p in job["pods"]) == sorted(p["metadata"]["name"] for p in pods)
    for pod, shown in zip(
        sorted(job["pods"], key=lambda p: p["name"]),
        sorted(pods, key=lambda p: p["metadata"]["name"]),
        strict=True,
    ):
        assert pod["phase"] == shown["status"]["phase"]
        assert pod["nodeName"] == shown["spec"].get("nodeName")
        if pod["nodeName"]:
            assert pod["node"] == {"name": pod["nodeName"]}


async def test_cluster_queue_workloads_by_status(server: Server, cluster: Cluster) -> None:
    data = await ok(
        server,
        cluster,
        """{ clusterQueue(name: "cq-small-2cpu") {
              pendingWorkloads
              pending: workloads(first: 100, status: PENDING) { nodes { name localQueue { name } } }
              admitted: workloads(first: 100, status: ADMITTED) { nodes { name } }
              localQueues { name namespace }
        } }""",
    )
    queue = data["clusterQueue"]
    pending = queue["pending"]["nodes"]
    assert [w["name"].rsplit("-", 1)[0] for w in pending] == ["job-too-big-3x1cpu"]
    assert queue["pending"]["nodes"][0]["localQueue"] == {"name": "lq-small"}
    assert queue["admitted"]["nodes"] == []
    assert queue["pendingWorkloads"] == len(queue["pending"]["nodes"])
    assert queue["localQueues"] == [{"name": "lq-small", "namespace": "team-a"}]


async def test_workload_filters_and_pagination(server: Server, cluster: Cluster) -> None:
    query = """query($after: String) {
      workloads(first: 2, namespace: "team-a", after: $after) {
        nodes { name } pageInfo { hasNextPage endCursor } totalCount
      } }"""
    seen: list[str] = []
    after = None
    while True:
        body = await server.query(query, {"after": after}, token=cluster.token("alice"))
        page = body["data"]["workloads"]
        seen += [n["name"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    listed = kubectl_items(cluster, "alice", "get", "workloads", "-n", "team-a")
    assert seen == sorted(w["metadata"]["name"] for w in listed)
    assert page["totalCount"] == len(listed)

    pending = await ok(
        server,
        cluster,
        '{ workloads(first: 100, namespace: "team-a", status: PENDING, localQueue: "lq-stopped") '
        "{ nodes { name localQueue { stopPolicy } } } }",
        user="alice",
    )
    nodes = pending["workloads"]["nodes"]
    assert [n["name"].rsplit("-", 1)[0] for n in nodes] == ["job-waits-on-stopped-queue"]
    assert nodes[0]["localQueue"]["stopPolicy"] == "Hold"


async def test_page_size_is_required_and_capped(server: Server, cluster: Cluster) -> None:
    body = await server.query(
        '{ workloads(first: 1000, namespace: "team-a") { totalCount } }',
        token=cluster.token("alice"),
    )
    assert body["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    missing = await server.query("{ workloads { totalCount } }", token=cluster.token("alice"))
    assert missing["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


async def test_raw_is_the_object_kubectl_shows(server: Server, cluster: Cluster) -> None:
    data = await ok(
        server,
        cluster,
        '{ localQueue(namespace: "team-a", name: "lq-orphan") { raw clusterQueue { name } } }',
        user="alice",
    )
    shown = json.loads(
        cluster.kubectl(
            "get", "localqueue", "lq-orphan", "-n", "team-a", "-o", "json", user="alice"
        ).stdout
    )
    assert data["localQueue"]["raw"]["spec"] == shown["spec"]
    assert data["localQueue"]["raw"]["metadata"]["uid"] == shown["metadata"]["uid"]
    # The ClusterQueue it names does not exist; its name is still the answer to `name`.
    assert data["localQueue"]["clusterQueue"] == {"name": "cq-does-not-exist"}
    missing = await server.query(
        '{ clusterQueue(name: "cq-does-not-exist") { name } }', token=cluster.token("viewer")
    )
    assert missing["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_queue_position_from_the_visibility_api(server: Server, cluster: Cluster) -> None:
    data = await ok(
        server,
        cluster,
        """{ waiting: workloadFor(namespace: "team-a", kind: "Job", name: "too-big-3x1cpu") {
               name queuePosition { positionInClusterQueue positionInLocalQueue }
             }
             running: workloadFor(namespace: "team-a", kind: "Job", name: "healthy-running") {
               queuePosition { positionInLocalQueue }
             } }""",
        user="alice",
    )
    summary = json.loads(
        cluster.kubectl(
            "get",
            "--raw",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/lq-small"
            "/pendingworkloads",
            user="alice",
        ).stdout
    )
    (item,) = [i for i in summary["items"] if i["metadata"]["name"] == data["waiting"]["name"]]
    assert data["waiting"]["queuePosition"] == {
        "positionInClusterQueue": item["positionInClusterQueue"],
        "positionInLocalQueue": item["positionInLocalQueue"],
    }
    assert data["running"]["queuePosition"] is None  # admitted: no longer in the queue
