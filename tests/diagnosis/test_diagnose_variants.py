"""HAND-MADE variants for branches the test cluster does not show.

Each test starts from REAL captured objects and changes only what the branch needs, in the
shape Kueue's source writes it (pkg/workload/workload.go, pkg/scheduler/preemption,
pkg/workload/admissionchecks.go of v0.17.0; granular reasons of later releases). The change
is spelled out in each test.
"""

from __future__ import annotations

import copy
from typing import Any

from kueue_graphql.diagnosis import (
    Absent,
    DiagnosisInput,
    Forbidden,
    Layer,
    Stage,
    Visibility,
    diagnose,
)
from tests.diagnosis.captured import as_input, load


def _set_condition(obj: dict[str, Any], type_: str, status: str, reason: str, msg: str) -> None:
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c["type"] != type_]
    conditions.append(
        {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": msg,
            "lastTransitionTime": "2026-12-02T15:00:00Z",
        }
    )


def test_preempted_in_cohort() -> None:
    # HAND-MADE: healthy-running preempted by reclamation within its cohort, as
    # preemption.IssuePreemptions + workload.Evict write it; quota released and requeued.
    data = copy.deepcopy(load("healthy-running"))
    wl = data["workload"]
    message = (
        "Preempted to accommodate a workload (UID: 1234, JobUID: 5678) due to reclamation "
        "within the cohort; preemptor path: /shared-pool/cq-team-b; preemptee path: "
        "/shared-pool/cq-team-a"
    )
    _set_condition(wl, "Evicted", "True", "Preempted", message)
    _set_condition(wl, "Preempted", "True", "InCohortReclamation", message)
    _set_condition(wl, "QuotaReserved", "False", "Pending", "Preempted")
    wl["status"].pop("admission", None)
    data["pods"] = []
    data["pendingWorkloads"] = {
        "items": [
            {
                "metadata": {"name": wl["metadata"]["name"]},
                "positionInClusterQueue": 3,
                "positionInLocalQueue": 1,
                "priority": 1000,
            }
        ]
    }
    d = diagnose(as_input(data, "viewer"))
    assert (d.stage, d.layer) == (Stage.PREEMPTED, Layer.KUEUE)
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == ("Cohort", "shared-pool")
    assert [r.kueue_reason for r in d.reasons[:2]] == ["Preempted", "InCohortReclamation"]
    assert "reclamation within the cohort" in d.summary
    assert d.queue_position.position_in_cluster_queue == 3
    assert d.queue_position.priority == 1000


def test_evicted_by_pods_ready_timeout() -> None:
    # HAND-MADE: waitForPodsReady eviction, reason PodsReadyTimeout, quota still held
    data = copy.deepcopy(load("admitted-but-unschedulable"))
    _set_condition(
        data["workload"],
        "Evicted",
        "True",
        "PodsReadyTimeout",
        "Exceeded the PodsReady timeout team-a/x",
    )
    d = diagnose(as_input(data, "viewer"))
    assert (d.stage, d.layer) == (Stage.EVICTED, Layer.KUEUE)
    assert d.blocking_object is not None
    assert d.blocking_object.kind == "Pod"


def test_granular_reason_of_later_kueue() -> None:
    # HAND-MADE: Kueue >= v0.19 with UnadmittedWorkloadsObservability writes ExceedsMaxQuota
    data = copy.deepcopy(load("too-big-3x1cpu"))
    for c in data["workload"]["status"]["conditions"]:
        if c["type"] == "QuotaReserved":
            c["reason"] = "ExceedsMaxQuota"
    data["events"] = []
    d = diagnose(as_input(data, "viewer"))
    [r] = d.reasons
    assert (r.code, r.kueue_reason) == ("ExceedsMaxQuota", "ExceedsMaxQuota")
    assert (r.number("requested"), r.number("maximumCapacity")) == (3, 2)
    assert d.blocking_object is not None
    assert d.blocking_object.name == "cq-small-2cpu"


def test_not_managed() -> None:
    # HAND-MADE: the same Job without the queue-name label; Kueue made no Workload
    data = copy.deepcopy(load("healthy-running"))
    data["job"]["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")
    data["workload"] = None
    d = diagnose(as_input(data, "viewer"))
    assert d.stage is Stage.NOT_MANAGED
    assert d.blocking_object is None
    assert d.reasons[0].code == "NoQueueName"
    assert any("kueue.x-k8s.io/queue-name" in s for s in d.next_steps)


def test_no_workload_yet() -> None:
    # HAND-MADE: labelled Job, Workload not (yet) created
    data = copy.deepcopy(load("too-big-3x1cpu"))
    data["workload"] = None
    d = diagnose(as_input(data, "alice"))
    assert (d.stage, d.layer) == (Stage.NO_WORKLOAD_YET, Layer.KUEUE)
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == ("LocalQueue", "lq-small")


def test_finished_failed() -> None:
    # HAND-MADE: Finished=True reason Failed, as the job reconciler writes for a failed Job
    data = copy.deepcopy(load("finished-ok"))
    _set_condition(data["workload"], "Finished", "True", "Failed", "Job has reached the backoff")
    d = diagnose(as_input(data, "alice"))
    assert d.stage is Stage.FINISHED_FAILED


def test_rejected_admission_check_deactivates() -> None:
    # HAND-MADE: the check's controller rejects; Kueue sets spec.active=false
    data = copy.deepcopy(load("waits-for-approval"))
    wl = data["workload"]
    wl["spec"]["active"] = False
    wl["status"]["admissionChecks"][0].update(state="Rejected", message="denied by policy")
    d = diagnose(as_input(data, "viewer"))
    assert d.stage is Stage.DEACTIVATED
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == (
        "AdmissionCheck",
        "manual-approval",
    )
    assert any(r.message.startswith("denied by policy (controller ") for r in d.reasons)


def test_pod_bound_but_not_started_is_runtime() -> None:
    # HAND-MADE: a Pod placed on a node whose kubelet never starts it
    data = copy.deepcopy(load("healthy-running"))
    pod = data["pods"][0]
    pod["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [
            {"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "x"}}}
        ],
    }
    d = diagnose(as_input(data, "viewer"))
    assert (d.stage, d.layer) == (Stage.ADMITTED_PODS_PENDING, Layer.RUNTIME)
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == ("Node", pod["spec"]["nodeName"])
    assert d.pods[0].reasons[0].code == "ImagePullBackOff"


def test_forbidden_workload_and_visibility() -> None:
    # HAND-MADE: a caller who may read the Job but not the Workload nor the pending list
    data = load("too-big-3x1cpu")
    base = as_input(data, "alice")
    inp = DiagnosisInput(
        owner=base.owner,
        workload=Forbidden("no"),
        local_queue=base.local_queue,
        queue_position=Forbidden("no"),
    )
    d = diagnose(inp)
    assert (d.stage, d.layer) == (Stage.WAITING_FOR_QUOTA_RESERVATION, Layer.KUEUE)
    assert d.reasons[0].code == "WorkloadNotReadable"
    assert d.queue_position.visibility is Visibility.FORBIDDEN
    assert d.quota.visibility is not Visibility.AVAILABLE


def test_partial_cohort_view() -> None:
    # HAND-MADE: the ClusterQueue is readable but the list of ClusterQueues is not: cohort
    # figures stay unknown instead of being guessed from a partial tree
    data = load("over-borrowing-limit")
    base = as_input(data, "viewer")
    inp = DiagnosisInput(
        owner=base.owner,
        workload=base.workload,
        events=base.events,
        local_queue=base.local_queue,
        cluster_queue=base.cluster_queue,
        cluster_queues=Forbidden("no list"),
        cohorts=Absent(),
    )
    d = diagnose(inp)
    cpu = next(x for x in d.quota.lines if x.resource == "cpu")
    assert (cpu.available_now, cpu.cohort_can_lend) == (None, None)
    assert cpu.maximum_capacity == 2  # nominal 1 + borrowingLimit 1 bounds it anyway
    assert "unknown" in d.quota.detail
