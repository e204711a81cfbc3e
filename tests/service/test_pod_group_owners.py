"""StatefulSets, pod groups and a Deployment's Pods as Workload owners, through HTTP against the
real Kueue v0.17.0 and kube-controller-manager's statefulset/deployment controllers
(tests/cluster/manifests/71-pod-groups.yaml, namespace team-a-serving, opted in to Kueue's Pod
integrations), in both read modes, as alice (tenant there) and viewer; bob is refused. Pods are
compared with what kubectl shows the same user.

Needs the Pod-based integrations, on whenever KGQL_INTEGRATIONS switches any controller on.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.driver import Cluster, selected_integrations
from tests.cluster.integrations import SWITCH
from tests.service.conftest import Server

if not selected_integrations():
    pytest.skip(
        f"Kueue's Pod integrations are off: start the control plane with {SWITCH}=jobset",
        allow_module_level=True,
    )

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

NAMESPACE = "team-a-serving"
USERS = ("alice", "viewer")

DIAGNOSE = """
query Why($ns: String!, $kind: String!, $name: String!) {
  diagnose(namespace: $ns, kind: $kind, name: $name) {
    stage layer summary
    workload { name }
    owner { kind name }
    blockingRef { kind name }
    reasons { code numbers { name value { amount } } }
    pods { pod { name } scheduledReason }
  }
}
"""

OWNER = """
query Owner($ns: String!, $kind: String!, $name: String!) {
  workloadFor(namespace: $ns, kind: $kind, name: $name) {
    podSets { name count }
    owner { kind apiVersion name suspended pods { name } }
  }
}
"""


async def ask(server: Server, cluster: Cluster, user: str, query: str, kind: str, name: str) -> Any:
    body = await server.query(
        query, {"ns": NAMESPACE, "kind": kind, "name": name}, token=cluster.token(user)
    )
    assert "errors" not in body, body.get("errors")
    return body["data"]


def kubectl_pods(cluster: Cluster, user: str, selector: str) -> set[str]:
    found = cluster.get_json("pods", "-n", NAMESPACE, "-l", selector, user=user)["items"]
    return {p["metadata"]["name"] for p in found}


@pytest.mark.parametrize("user", USERS)
async def test_statefulset_held_for_quota(server: Server, cluster: Cluster, user: str) -> None:
    d = (await ask(server, cluster, user, DIAGNOSE, "sts", "sts-too-big"))["diagnose"]
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["owner"] == {"kind": "StatefulSet", "name": "sts-too-big"}
    assert d["blockingRef"] == {"kind": "ClusterQueue", "name": "cq-owners-2cpu"}
    w = (await ask(server, cluster, user, OWNER, "StatefulSet", "sts-too-big"))["workloadFor"]
    # One pod group of 3: the StatefulSet's replicas as Kueue counts them.
    assert [p["count"] for p in w["podSets"]] == [3]
    owner = w["owner"]
    assert (owner["kind"], owner["apiVersion"], owner["suspended"]) == (
        "StatefulSet",
        "apps/v1",
        None,
    )
    pods = kubectl_pods(cluster, user, "app=sts-too-big")
    assert len(pods) == 3
    assert {p["name"] for p in owner["pods"]} == pods


@pytest.mark.parametrize("user", USERS)
async def test_statefulset_admitted_but_unschedulable(
    server: Server, cluster: Cluster, user: str
) -> None:
    d = (
        await ask(server, cluster, user, DIAGNOSE, "statefulset", "sts-admitted-but-unschedulable")
    )["diagnose"]
    assert (d["stage"], d["layer"]) == ("ADMITTED_PODS_PENDING", "SCHEDULER")
    pods = kubectl_pods(cluster, user, "app=sts-admitted-but-unschedulable")
    assert {p["pod"]["name"] for p in d["pods"]} == pods
    assert {p["scheduledReason"] for p in d["pods"]} == {"Unschedulable"}
    assert "InsufficientResource" in {r["code"] for r in d["reasons"]}


@pytest.mark.parametrize("user", USERS)
async def test_statefulset_running(server: Server, cluster: Cluster, user: str) -> None:
    d = (await ask(server, cluster, user, DIAGNOSE, "statefulsets.apps", "sts-running"))["diagnose"]
    assert (d["stage"], d["layer"]) == ("RUNNING", "RUNTIME")
    assert len(kubectl_pods(cluster, user, "app=sts-running")) == 2
    assert d["summary"] == "admitted and running (2 Pod(s): Running)"


@pytest.mark.parametrize("user", USERS)
async def test_incomplete_pod_group_waits_for_its_pods(
    server: Server, cluster: Cluster, user: str
) -> None:
    d = (await ask(server, cluster, user, DIAGNOSE, "po", "pg-incomplete-0"))["diagnose"]
    assert (d["stage"], d["layer"]) == ("NO_WORKLOAD_YET", "KUEUE")
    [reason] = [r for r in d["reasons"] if r["code"] == "PodGroupIncomplete"]
    numbers = {n["name"]: n["value"]["amount"] for n in reason["numbers"]}
    present = kubectl_pods(cluster, user, "kueue.x-k8s.io/pod-group-name=pg-incomplete")
    assert numbers == {"podsInGroup": str(len(present)), "groupTotalCount": "2"}


@pytest.mark.parametrize("user", USERS)
async def test_a_deployments_pod_is_its_own_workloads_owner(
    server: Server, cluster: Cluster, user: str
) -> None:
    pods = sorted(kubectl_pods(cluster, user, "app=deploy-serving"))
    assert len(pods) == 2
    for pod in pods:
        d = (await ask(server, cluster, user, DIAGNOSE, "Pod", pod))["diagnose"]
        assert (d["stage"], d["owner"]) == ("RUNNING", {"kind": "Pod", "name": pod})
        w = (await ask(server, cluster, user, OWNER, "pod", pod))["workloadFor"]
        assert [p["count"] for p in w["podSets"]] == [1]
        assert [p["name"] for p in w["owner"]["pods"]] == [pod]
    # The Deployment itself owns no Workload: said so, no API call made for it.
    body = await server.query(
        DIAGNOSE,
        {"ns": NAMESPACE, "kind": "deploy", "name": "deploy-serving"},
        token=cluster.token(user),
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert "one Workload per Pod" in error["message"]


@pytest.mark.parametrize("kind", ["sts", "Pod"])
async def test_bob_is_refused_as_kubectl_refuses_him(
    server: Server, cluster: Cluster, kind: str
) -> None:
    name = "sts-running" if kind == "sts" else "pg-incomplete-0"
    refused = cluster.kubectl("get", kind, name, "-n", NAMESPACE, user="bob", check=False)
    assert "forbidden" in refused.stderr.lower()
    body = await server.query(
        DIAGNOSE, {"ns": NAMESPACE, "kind": kind, "name": name}, token=cluster.token("bob")
    )
    assert {e["extensions"]["code"] for e in body["errors"]} == {"FORBIDDEN"}, body
    assert "sts-running-0" not in str(body)
