"""The diagnosis on REAL objects captured from the test control plane (Kueue v0.17.0,
Kubernetes 1.36), as an administrator, as `viewer` (cluster-wide read) and as `alice` (tenant
of team-a, who may not read ClusterQueues, Cohorts, flavors or Nodes: those reads were
answered 403 at capture time and are replayed as Forbidden markers).

Expected values come from the scenario manifests in tests/cluster/manifests, not from the
diagnosis' own output: e.g. 3 Pods x 1 CPU against a 2-CPU ClusterQueue.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from kueue_graphql.diagnosis import (
    Diagnosis,
    Layer,
    ObjectRef,
    QuotaLine,
    Stage,
    Verdict,
    Visibility,
    diagnose,
)
from tests.diagnosis.captured import as_input, load

USERS = ("admin", "viewer", "alice")
TENANT = "alice"


def run(scenario: str, user: str) -> Diagnosis:
    return diagnose(as_input(load(scenario), user))


def codes(d: Diagnosis) -> list[str]:
    return [r.code for r in d.reasons]


def line(d: Diagnosis, flavor: str, resource: str) -> QuotaLine:
    [found] = [x for x in d.quota.lines if (x.flavor, x.resource) == (flavor, resource)]
    return found


@pytest.mark.parametrize("user", USERS)
def test_too_big_never_fits(user: str) -> None:
    d = run("too-big-3x1cpu", user)
    assert (d.stage, d.layer) == (Stage.WAITING_FOR_QUOTA_RESERVATION, Layer.KUEUE)
    assert d.blocking_object == ObjectRef(
        "ClusterQueue", "cq-small-2cpu", None, "kueue.x-k8s.io/v1beta2"
    )
    [r] = [r for r in d.reasons if r.code == "ExceedsMaxQuota"]
    # Kueue v0.17 writes the legacy reason; the numbers come from its message.
    assert (r.kueue_reason, r.resource, r.flavor, r.pod_set) == (
        "Pending",
        "cpu",
        "standard",
        "main",
    )
    assert (r.number("requested"), r.number("maximumCapacity")) == (3, 2)
    assert d.queue_position.visibility is Visibility.AVAILABLE
    assert d.queue_position.position_in_local_queue == 0
    assert any("Shrink the request" in s for s in d.next_steps)
    if user == TENANT:
        assert d.quota.visibility is Visibility.FORBIDDEN
        assert d.quota.lines == ()
        assert r.number("nominalQuota") is None  # never read from the ClusterQueue
    else:
        cpu = line(d, "standard", "cpu")
        assert (cpu.requested, cpu.nominal_quota, cpu.maximum_capacity) == (3, 2, 2)
        assert (cpu.verdict, cpu.limited_by) == (Verdict.NEVER_FITS, "NOMINAL_QUOTA")
        assert line(d, "standard", "memory").requested == 3 * 256 * 2**20
        assert d.quota.verdict is Verdict.NEVER_FITS
        assert r.number("nominalQuota") == 2


@pytest.mark.parametrize("user", USERS)
def test_stopped_local_queue(user: str) -> None:
    d = run("waits-on-stopped-queue", user)
    assert (d.stage, d.layer) == (Stage.WAITING_FOR_QUOTA_RESERVATION, Layer.KUEUE)
    assert d.blocking_object == ObjectRef(
        "LocalQueue", "lq-stopped", "team-a", "kueue.x-k8s.io/v1beta2"
    )
    # Kueue: reason Inadmissible, "LocalQueue lq-stopped is inactive"; the object: stopPolicy Hold
    assert codes(d)[:2] == ["LocalQueueInactive", "LocalQueueStopped"]
    assert d.reasons[0].kueue_reason == "Inadmissible"
    assert "Hold" in d.reasons[1].message
    assert not any("Quota is free now" in s for s in d.next_steps)
    # Kueue's visibility API does not list Workloads of a stopped LocalQueue
    assert d.queue_position.visibility is Visibility.ABSENT


@pytest.mark.parametrize("user", USERS)
def test_missing_cluster_queue(user: str) -> None:
    d = run("waits-on-missing-clusterqueue", user)
    assert (d.stage, d.layer) == (Stage.WAITING_FOR_QUOTA_RESERVATION, Layer.KUEUE)
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == ("LocalQueue", "lq-orphan")
    assert d.cluster_queue == "cq-does-not-exist"
    first = d.reasons[0]
    assert (first.code, first.kueue_reason) == ("ClusterQueueNotFound", "Inadmissible")
    assert first.object is not None
    assert first.object.name == "cq-does-not-exist"
    # the LocalQueue's own status says the same: kept as separate evidence
    [from_lq] = [r for r in d.reasons[1:] if r.code == "ClusterQueueNotFound"]
    assert from_lq.kueue_reason == "ClusterQueueDoesNotExist"
    # a tenant cannot tell "missing" from "not mine": the API server answers 403 either way
    expected = Visibility.FORBIDDEN if user == TENANT else Visibility.ABSENT
    assert d.quota.visibility is expected


@pytest.mark.parametrize("user", USERS)
def test_untolerated_flavor_taint(user: str) -> None:
    d = run("no-spot-toleration", user)
    assert (d.stage, d.layer) == (Stage.WAITING_FOR_QUOTA_RESERVATION, Layer.KUEUE)
    assert d.blocking_object == ObjectRef(
        "ResourceFlavor", "spot-tainted", None, "kueue.x-k8s.io/v1beta2"
    )
    [r] = d.reasons
    assert (r.code, r.flavor, r.kueue_reason) == (
        "UntoleratedFlavorTaint",
        "spot-tainted",
        "Pending",
    )
    assert "kueue-graphql.example/spot=true:NoSchedule" in d.summary
    assert any("toleration" in s for s in d.next_steps)
    exact = [s for s in d.next_steps if "from ResourceFlavor spot-tainted's nodeTaints" in s]
    assert len(exact) == (0 if user == TENANT else 1)
    if user != TENANT:
        # quota is not the problem: 500m of 16 CPU
        assert d.quota.verdict is Verdict.FITS_NOW
        assert not any("Quota is free now" in s for s in d.next_steps)


@pytest.mark.parametrize("user", USERS)
def test_over_borrowing_limit(user: str) -> None:
    d = run("over-borrowing-limit", user)
    assert (d.stage, d.layer) == (Stage.WAITING_FOR_QUOTA_RESERVATION, Layer.KUEUE)
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == (
        "ClusterQueue",
        "cq-research-borrower",
    )
    [r] = [r for r in d.reasons if r.code == "WaitingForQuota"]
    assert (r.resource, r.flavor, r.number("moreNeeded")) == ("cpu", "standard", 1)
    if user == TENANT:
        assert d.quota.visibility is Visibility.FORBIDDEN
    else:
        cpu = line(d, "standard", "cpu")
        # nominal 1 + borrowingLimit 1, already 2 reserved by borrows-one-cpu
        assert (cpu.nominal_quota, cpu.borrowing_limit, cpu.reserved, cpu.borrowed) == (1, 1, 2, 1)
        assert (cpu.maximum_capacity, cpu.available_now, cpu.cohort) == (2, 0, "research")
        assert (cpu.verdict, cpu.limited_by) == (Verdict.MUST_WAIT, "BORROWING_LIMIT")
        assert any("borrowingLimit" in s for s in d.next_steps)


@pytest.mark.parametrize("user", USERS)
def test_borrowing_workload_runs(user: str) -> None:
    d = run("borrows-one-cpu", user)
    assert (d.stage, d.layer, d.blocking_object) == (Stage.RUNNING, Layer.RUNTIME, None)
    if user != TENANT:
        cpu = line(d, "standard", "cpu")
        assert (cpu.requested, cpu.nominal_quota, cpu.borrowed) == (2, 1, 1)
        assert cpu.counts_this_workload


@pytest.mark.parametrize("user", USERS)
def test_admitted_but_unschedulable_hands_over_to_scheduler(user: str) -> None:
    d = run("admitted-but-unschedulable", user)
    assert (d.stage, d.layer) == (Stage.ADMITTED_PODS_PENDING, Layer.SCHEDULER)
    assert d.blocking_object is not None
    assert d.blocking_object.kind == "Pod"
    assert d.blocking_object.name.startswith("admitted-but-unschedulable-")
    [pod] = d.pods
    assert pod.scheduled_reason == "Unschedulable"
    assert pod.node_selector == {"kueue-graphql.example/pool": "standard"}  # Kueue injected
    assert pod.failed_scheduling  # the FailedScheduling event(s)
    insufficient = [r for r in pod.reasons if r.code == "InsufficientResource"]
    assert [r.resource for r in insufficient] == ["cpu"]
    if user == TENANT:
        # no Nodes for a tenant: only what kube-scheduler wrote on her own Pod
        assert not any(r.code == "NoNodeFits" for r in pod.reasons)
    else:
        [fault] = [r for r in pod.reasons if r.code == "NoNodeFits"]
        assert "node-standard-1" in fault.message
        assert (fault.number("requested"), fault.number("allocatable")) == (16, 8)
        # Kueue's quota was fine: 16 of 32
        assert line(d, "standard", "cpu").verdict is Verdict.FITS_NOW


@pytest.mark.parametrize("user", USERS)
def test_healthy_running(user: str) -> None:
    d = run("healthy-running", user)
    assert (d.stage, d.layer, d.blocking_object) == (Stage.RUNNING, Layer.RUNTIME, None)
    assert d.pods == ()
    assert d.queue_position.visibility is Visibility.NOT_APPLICABLE


@pytest.mark.parametrize("user", USERS)
def test_finished(user: str) -> None:
    d = run("finished-ok", user)
    assert (d.stage, d.layer, d.blocking_object) == (Stage.FINISHED_SUCCEEDED, Layer.RUNTIME, None)
    assert d.reasons[0].kueue_reason == "Succeeded"
    assert d.quota.visibility is Visibility.NOT_APPLICABLE


@pytest.mark.parametrize("user", USERS)
def test_gpu_training(user: str) -> None:
    d = run("gpu-training", user)
    assert (d.stage, d.layer) == (Stage.RUNNING, Layer.RUNTIME)
    if user != TENANT:
        gpu = line(d, "gpu-a100", "example.com/gpu")
        assert (gpu.requested, gpu.nominal_quota, gpu.reserved) == (2, 4, 2)
        assert line(d, "gpu-a100", "cpu").requested == Decimal(2)


@pytest.mark.parametrize("user", USERS)
def test_waits_for_admission_check(user: str) -> None:
    d = run("waits-for-approval", user)
    assert (d.stage, d.layer) == (Stage.WAITING_FOR_ADMISSION_CHECKS, Layer.KUEUE)
    assert d.blocking_object == ObjectRef(
        "AdmissionCheck", "manual-approval", None, "kueue.x-k8s.io/v1beta2"
    )
    assert d.reasons[0].code == "AdmissionCheckPending"
    has_controller = "controller kueue-graphql.example/manual-approval" in d.reasons[0].message
    assert has_controller is (user != TENANT)


@pytest.mark.parametrize("user", USERS)
def test_deactivated(user: str) -> None:
    d = run("deactivated-by-admin", user)
    assert (d.stage, d.layer) == (Stage.DEACTIVATED, Layer.KUEUE)
    assert d.blocking_object is not None
    assert d.blocking_object.kind == "Workload"
    assert (d.reasons[0].code, d.reasons[0].kueue_reason) == ("Deactivated", "Deactivated")


def test_starting_from_the_workload_finds_the_same() -> None:
    data = load("too-big-3x1cpu")
    from_job = diagnose(as_input(data, "viewer"))
    from_workload = diagnose(as_input(data, "viewer", start_from="workload"))
    assert from_workload.owner == from_job.owner
    assert (from_workload.stage, from_workload.blocking_object) == (
        from_job.stage,
        from_job.blocking_object,
    )


def test_commands_name_the_real_objects() -> None:
    d = run("too-big-3x1cpu", "viewer")
    assert d.workload is not None
    assert "kubectl kueue list workload -n team-a --for job/too-big-3x1cpu" in d.commands
    assert f"kubectl get workload {d.workload.name} -n team-a -o yaml" in d.commands
    assert "kubectl get clusterqueue cq-small-2cpu -o yaml" in d.commands


@pytest.mark.parametrize("user", USERS)
def test_preempted_by_a_higher_priority_workload(user: str) -> None:
    d = run("low-priority-victim", user)
    assert (d.stage, d.layer) == (Stage.PREEMPTED, Layer.KUEUE)
    assert d.blocking_object == ObjectRef(
        "ClusterQueue", "cq-preemption", None, "kueue.x-k8s.io/v1beta2"
    )
    assert "Preempted" in codes(d)
    # The preemptor that took its place runs.
    preemptor = run("high-priority-preemptor", user)
    assert (preemptor.stage, preemptor.layer) == (Stage.RUNNING, Layer.RUNTIME)


@pytest.mark.parametrize("user", USERS)
def test_failed_job(user: str) -> None:
    d = run("fails-with-exit-1", user)
    assert (d.stage, d.layer, d.blocking_object) == (Stage.FINISHED_FAILED, Layer.RUNTIME, None)
    assert d.reasons[0].kueue_reason == "Failed"
    assert d.reasons[0].message == "Job has reached the specified backoff limit"


@pytest.mark.parametrize("user", USERS)
def test_job_without_queue_name_is_not_managed(user: str) -> None:
    d = run("not-queued", user)
    assert d.stage is Stage.NOT_MANAGED
    assert codes(d) == ["NoQueueName"]
