"""JobSets as Workload owners, through HTTP against the real JobSet controller and Kueue v0.17.0
(tests/cluster/manifests/70-jobsets.yaml), in both read modes, as alice (tenant of team-a) and
viewer (cluster-wide read); bob (tenant of team-b) is refused. Every answer about Pods and Jobs is
compared with what kubectl shows the same user.

Needs the JobSet controller: skipped unless the control plane runs with KGQL_INTEGRATIONS naming
`jobset` (or `all`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.cluster.driver import Cluster, selected_integrations
from tests.cluster.integrations import SWITCH, started
from tests.service.conftest import Server
from tests.service.live_client import subscriber
from tests.waiting import SETTLE_SECONDS

if "jobset" not in {c.name for c in started(selected_integrations())}:
    pytest.skip(
        f"the JobSet controller is off: start the control plane with {SWITCH}=jobset",
        allow_module_level=True,
    )

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

USERS = ("alice", "viewer")
JOB_SET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"

DIAGNOSE = """
query Why($ns: String!, $kind: String!, $name: String!) {
  diagnose(namespace: $ns, kind: $kind, name: $name) {
    stage layer summary
    workload { name }
    owner { kind name }
    blockingRef { kind name namespace }
    reasons { code message }
    pods { pod { name } phase scheduledReason }
  }
}
"""

WORKLOAD_FOR = """
query Owner($ns: String!, $kind: String!, $name: String!) {
  workloadFor(namespace: $ns, kind: $kind, name: $name) {
    name
    podSets { name count }
    owner { kind apiVersion name suspended suspendedBy pods { name }
      conditions { type status } }
    job { name }
    jobSet { name suspend
      replicatedJobs { name replicas podsPerReplica podCount jobs { name } pods { name } }
      pods { name } }
  }
}
"""


def kubectl_names(cluster: Cluster, user: str, *args: str) -> set[str]:
    return {
        item["metadata"]["name"]
        for item in cluster.get_json(*args, "-n", "team-a", user=user)["items"]
    }


async def workload_for(server: Server, cluster: Cluster, user: str, name: str) -> Any:
    body = await server.query(
        WORKLOAD_FOR, {"ns": "team-a", "kind": "JobSet", "name": name}, token=cluster.token(user)
    )
    assert "errors" not in body, body.get("errors")
    return body["data"]["workloadFor"]


async def diagnose(server: Server, cluster: Cluster, user: str, kind: str, name: str) -> Any:
    body = await server.query(
        DIAGNOSE, {"ns": "team-a", "kind": kind, "name": name}, token=cluster.token(user)
    )
    assert "errors" not in body, body.get("errors")
    return body["data"]["diagnose"]


@pytest.mark.parametrize("user", USERS)
async def test_held_for_quota(server: Server, cluster: Cluster, user: str) -> None:
    d = await diagnose(server, cluster, user, "JobSet", "js-too-big-3cpu")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["owner"] == {"kind": "JobSet", "name": "js-too-big-3cpu"}
    assert d["blockingRef"] == {"kind": "ClusterQueue", "name": "cq-owners-2cpu", "namespace": None}
    assert "ExceedsMaxQuota" in {r["code"] for r in d["reasons"]}
    # Suspended by Kueue: the JobSet controller made its Jobs (suspended), no Pod exists.
    assert d["pods"] == []
    assert (
        kubectl_names(cluster, user, "pods", "-l", f"{JOB_SET_NAME_LABEL}=js-too-big-3cpu") == set()
    )


@pytest.mark.parametrize("user", USERS)
async def test_admitted_but_unschedulable(server: Server, cluster: Cluster, user: str) -> None:
    d = await diagnose(server, cluster, user, "jobset", "js-admitted-but-unschedulable")
    assert (d["stage"], d["layer"]) == ("ADMITTED_PODS_PENDING", "SCHEDULER")
    pods = kubectl_names(
        cluster, user, "pods", "-l", f"{JOB_SET_NAME_LABEL}=js-admitted-but-unschedulable"
    )
    assert len(pods) == 1
    # The Pods of the JobSet's child Jobs, not owned by the JobSet itself: found all the same.
    assert {p["pod"]["name"] for p in d["pods"]} == pods
    assert d["blockingRef"]["kind"] == "Pod"
    assert d["blockingRef"]["name"] in pods
    assert {p["scheduledReason"] for p in d["pods"]} == {"Unschedulable"}
    assert "InsufficientResource" in {r["code"] for r in d["reasons"]}


@pytest.mark.parametrize("user", USERS)
async def test_running(server: Server, cluster: Cluster, user: str) -> None:
    d = await diagnose(server, cluster, user, "jobsets.jobset.x-k8s.io", "js-running")
    assert (d["stage"], d["layer"]) == ("RUNNING", "RUNTIME")
    pods = kubectl_names(cluster, user, "pods", "-l", f"{JOB_SET_NAME_LABEL}=js-running")
    assert len(pods) == 2
    # Counted from the Pods of its child Jobs (`pods` lists only Pods that wait).
    assert d["summary"] == "admitted and running (2 Pod(s): Running)"
    assert d["pods"] == []


@pytest.mark.parametrize("user", USERS)
async def test_workload_for_a_jobset_shows_its_replicated_jobs(
    server: Server, cluster: Cluster, user: str
) -> None:
    w = await workload_for(server, cluster, user, "js-too-big-3cpu")
    # Kueue's pod sets: one per replicated job, replicas x min(parallelism, completions).
    assert w["podSets"] == [{"name": "driver", "count": 1}, {"name": "workers", "count": 2}]
    assert w["job"] is None
    owner = w["owner"]
    assert (owner["kind"], owner["apiVersion"], owner["name"]) == (
        "JobSet",
        "jobset.x-k8s.io/v1alpha2",
        "js-too-big-3cpu",
    )
    assert (owner["suspended"], owner["suspendedBy"], owner["pods"]) == (True, "KUEUE", [])
    job_set = w["jobSet"]
    assert job_set["suspend"] is True
    counts = [
        (r["name"], r["replicas"], r["podsPerReplica"], r["podCount"])
        for r in job_set["replicatedJobs"]
    ]
    assert counts == [("driver", 1, 1, 1), ("workers", 2, 1, 2)]
    jobs = kubectl_names(cluster, user, "jobs", "-l", f"{JOB_SET_NAME_LABEL}=js-too-big-3cpu")
    assert {j["name"] for r in job_set["replicatedJobs"] for j in r["jobs"]} == jobs
    assert len(jobs) == 3


@pytest.mark.parametrize("user", USERS)
async def test_running_jobset_pods_match_kubectl(
    server: Server, cluster: Cluster, user: str
) -> None:
    w = await workload_for(server, cluster, user, "js-running")
    pods = kubectl_names(cluster, user, "pods", "-l", f"{JOB_SET_NAME_LABEL}=js-running")
    assert {p["name"] for p in w["owner"]["pods"]} == pods
    assert {p["name"] for p in w["jobSet"]["pods"]} == pods
    [workers] = w["jobSet"]["replicatedJobs"]
    assert {p["name"] for p in workers["pods"]} == pods
    assert (w["owner"]["suspended"], w["owner"]["suspendedBy"]) == (False, None)


@pytest.mark.parametrize(
    "query",
    [
        DIAGNOSE,
        WORKLOAD_FOR,
        '{ jobSet(namespace: "team-a", name: "js-running") { name } }',
    ],
    ids=["diagnose", "workloadFor", "jobSet"],
)
async def test_bob_is_refused_as_kubectl_refuses_him(
    server: Server, cluster: Cluster, query: str
) -> None:
    refused = cluster.kubectl(
        "get", "jobset", "js-running", "-n", "team-a", user="bob", check=False
    )
    assert refused.returncode != 0
    assert "forbidden" in refused.stderr.lower()
    body = await server.query(
        query, {"ns": "team-a", "kind": "JobSet", "name": "js-running"}, token=cluster.token("bob")
    )
    assert {e["extensions"]["code"] for e in body["errors"]} == {"FORBIDDEN"}, body
    assert "js-running-workers" not in str(body)


async def test_js_is_no_short_name_for_jobset(server: Server, cluster: Cluster) -> None:
    # kubectl knows none (JobSet's CRD declares no shortNames): neither does the service.
    unknown = cluster.kubectl("get", "js", "-n", "team-a", check=False)
    assert unknown.returncode != 0
    body = await server.query(
        DIAGNOSE,
        {"ns": "team-a", "kind": "js", "name": "js-running"},
        token=cluster.token("viewer"),
    )
    assert body.get("errors") or body["data"]["diagnose"]["stage"] != "RUNNING", body


SUBSCRIPTION = """
subscription Live($ns: String!, $kind: String!, $name: String!) {
  diagnosis(namespace: $ns, kind: $kind, name: $name) { stage layer owner { kind name } }
}
"""


@pytest.mark.parametrize("user", USERS)
async def test_diagnosis_subscription_follows_a_jobset(
    server: Server, cluster: Cluster, user: str
) -> None:
    variables = {"ns": "team-a", "kind": "JobSet", "name": "js-admitted-but-unschedulable"}
    async with subscriber(server.url, cluster.token(user)) as sub:
        await sub.subscribe("1", SUBSCRIPTION, variables)
        message = await asyncio.wait_for(sub.receive(), SETTLE_SECONDS)
    assert message["type"] == "next", message
    assert message["payload"]["data"]["diagnosis"] == {
        "stage": "ADMITTED_PODS_PENDING",
        "layer": "SCHEDULER",
        "owner": {"kind": "JobSet", "name": "js-admitted-but-unschedulable"},
    }
