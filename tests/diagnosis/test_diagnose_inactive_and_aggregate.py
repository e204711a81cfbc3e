"""Issue 10 cases against the real control plane (Kueue v0.17.0), as alice (tenant of team-a) and
viewer (cluster-wide read): inactive ClusterQueues name their cause, a multi-pod-set Workload's
numbers agree, and a queue position is the caller's own Workload's. Scenarios:
tests/cluster/manifests/60-diagnosis-cases.yaml."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.diagnosis.test_diagnose_cluster import numbers, quota_line, reason, why
from tests.service.conftest import Server

pytestmark = pytest.mark.cluster

USERS = ("alice", "viewer")


def active_condition(cluster: Cluster, cq: str) -> dict[str, Any]:
    obj = cluster.get_json("clusterqueue", cq)
    [active] = [c for c in obj["status"]["conditions"] if c["type"] == "Active"]
    return dict(active)


@pytest.mark.parametrize("user", USERS)
async def test_missing_flavor_is_named(server: Server, cluster: Cluster, user: str) -> None:
    active = active_condition(cluster, "cq-missing-flavor")
    assert (active["status"], active["reason"]) == ("False", "FlavorNotFound")
    d = await why(server, cluster, user, "waits-on-missing-flavor")
    assert (d["stage"], d["layer"]) == ("WAITING_FOR_QUOTA_RESERVATION", "KUEUE")
    steps = " ".join(d["nextSteps"])
    assert "kubectl kueue resume clusterqueue" not in steps  # resuming cannot create a flavor
    assert d["quota"]["verdict"] != "FITS_NOW"
    if user == "viewer":
        r = reason(d, "FlavorNotFound")
        assert r["object"] == {"kind": "ResourceFlavor", "name": "flavor-does-not-exist"}
        assert r["kueueReason"] == "FlavorNotFound"
        # Kueue reports the ClusterQueue inactive: that is the blocking object; the reason and
        # the next step name the flavor it lacks.
        assert d["blockingRef"] == {
            "kind": "ClusterQueue",
            "name": "cq-missing-flavor",
            "namespace": None,
        }
        assert "flavor-does-not-exist" in d["summary"]
        assert "ResourceFlavor flavor-does-not-exist" in steps
        assert d["quota"]["verdict"] == "QUEUE_INACTIVE"
        assert {line["verdict"] for line in d["quota"]["lines"]} == {"QUEUE_INACTIVE"}
    else:
        # alice may not read the ClusterQueue: the cause is hidden, and said to be.
        assert d["blockingRef"]["kind"] == "ClusterQueue"
        assert "you may not read" in d["summary"]
        assert d["quota"]["visibility"] == "FORBIDDEN"


@pytest.mark.parametrize("user", USERS)
async def test_inactive_admission_check_is_named(
    server: Server, cluster: Cluster, user: str
) -> None:
    active = active_condition(cluster, "cq-inactive-check")
    assert (active["status"], active["reason"]) == ("False", "AdmissionCheckInactive")
    d = await why(server, cluster, user, "waits-on-inactive-check")
    steps = " ".join(d["nextSteps"])
    assert "kubectl kueue resume clusterqueue" not in steps
    if user == "viewer":
        r = reason(d, "AdmissionCheckInactive")
        assert r["object"] == {"kind": "AdmissionCheck", "name": "never-active-check"}
        assert d["blockingObject"] == {"__typename": "ClusterQueue", "name": "cq-inactive-check"}
        assert "never-active-check" in d["summary"]
        assert "kueue-graphql.example/nobody-runs-this" in steps  # the controller to run
        assert d["quota"]["verdict"] == "QUEUE_INACTIVE"
    else:
        assert d["quota"]["visibility"] == "FORBIDDEN"


def _numbers_in(text: str) -> list[Decimal]:
    return [Decimal(n) for n in re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?= cpu)", text)]


@pytest.mark.parametrize("user", USERS)
async def test_two_pod_sets_summary_counts_all_of_them(
    server: Server, cluster: Cluster, user: str
) -> None:
    d = await why(server, cluster, user, "two-podsets-6cpu", kind="Workload")
    r = reason(d, "ExceedsMaxQuota")
    # Kueue wrote "previously considered podsets requests (2) + current podset request (4)"
    assert (r["podSet"], numbers(r)["previouslyConsidered"], numbers(r)["podSetRequest"]) == (
        "workers",
        2,
        4,
    )
    assert numbers(r)["requested"] == 6
    assert numbers(r)["maximumCapacity"] == 5
    assert _numbers_in(d["summary"])[0] == 6, d["summary"]
    assert "needs 6 cpu" in " ".join(d["nextSteps"])
    if user == "viewer":
        cpu = quota_line(d, "standard", "cpu")
        assert Decimal(cpu["requested"]["amount"]) == 6
        assert cpu["verdict"] == "NEVER_FITS"


@pytest.mark.parametrize("user", USERS)
async def test_position_is_the_callers_with_same_named_workloads(
    server: Server, cluster: Cluster, user: str
) -> None:
    listed = json.loads(
        cluster.kubectl(
            "get",
            "--raw",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/"
            "lq-shared-name/pendingworkloads",
        ).stdout
    )["items"]
    # Kueue v0.17 lists team-b's same-named Workload in team-a's LocalQueue (kueue#10575)
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listed] == [
        ("team-b", "same-name"),
        ("team-a", "same-name"),
    ]
    [own] = [i for i in listed if i["metadata"]["namespace"] == "team-a"]
    d = await why(server, cluster, user, "same-name", kind="Workload")
    position = d["queuePosition"]
    assert position["visibility"] == "AVAILABLE"
    assert position["positionInClusterQueue"] == own["positionInClusterQueue"] == 1
    # 0: the only team-a entry; Kueue's own figure (1) counts team-b's entry
    assert position["positionInLocalQueue"] == 0
    body = await server.query(
        '{ workload(namespace: "team-a", name: "same-name") '
        "{ queuePosition { positionInClusterQueue positionInLocalQueue } } }",
        token=cluster.token(user),
    )
    assert body["data"]["workload"]["queuePosition"] == {
        "positionInClusterQueue": 1,
        "positionInLocalQueue": 0,
    }


PREEMPTOR = """
query($name: String!) {
  diagnose(namespace: "team-a", kind: "Job", name: $name) {
    stage
    preemptor { uid workload { name uid } job { name } }
    evictions { reason underlyingCause count }
  }
}
"""


@pytest.mark.parametrize("user", [*USERS, "grace"])
async def test_preemptor_is_navigable(server: Server, cluster: Cluster, user: str) -> None:
    victim = cluster.get_json(
        "workloads",
        "-n",
        "team-a",
        "-l",
        "kueue.x-k8s.io/job-uid="
        + cluster.get_json("job", "low-priority-victim", "-n", "team-a")["metadata"]["uid"],
    )["items"][0]
    preemptor_job = cluster.get_json("job", "high-priority-preemptor", "-n", "team-a")
    [preemptor] = cluster.get_json(
        "workloads",
        "-n",
        "team-a",
        "-l",
        f"kueue.x-k8s.io/job-uid={preemptor_job['metadata']['uid']}",
    )["items"]
    body = await server.query(PREEMPTOR, {"name": "low-priority-victim"}, token=cluster.token(user))
    assert "errors" not in body, body["errors"]
    d = body["data"]["diagnose"]
    assert d["stage"] == "PREEMPTED"
    assert d["preemptor"] == {
        "uid": preemptor["metadata"]["uid"],
        "workload": {"name": preemptor["metadata"]["name"], "uid": preemptor["metadata"]["uid"]},
        "job": {"name": "high-priority-preemptor"},
    }
    assert d["evictions"] == [
        {"reason": e["reason"], "underlyingCause": e["underlyingCause"], "count": e["count"]}
        for e in victim["status"]["schedulingStats"]["evictions"]
    ]


@pytest.mark.parametrize("user", [*USERS, "admin"])
async def test_kueue_version_is_null_without_a_kueue_deployment(
    server: Server, cluster: Cluster, user: str
) -> None:
    # tests/cluster runs Kueue as a process: there is no kueue-system/kueue-controller-manager
    found = cluster.kubectl(
        "get", "deployment", "kueue-controller-manager", "-n", "kueue-system", check=False
    )
    assert found.returncode != 0
    body = await server.query(
        '{ diagnose(namespace: "team-a", kind: "Job", name: "too-big-3x1cpu") { kueueVersion } }',
        token=cluster.token(user),
    )
    assert body["data"]["diagnose"] == {"kueueVersion": None}, body
