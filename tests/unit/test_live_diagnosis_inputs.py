"""What a live diagnosis compares the queues it read by (lookups/diagnosis.py
DIAGNOSIS_FINGERPRINTS): everything but the pending counts Kueue writes to a ClusterQueue and a
LocalQueue after each change of their pending Workloads (issue 26: each such write recomputed
every diagnosis subscription of the queue). Holds only while no diagnosis reads those counts:
the diagnosis of inputs that differ only there is the same, whole."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_graphql.kube.resources import CLUSTER_QUEUE, LOCAL_QUEUE
from kueue_graphql.lookups.diagnosis import DIAGNOSIS_FINGERPRINTS
from tests.unit.test_diagnose_inactive_cluster_queue import _cluster_queue, _diagnose, _workload


def _local_queue(pending: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "team", "resourceVersion": str(pending)},
        "spec": {"clusterQueue": "cq"},
        "status": {
            "pendingWorkloads": pending,
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}],
        },
    }


def _queues(pending: int, active: dict[str, Any], cohort: bool) -> tuple[Any, Any]:
    cq = _cluster_queue(active)
    cq["metadata"]["resourceVersion"] = str(100 + pending)
    cq["status"]["pendingWorkloads"] = pending
    if cohort:
        cq["spec"]["cohortName"] = "all"
    return cq, _local_queue(pending)


ACTIVE = {"status": "True", "reason": "Ready", "message": "Can admit new workloads"}
INACTIVE = {"status": "False", "reason": "Stopped", "message": "Can't admit new workloads"}


@pytest.mark.parametrize(
    ("active", "cohort", "message"),
    [
        (ACTIVE, False, "couldn't assign flavors to pod set main: insufficient quota for cpu"),
        (ACTIVE, True, "couldn't assign flavors to pod set main: insufficient quota for cpu"),
        (INACTIVE, False, "ClusterQueue cq is inactive"),
    ],
)
def test_the_pending_counts_of_the_queues_change_no_diagnosis(
    active: dict[str, Any], cohort: bool, message: str
) -> None:
    answers = []
    for pending in (0, 7):
        workload = _workload()
        workload["status"]["conditions"][0]["message"] = message
        cq, lq = _queues(pending, active, cohort)
        answers.append(
            _diagnose(
                cq,
                lq,
                workload,
                queue_position={"positionInClusterQueue": 3, "positionInLocalQueue": 1},
            )
        )
    assert answers[0] == answers[1]


def test_a_queue_reads_the_same_after_a_pending_count_write_only() -> None:
    for resource in (CLUSTER_QUEUE, LOCAL_QUEUE):
        of = DIAGNOSIS_FINGERPRINTS[resource]
        before, _ = _queues(0, ACTIVE, False)
        if resource == LOCAL_QUEUE:
            before = _local_queue(0)
        written = copy.deepcopy(before)
        written["metadata"]["resourceVersion"] = "999"
        written["status"]["pendingWorkloads"] = 5
        assert of(written) == of(before)
        # Anything else it holds counts: a condition, the spec, a label.
        for change in (
            lambda o: o["status"]["conditions"][0].update(status="False"),
            lambda o: o["spec"].update(clusterQueue="other", cohortName="other"),
            lambda o: o["metadata"].update(labels={"a": "b"}),
        ):
            other = copy.deepcopy(written)
            change(other)
            assert of(other) != of(before)
        assert of(None) != of(before)
