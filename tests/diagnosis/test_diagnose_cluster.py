"""`diagnose` through HTTP against the real control plane (Kueue v0.17.0), as alice (tenant of
team-a) and as viewer (cluster-wide read). Expected values come from the scenario manifests."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = pytest.mark.cluster

USERS = ("alice", "viewer")

DIAGNOSE = """
query Why($ns: String!, $kind: String!, $name: String!) {
  diagnose(namespace: $ns, kind: $kind, name: $name) {
    stage layer summary
    workload { name }
    owner { kind name }
    localQueue { name }
    clusterQueue { name }
    blockingRef { kind name namespace }
    blockingObject { __typename ... on LocalQueue { name } ... on ClusterQueue { name }
      ... on ResourceFlavor { name } ... on Pod { name } ... on AdmissionCheck { name }
      ... on Cohort { name } ... on Workload { name } }
    reasons { code kueueReason message source resource flavor podSet
      object { kind name } numbers { name value { quantity amount } } }
    quota { visibility clusterQueue verdict detail
      lines { flavor resource verdict limitedBy cohort countsThisWorkload
        requested { quantity amount } nominalQuota { amount } borrowingLimit { amount }
        reserved { amount } borrowed { amount } maximumCapacity { amount }
        availableNow { amount } cohortCanLend { amount } } }
    pods { pod { name } phase scheduledReason scheduledMessage nodeSelector failedScheduling
      reasons { code resource message numbers { name value { amount } } } }
    queuePosition { visibility positionInClusterQueue positionInLocalQueue }
    nextSteps commands
  }
}
"""


async def why(server: Server, cluster: Cluster, user: str, name: str, kind: str = "Job") -> Any:
    body = await server.query(
        DIAGNOSE, {"ns": "team-a", "kind": kind, "name": name}, token=cluster.token(user)
    )
    assert "errors" not in body, body.get("errors")
    return body["data"]["diagnose"]


def reason(d: Any, code: str) -> Any:
    [found] = [r for r in d["reasons"] if r["code"] == code]
    return found


def numbers(r: Any) -> dict[str, Decimal]:
    return {n["name"]: Decimal(n["value"]["amount"]) for n in r["numbers"]}


def quota_line(d: Any, flavor: str, resource: str) -> Any:
    [found] = [x for x in d["quota"]["lines"] if (x["flavor"], x["resource"]) == (flavor, resource)]
    return found


@pytest.mark.parametrize("user", USERS)
async def test_quota_exceeded(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "too-big-3x1cpu")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["blockingRef"] == {"kind": "ClusterQueue", "name": "cq-small-2cpu", "namespace": None}
    assert d["blockingObject"] == {"__typename": "ClusterQueue", "name": "cq-small-2cpu"}
    r = reason(d, "ExceedsMaxQuota")
    assert (r["kueueReason"], r["resource"], r["flavor"]) == ("Pending", "cpu", "standard")
    # 3 Pods x 1 CPU requested against 2 CPU: from Kueue's own message, visible to the tenant
    assert numbers(r)["requested"] == 3
    assert numbers(r)["maximumCapacity"] == 2
    assert d["queuePosition"]["visibility"] == "AVAILABLE"
    if user == "alice":
        assert d["quota"]["visibility"] == "FORBIDDEN"
        assert d["quota"]["lines"] == []
        assert "nominalQuota" not in numbers(r)
    else:
        cpu = quota_line(d, "standard", "cpu")
        assert (Decimal(cpu["requested"]["amount"]), Decimal(cpu["nominalQuota"]["amount"])) == (
            3,
            2,
        )
        assert (cpu["verdict"], cpu["limitedBy"]) == ("NEVER_FITS", "NOMINAL_QUOTA")
        assert d["quota"]["verdict"] == "NEVER_FITS"


@pytest.mark.parametrize("user", USERS)
async def test_stopped_local_queue(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "waits-on-stopped-queue")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["blockingRef"] == {"kind": "LocalQueue", "name": "lq-stopped", "namespace": "team-a"}
    assert d["blockingObject"] == {"__typename": "LocalQueue", "name": "lq-stopped"}
    assert reason(d, "LocalQueueInactive")["kueueReason"] == "Inadmissible"
    assert "Hold" in reason(d, "LocalQueueStopped")["message"]


@pytest.mark.parametrize("user", USERS)
async def test_missing_cluster_queue(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "waits-on-missing-clusterqueue")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["blockingRef"]["kind"] == "LocalQueue"
    assert d["blockingRef"]["name"] == "lq-orphan"
    assert d["clusterQueue"] == {"name": "cq-does-not-exist"}
    first = d["reasons"][0]
    assert (first["code"], first["kueueReason"]) == ("ClusterQueueNotFound", "Inadmissible")
    # the tenant gets 403 for any ClusterQueue, existing or not: she is not told which
    assert d["quota"]["visibility"] == ("FORBIDDEN" if user == "alice" else "ABSENT")


@pytest.mark.parametrize("user", USERS)
async def test_flavor_taint(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "no-spot-toleration")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["blockingRef"] == {"kind": "ResourceFlavor", "name": "spot-tainted", "namespace": None}
    r = reason(d, "UntoleratedFlavorTaint")
    assert r["flavor"] == "spot-tainted"
    assert "kueue-graphql.example/spot=true:NoSchedule" in d["summary"]
    if user == "viewer":
        assert d["quota"]["verdict"] == "FITS_NOW"
        # read from the ResourceFlavor's nodeTaints, which alice may not read
        assert any(
            'key: kueue-graphql.example/spot, operator: Equal, value: "true"' in s
            for s in d["nextSteps"]
        )
    else:
        assert not any("from ResourceFlavor" in s for s in d["nextSteps"])


@pytest.mark.parametrize("user", USERS)
async def test_over_borrowing_limit(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "over-borrowing-limit")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    assert d["blockingRef"]["name"] == "cq-research-borrower"
    assert numbers(reason(d, "WaitingForQuota"))["moreNeeded"] == 1
    if user == "viewer":
        cpu = quota_line(d, "standard", "cpu")
        assert (cpu["verdict"], cpu["limitedBy"], cpu["cohort"]) == (
            "MUST_WAIT",
            "BORROWING_LIMIT",
            "research",
        )
        got = {
            k: Decimal(cpu[k]["amount"])
            for k in ("nominalQuota", "borrowingLimit", "reserved", "borrowed", "availableNow")
        }
        assert got == {
            "nominalQuota": 1,
            "borrowingLimit": 1,
            "reserved": 2,
            "borrowed": 1,
            "availableNow": 0,
        }
    else:
        assert d["quota"]["visibility"] == "FORBIDDEN"


@pytest.mark.parametrize("user", USERS)
async def test_admitted_but_unschedulable(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "admitted-but-unschedulable")
    assert (d["stage"], d["layer"]) == ("ADMITTED_PODS_PENDING", "SCHEDULER")
    assert d["blockingRef"]["kind"] == "Pod"
    assert d["blockingObject"]["__typename"] == "Pod"
    [pod] = d["pods"]
    assert pod["scheduledReason"] == "Unschedulable"
    assert pod["nodeSelector"] == ["kueue-graphql.example/pool=standard"]
    assert pod["failedScheduling"]
    assert "InsufficientResource" in [r["code"] for r in pod["reasons"]]
    if user == "viewer":
        [fault] = [r for r in pod["reasons"] if r["code"] == "NoNodeFits"]
        assert {n["name"]: Decimal(n["value"]["amount"]) for n in fault["numbers"]} == {
            "requested": 16,
            "allocatable": 8,
        }
    else:
        assert "NoNodeFits" not in [r["code"] for r in pod["reasons"]]  # Nodes: forbidden


@pytest.mark.parametrize("user", USERS)
async def test_healthy_running(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "healthy-running")
    assert (d["stage"], d["layer"], d["blockingRef"]) == ("RUNNING", "RUNTIME", None)
    assert d["pods"] == []


@pytest.mark.parametrize("user", USERS)
async def test_finished(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "finished-ok")
    assert (d["stage"], d["layer"], d["blockingRef"]) == ("FINISHED_SUCCEEDED", "RUNTIME", None)


@pytest.mark.parametrize("user", USERS)
async def test_gpu_training(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "gpu-training")
    assert (d["stage"], d["layer"]) == ("RUNNING", "RUNTIME")
    if user == "viewer":
        gpu = quota_line(d, "gpu-a100", "example.com/gpu")
        assert Decimal(gpu["requested"]["amount"]) == 2
        assert Decimal(gpu["nominalQuota"]["amount"]) == 4
        assert gpu["countsThisWorkload"] is True


@pytest.mark.parametrize("user", USERS)
async def test_waits_for_admission_check(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "waits-for-approval")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_ADMISSION_CHECKS", "KUEUE")
    assert d["blockingRef"]["kind"] == "AdmissionCheck"
    assert d["blockingRef"]["name"] == "manual-approval"
    message = reason(d, "AdmissionCheckPending")["message"]
    if user == "viewer":
        assert "controller kueue-graphql.example/manual-approval; Active=True" in message
    else:
        assert "controller" not in message  # AdmissionChecks are not hers to read


@pytest.mark.parametrize("user", USERS)
async def test_deactivated(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "deactivated-by-admin")
    assert (d["stage"], d["layer"]) == ("DEACTIVATED", "KUEUE")
    assert d["blockingObject"] == {"__typename": "Workload", "name": d["workload"]["name"]}
    assert (d["reasons"][0]["code"], d["reasons"][0]["kueueReason"]) == (
        "Deactivated",
        "Deactivated",
    )


@pytest.mark.parametrize("user", USERS)
async def test_preempted(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "low-priority-victim")
    assert (d["stage"], d["layer"]) == ("PREEMPTED", "KUEUE")
    assert d["blockingRef"] == {"kind": "ClusterQueue", "name": "cq-preemption", "namespace": None}
    preempted = reason(d, "Preempted")
    assert preempted["kueueReason"] == "Preempted"
    assert "due to prioritization in the ClusterQueue" in preempted["message"]


@pytest.mark.parametrize("user", USERS)
async def test_failed(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "fails-with-exit-1")
    assert (d["stage"], d["layer"], d["blockingRef"]) == ("FINISHED_FAILED", "RUNTIME", None)
    assert reason(d, "Failed")["message"] == "Job has reached the specified backoff limit"


@pytest.mark.parametrize("user", USERS)
async def test_not_managed(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "not-queued")
    assert (d["stage"], d["workload"], d["localQueue"]) == ("NOT_MANAGED", None, None)
    assert reason(d, "NoQueueName")["object"] == {"kind": "Job", "name": "not-queued"}


@pytest.mark.parametrize("user", USERS)
async def test_borrowing_runs(server: Server, cluster: Cluster, user: str) -> None:
    d = await why(server, cluster, user, "borrows-one-cpu")
    assert (d["stage"], d["layer"], d["blockingRef"]) == ("RUNNING", "RUNTIME", None)
    if user == "viewer":
        cpu = quota_line(d, "standard", "cpu")
        # 2 Pods x 1 CPU against nominal 1: one CPU borrowed from cohort research
        assert (Decimal(cpu["requested"]["amount"]), Decimal(cpu["borrowed"]["amount"])) == (2, 1)
    else:
        assert d["quota"]["visibility"] == "FORBIDDEN"


@pytest.mark.parametrize("user", USERS)
async def test_from_the_workload_and_as_a_field(
    server: Server, cluster: Cluster, user: str
) -> None:
    by_job = await why(server, cluster, user, "too-big-3x1cpu")
    workload = by_job["workload"]["name"]
    by_workload = await why(server, cluster, user, workload, kind="Workload")
    assert by_workload["owner"] == {"kind": "Job", "name": "too-big-3x1cpu"}
    assert (by_workload["stage"], by_workload["blockingRef"]) == (
        by_job["stage"],
        by_job["blockingRef"],
    )
    body = await server.query(
        """query($ns: String!, $job: String!) {
          workloadFor(namespace: $ns, kind: "Job", name: $job) {
            diagnosis { stage layer blockingRef { kind name } }
          }
        }""",
        {"ns": "team-a", "job": "too-big-3x1cpu"},
        token=cluster.token(user),
    )
    assert "errors" not in body, body.get("errors")
    assert body["data"]["workloadFor"]["diagnosis"] == {
        "stage": "WAITING_FOR_QUOTA_RESERVATION",
        "layer": "KUEUE",
        "blockingRef": {"kind": "ClusterQueue", "name": "cq-small-2cpu"},
    }


async def test_other_tenant_sees_nothing(server: Server, cluster: Cluster) -> None:
    body = await server.query(
        DIAGNOSE,
        {"ns": "team-a", "kind": "Job", "name": "too-big-3x1cpu"},
        token=cluster.token("bob"),
    )
    assert body["data"]["diagnose"] is None
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"


@pytest.mark.parametrize("user", USERS)
def test_cli_why(cluster: Cluster, user: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`kueue-graphql why` with the user's own kubeconfig: JSON and text say the same."""
    from kueue_graphql.cli import main

    kubeconfig = str(cluster.kubeconfig(user))
    assert (
        main(["why", "team-a/admitted-but-unschedulable", "--kubeconfig", kubeconfig, "--json"])
        == 0
    )
    body = json.loads(capsys.readouterr().out)
    d = body["data"]["diagnose"]
    assert (d["stage"], d["layer"], d["blockingRef"]["kind"]) == (
        "ADMITTED_PODS_PENDING",
        "SCHEDULER",
        "Pod",
    )
    assert main(["why", "team-a/too-big-3x1cpu", "--kubeconfig", kubeconfig]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Job/too-big-3x1cpu: WAITING_FOR_QUOTA_RESERVATION (look at: KUEUE)")
    assert "held by: ClusterQueue cq-small-2cpu" in text
    assert "requested=3, maximumCapacity=2" in text
    if user == "alice":
        assert "FORBIDDEN (you may not read ClusterQueue cq-small-2cpu)" in text
    else:
        assert "standard/cpu" in text
        assert "NEVER_FITS (NOMINAL_QUOTA)" in text


def test_cli_why_refuses_other_tenant(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    from kueue_graphql.cli import main

    kubeconfig = str(cluster.kubeconfig("bob"))
    assert main(["why", "team-a/too-big-3x1cpu", "--kubeconfig", kubeconfig]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error:" in captured.err


@pytest.mark.parametrize("user", USERS)
async def test_api_call_budget(server: Server, cluster: Cluster, user: str) -> None:
    """One diagnosis reads what it needs once: token review, access checks and reads together
    stay far below the per-request budget (200), whatever the stage."""
    for job in ("too-big-3x1cpu", "over-borrowing-limit", "admitted-but-unschedulable"):
        body = await server.query(
            DIAGNOSE, {"ns": "team-a", "kind": "Job", "name": job}, token=cluster.token(user)
        )
        assert "errors" not in body, body.get("errors")
        assert body["extensions"]["apiCalls"] <= 20, (job, body["extensions"])


@pytest.mark.parametrize("kind", ["Job", "Workload"])
async def test_unknown_object_is_not_found(server: Server, cluster: Cluster, kind: str) -> None:
    body = await server.query(
        DIAGNOSE,
        {"ns": "team-a", "kind": kind, "name": "no-such-job"},
        token=cluster.token("alice"),
    )
    assert body["data"]["diagnose"] is None
    assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND"
