"""RayJobs as Workload owners, through HTTP against the real Kueue v0.17.0 with KubeRay's CRDs
(tests/cluster/manifests/72-rayjobs.yaml), in both read modes, as alice (tenant of team-a) and
viewer (cluster-wide read); bob (tenant of team-b) is refused as kubectl refuses him.

The KubeRay operator is not started (tests/cluster/integrations.py STARTED): Kueue alone makes
and admits the Workload of a suspended RayJob and unsuspends it; nothing makes its RayCluster.
So the admitted RayJob is the "kind's controller has not acted" hand-off: admitted, no RayCluster,
no Pod, and the diagnosis names the KubeRay operator.

Skipped unless the control plane runs with KGQL_INTEGRATIONS naming `kuberay` (or `all`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.cluster.driver import Cluster, selected_integrations
from tests.cluster.integrations import SWITCH
from tests.service.conftest import Server
from tests.service.live_client import subscriber
from tests.waiting import SETTLE_SECONDS

if "kuberay" not in {c.name for c in selected_integrations()}:
    pytest.skip(
        f"KubeRay's CRDs and Kueue's ray.io integrations are off: start the control plane with "
        f"{SWITCH}=jobset,kuberay",
        allow_module_level=True,
    )

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

USERS = ("alice", "viewer")
HELD = "rj-too-big"
ADMITTED = "rj-admitted-no-raycluster"

DIAGNOSE = """
query Why($ns: String!, $kind: String!, $name: String!) {
  diagnose(namespace: $ns, kind: $kind, name: $name) {
    stage layer summary
    workload { name }
    owner { kind name }
    blockingRef { kind name namespace }
    blockingObject { __typename ... on RayJob { name jobDeploymentStatus rayClusterName } }
    reasons { code message }
    pods { pod { name } }
    nextSteps
  }
}
"""

WORKLOAD_FOR = """
query Owner($ns: String!, $kind: String!, $name: String!) {
  workloadFor(namespace: $ns, kind: $kind, name: $name) {
    name
    podSets { name count }
    owner { kind apiVersion name suspended suspendedBy state podsCreatedBy pods { name }
      conditions { type status } }
    job { name }
    jobSet { name }
    rayJob { name suspend submissionMode jobDeploymentStatus rayClusterName queueName
      pods { name } workload { name } }
  }
}
"""


def kubectl_json(cluster: Cluster, user: str, *args: str) -> Any:
    return cluster.get_json(*args, "-n", "team-a", user=user)


async def ask(server: Server, cluster: Cluster, user: str, query: str, kind: str, name: str) -> Any:
    body = await server.query(
        query, {"ns": "team-a", "kind": kind, "name": name}, token=cluster.token(user)
    )
    assert "errors" not in body, body.get("errors")
    return body["data"]


@pytest.mark.parametrize("user", USERS)
async def test_held_for_quota(server: Server, cluster: Cluster, user: str) -> None:
    d = (await ask(server, cluster, user, DIAGNOSE, "RayJob", HELD))["diagnose"]
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["owner"] == {"kind": "RayJob", "name": HELD}
    assert d["blockingRef"] == {"kind": "ClusterQueue", "name": "cq-ray-2cpu", "namespace": None}
    # head 1 + workers 2 x 1 + submitter 0.5 = 3.5 CPU against 2.
    assert "ExceedsMaxQuota" in {r["code"] for r in d["reasons"]}
    assert d["pods"] == []
    [workload] = kubectl_json(cluster, user, "workloads", "-l", "kueue.x-k8s.io/job-uid="
                              + kubectl_json(cluster, user, "rayjob", HELD)["metadata"]["uid"]
                              )["items"]  # fmt: skip
    assert d["workload"] == {"name": workload["metadata"]["name"]}


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("kind", ["rayjob", "RayJobs", "rayjobs.ray.io"])
async def test_admitted_but_no_raycluster_names_the_kuberay_operator(
    server: Server, cluster: Cluster, user: str, kind: str
) -> None:
    d = (await ask(server, cluster, user, DIAGNOSE, kind, ADMITTED))["diagnose"]
    assert (d["stage"], d["layer"]) == ("ADMITTED_PODS_PENDING", "RUNTIME")
    assert d["blockingRef"] == {"kind": "RayJob", "name": ADMITTED, "namespace": "team-a"}
    assert d["blockingObject"] == {
        "__typename": "RayJob",
        "name": ADMITTED,
        "jobDeploymentStatus": None,
        "rayClusterName": None,
    }
    [no_pods] = [r for r in d["reasons"] if r["code"] == "NoPodsYet"]
    assert no_pods["message"].startswith(f"admitted, but RayJob {ADMITTED} has no RayCluster yet")
    assert "the KubeRay operator (ray-operator) has not acted" in no_pods["message"]
    assert d["summary"] == no_pods["message"]
    # Not the kubelet: the controller that should have acted.
    assert d["nextSteps"] == [
        "Kueue's part is done; who acts next: the KubeRay operator (ray-operator), which creates "
        "the RayCluster (named in status.rayClusterName) and its head and worker Pods, and in "
        "K8sJobMode the submitter Job. Check that it runs and what it reports (its logs; the "
        "RayJob's status and events)."
    ]
    # As kubectl shows the same user: Kueue unsuspended it, no RayCluster and no Pod exist.
    ray_job = kubectl_json(cluster, user, "rayjob", ADMITTED)
    assert ray_job["spec"].get("suspend") is not True
    assert "rayClusterName" not in ray_job.get("status", {})
    assert kubectl_json(cluster, user, "rayclusters")["items"] == []
    assert d["pods"] == []


@pytest.mark.parametrize("user", USERS)
async def test_workload_for_a_held_rayjob(server: Server, cluster: Cluster, user: str) -> None:
    w = (await ask(server, cluster, user, WORKLOAD_FOR, "RayJob", HELD))["workloadFor"]
    # Kueue's pod sets: head, the worker group (replicas x numOfHosts), the K8sJobMode submitter.
    assert w["podSets"] == [
        {"name": "head", "count": 1},
        {"name": "workers", "count": 2},
        {"name": "submitter", "count": 1},
    ]
    assert (w["job"], w["jobSet"]) == (None, None)
    owner = w["owner"]
    assert (owner["kind"], owner["apiVersion"], owner["name"]) == ("RayJob", "ray.io/v1", HELD)
    assert (owner["suspended"], owner["suspendedBy"], owner["pods"]) == (True, "KUEUE", [])
    assert owner["state"] is None  # the KubeRay operator never set jobDeploymentStatus
    assert "KubeRay operator" in owner["podsCreatedBy"]
    ray_job = w["rayJob"]
    shown = kubectl_json(cluster, user, "rayjob", HELD)
    assert ray_job["suspend"] is shown["spec"]["suspend"] is True
    assert ray_job["submissionMode"] == shown["spec"]["submissionMode"] == "K8sJobMode"
    assert ray_job["queueName"] == "lq-ray"
    assert ray_job["workload"] == {"name": w["name"]}


@pytest.mark.parametrize("user", USERS)
async def test_workload_for_an_admitted_rayjob(server: Server, cluster: Cluster, user: str) -> None:
    w = (await ask(server, cluster, user, WORKLOAD_FOR, "rayjob", ADMITTED))["workloadFor"]
    owner = w["owner"]
    assert (owner["suspended"], owner["suspendedBy"], owner["pods"]) == (False, None, [])
    assert w["rayJob"]["rayClusterName"] is None
    assert w["rayJob"]["pods"] == []


@pytest.mark.parametrize(
    "query",
    [DIAGNOSE, WORKLOAD_FOR, '{ rayJob(namespace: "team-a", name: "rj-too-big") { name } }'],
    ids=["diagnose", "workloadFor", "rayJob"],
)
async def test_bob_is_refused_as_kubectl_refuses_him(
    server: Server, cluster: Cluster, query: str
) -> None:
    refused = cluster.kubectl("get", "rayjob", HELD, "-n", "team-a", user="bob", check=False)
    assert refused.returncode != 0
    assert "forbidden" in refused.stderr.lower()
    body = await server.query(
        query, {"ns": "team-a", "kind": "RayJob", "name": HELD}, token=cluster.token("bob")
    )
    assert {e["extensions"]["code"] for e in body["errors"]} == {"FORBIDDEN"}, body
    assert "rayjob-rj-too-big" not in str(body)


SUBSCRIPTION = """
subscription Live($ns: String!, $kind: String!, $name: String!) {
  diagnosis(namespace: $ns, kind: $kind, name: $name) {
    stage layer owner { kind name } blockingObject { __typename }
    reasons { code message }
  }
}
"""


@pytest.mark.parametrize("user", USERS)
async def test_diagnosis_subscription_follows_a_rayjob(
    server: Server, cluster: Cluster, user: str
) -> None:
    variables = {"ns": "team-a", "kind": "RayJob", "name": ADMITTED}
    async with subscriber(server.url, cluster.token(user)) as sub:
        await sub.subscribe("1", SUBSCRIPTION, variables)
        message = await asyncio.wait_for(sub.receive(), SETTLE_SECONDS)
    assert message["type"] == "next", message
    pushed = message["payload"]["data"]["diagnosis"]
    reasons = pushed.pop("reasons")
    assert pushed == {
        "stage": "ADMITTED_PODS_PENDING",
        "layer": "RUNTIME",
        "owner": {"kind": "RayJob", "name": ADMITTED},
        "blockingObject": {"__typename": "RayJob"},
    }
    [no_pods] = [r for r in reasons if r["code"] == "NoPodsYet"]
    assert "no RayCluster yet" in no_pods["message"]
