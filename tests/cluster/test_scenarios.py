"""Pin what the REAL Kueue v0.17.0 and kube-scheduler did with each scenario.

These tests read the cluster with kubectl, as an operator would, and fail if a scenario stops
showing the case it is named for (a changed reason or message shape is exactly what the service's
diagnosis must then learn).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cluster.driver import Cluster

pytestmark = pytest.mark.cluster


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", []) or []}


def workload_of(cluster: Cluster, namespace: str, job: str) -> dict[str, Any]:
    uid = cluster.get_json("job", job, "-n", namespace)["metadata"]["uid"]
    items = cluster.get_json("workloads", "-n", namespace, "-l", f"kueue.x-k8s.io/job-uid={uid}")[
        "items"
    ]
    assert len(items) == 1, f"expected one Workload for job {namespace}/{job}, got {len(items)}"
    workload: dict[str, Any] = items[0]
    return workload


def events_for(cluster: Cluster, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
    selector = f"involvedObject.kind={kind},involvedObject.name={name}"
    items: list[dict[str, Any]] = cluster.get_json(
        "events", "-n", namespace, "--field-selector", selector
    )["items"]
    return items


def raw_json(cluster: Cluster, path: str, user: str = "admin") -> Any:
    return json.loads(cluster.kubectl("get", "--raw", path, user=user).stdout)


def test_server_reports_pinned_kubernetes_version(cluster: Cluster) -> None:
    assert raw_json(cluster, "/version")["gitVersion"] == "v1.36.3"


def test_workload_is_owned_by_its_job_and_labelled_with_its_uid(cluster: Cluster) -> None:
    job = cluster.get_json("job", "healthy-running", "-n", "team-a")
    workload = workload_of(cluster, "team-a", "healthy-running")
    owner = workload["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Job",
        "healthy-running",
        job["metadata"]["uid"],
    )
    assert owner.get("controller") is True
    assert workload["metadata"]["name"].startswith("job-healthy-running-")
    assert workload["spec"]["queueName"] == "lq-team-a"
    assert [ps["name"] for ps in workload["spec"]["podSets"]] == ["main"]


def test_quota_exceeded_is_never_admitted(cluster: Cluster) -> None:
    workload = workload_of(cluster, "team-a", "too-big-3x1cpu")
    quota = _conditions(workload)["QuotaReserved"]
    assert quota["status"] == "False"
    assert quota["reason"] == "Pending"  # v0.17 writes the legacy reason (granular gate off)
    assert quota["message"] == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor standard, "
        "previously considered podsets requests (0) + current podset request (3) > maximum "
        "capacity (2)"
    )
    assert (
        "Admitted" not in _conditions(workload)
        or _conditions(workload)["Admitted"]["status"] == "False"
    )
    assert workload["spec"]["podSets"][0]["count"] == 3
    job = cluster.get_json("job", "too-big-3x1cpu", "-n", "team-a")
    assert job["spec"]["suspend"] is True  # Kueue's webhook suspended it; it never ran
    assert cluster.get_json("pods", "-n", "team-a", "-l", "job-name=too-big-3x1cpu")["items"] == []
    reasons = {
        e["reason"] for e in events_for(cluster, "team-a", "Workload", workload["metadata"]["name"])
    }
    assert "Pending" in reasons


def test_stopped_local_queue_holds_its_workload(cluster: Cluster) -> None:
    queue = cluster.get_json("localqueue", "lq-stopped", "-n", "team-a")
    active = _conditions(queue)["Active"]
    assert (active["status"], active["reason"], active["message"]) == (
        "False",
        "Stopped",
        "LocalQueue is stopped",
    )
    quota = _conditions(workload_of(cluster, "team-a", "waits-on-stopped-queue"))["QuotaReserved"]
    assert (quota["status"], quota["reason"], quota["message"]) == (
        "False",
        "Inadmissible",
        "LocalQueue lq-stopped is inactive",
    )


def test_local_queue_pointing_to_a_missing_cluster_queue(cluster: Cluster) -> None:
    queue = cluster.get_json("localqueue", "lq-orphan", "-n", "team-a")
    assert queue["spec"]["clusterQueue"] == "cq-does-not-exist"
    active = _conditions(queue)["Active"]
    assert (active["status"], active["reason"]) == ("False", "ClusterQueueDoesNotExist")
    quota = _conditions(workload_of(cluster, "team-a", "waits-on-missing-clusterqueue"))[
        "QuotaReserved"
    ]
    assert (quota["status"], quota["reason"], quota["message"]) == (
        "False",
        "Inadmissible",
        "ClusterQueue cq-does-not-exist doesn't exist",
    )
    missing = cluster.kubectl("get", "clusterqueue", "cq-does-not-exist", check=False)
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr


def test_untolerated_flavor_taint_blocks_flavor_assignment(cluster: Cluster) -> None:
    quota = _conditions(workload_of(cluster, "team-a", "no-spot-toleration"))["QuotaReserved"]
    assert quota["status"] == "False"
    assert quota["reason"] == "Pending"
    assert quota["message"].startswith(
        "couldn't assign flavors to pod set main: untolerated taint "
    )
    assert "kueue-graphql.example/spot" in quota["message"]
    assert quota["message"].endswith("in flavor spot-tainted")


def test_borrowing_within_the_limit_is_admitted_and_recorded(cluster: Cluster) -> None:
    workload = workload_of(cluster, "team-a", "borrows-one-cpu")
    assert _conditions(workload)["Admitted"]["status"] == "True"
    queue = cluster.get_json("clusterqueue", "cq-research-borrower")
    assert queue["spec"]["cohortName"] == "research"
    usage = {
        (flavor["name"], resource["name"]): resource
        for flavor in queue["status"]["flavorsUsage"]
        for resource in flavor["resources"]
    }
    assert usage[("standard", "cpu")]["total"] == "2"
    assert usage[("standard", "cpu")]["borrowed"] == "1"
    research = cluster.get_json("cohort", "research")
    assert research["spec"]["parentName"] == "org"


def test_borrowing_limit_reached_makes_the_next_workload_wait(cluster: Cluster) -> None:
    quota = _conditions(workload_of(cluster, "team-a", "over-borrowing-limit"))["QuotaReserved"]
    assert (quota["status"], quota["reason"]) == ("False", "Pending")
    assert quota["message"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "standard, 1 more needed"
    )
    queue = cluster.get_json("clusterqueue", "cq-research-borrower")
    cpu = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert (cpu["name"], cpu["nominalQuota"], cpu["borrowingLimit"]) == ("cpu", "1", "1")


def test_admitted_job_whose_pod_the_scheduler_cannot_place(cluster: Cluster) -> None:
    workload = workload_of(cluster, "team-a", "admitted-but-unschedulable")
    assert _conditions(workload)["Admitted"]["status"] == "True"
    assert workload["status"]["admission"]["clusterQueue"] == "cq-team-a"
    pods = cluster.get_json("pods", "-n", "team-a", "-l", "job-name=admitted-but-unschedulable")[
        "items"
    ]
    assert len(pods) == 1
    pod = pods[0]
    assert pod["status"]["phase"] == "Pending"
    scheduled = _conditions(pod)["PodScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    # Kueue injected the flavor's node labels when it admitted the Job.
    assert pod["spec"]["nodeSelector"] == {"kueue-graphql.example/pool": "standard"}
    failed = [
        e
        for e in events_for(cluster, "team-a", "Pod", pod["metadata"]["name"])
        if e["reason"] == "FailedScheduling"
    ]
    assert failed, "kube-scheduler wrote no FailedScheduling event"
    assert failed[0]["message"].startswith("0/2 nodes are available:")
    assert "Insufficient cpu" in failed[0]["message"]


def test_healthy_admitted_job_runs(cluster: Cluster) -> None:
    workload = workload_of(cluster, "team-a", "healthy-running")
    conditions = _conditions(workload)
    assert conditions["QuotaReserved"]["message"] == "Quota reserved in ClusterQueue cq-team-a"
    assert conditions["Admitted"]["status"] == "True"
    assert workload["spec"]["priorityClassRef"]["name"] == "high-priority"
    assert workload["spec"]["priority"] == 1000
    pods = cluster.get_json("pods", "-n", "team-a", "-l", "job-name=healthy-running")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Running"]
    assert pods[0]["spec"]["nodeName"] == "node-standard-1"
    job_events = {e["reason"] for e in events_for(cluster, "team-a", "Job", "healthy-running")}
    assert {"CreatedWorkload", "Started"} <= job_events


def test_finished_job_finishes_its_workload(cluster: Cluster) -> None:
    finished = _conditions(workload_of(cluster, "team-a", "finished-ok"))["Finished"]
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
    job = cluster.get_json("job", "finished-ok", "-n", "team-a")
    assert _conditions(job)["Complete"]["status"] == "True"


def test_gpu_like_extended_resource_is_admitted_on_its_flavor(cluster: Cluster) -> None:
    workload = workload_of(cluster, "team-a", "gpu-training")
    assignment = workload["status"]["admission"]["podSetAssignments"][0]
    assert assignment["flavors"]["example.com/gpu"] == "gpu-a100"
    assert assignment["resourceUsage"]["example.com/gpu"] == "2"
    pods = cluster.get_json("pods", "-n", "team-a", "-l", "job-name=gpu-training")["items"]
    assert pods[0]["spec"]["nodeName"] == "node-gpu-1"  # the flavor's toleration was injected


def test_workload_waits_for_its_admission_check(cluster: Cluster) -> None:
    workload = workload_of(cluster, "team-a", "waits-for-approval")
    conditions = _conditions(workload)
    assert conditions["QuotaReserved"]["status"] == "True"
    assert conditions.get("Admitted", {}).get("status") != "True"
    checks = {c["name"]: c["state"] for c in workload["status"]["admissionChecks"]}
    assert checks == {"manual-approval": "Pending"}


def test_deactivated_workload_is_evicted(cluster: Cluster) -> None:
    workload = workload_of(cluster, "team-a", "deactivated-by-admin")
    assert workload["spec"]["active"] is False
    evicted = _conditions(workload)["Evicted"]
    assert (evicted["status"], evicted["reason"]) == ("True", "Deactivated")


def test_visibility_api_gives_queue_positions(cluster: Cluster) -> None:
    items = raw_json(
        cluster,
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-small-2cpu/pendingworkloads",
    )["items"]
    assert [
        (i["metadata"]["name"].rsplit("-", 1)[0], i["positionInClusterQueue"]) for i in items
    ] == [("job-too-big-3x1cpu", 0)]


def test_higher_priority_workload_preempts_a_lower_one(cluster: Cluster) -> None:
    victim = _conditions(workload_of(cluster, "team-a", "low-priority-victim"))
    assert (victim["Preempted"]["status"], victim["Preempted"]["reason"]) == (
        "True",
        "InClusterQueue",
    )
    assert (victim["Evicted"]["status"], victim["Evicted"]["reason"]) == ("True", "Preempted")
    assert victim["QuotaReserved"]["status"] == "False"
    preemptor = workload_of(cluster, "team-a", "high-priority-preemptor")
    assert _conditions(preemptor)["Admitted"]["status"] == "True"
    reasons = {
        e["reason"]
        for e in events_for(cluster, "team-a", "Workload", preemptor["metadata"]["name"])
    }
    assert "PreemptedWorkload" in reasons
    assert cluster.get_json("job", "low-priority-victim", "-n", "team-a")["spec"]["suspend"] is True


def test_failed_pod_fails_the_job_and_finishes_the_workload(cluster: Cluster) -> None:
    finished = _conditions(workload_of(cluster, "team-a", "fails-with-exit-1"))["Finished"]
    assert (finished["status"], finished["reason"], finished["message"]) == (
        "True",
        "Failed",
        "Job has reached the specified backoff limit",
    )


def test_job_without_queue_label_is_left_alone_by_kueue(cluster: Cluster) -> None:
    job = cluster.get_json("job", "not-queued", "-n", "team-a")
    assert "kueue.x-k8s.io/queue-name" not in job["metadata"].get("labels", {})
    assert not job["spec"].get("suspend")
    uid = job["metadata"]["uid"]
    workloads = cluster.get_json("workloads", "-n", "team-a", "-l", f"kueue.x-k8s.io/job-uid={uid}")
    assert workloads["items"] == []
    pods = cluster.get_json("pods", "-n", "team-a", "-l", "job-name=not-queued")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Running"]
