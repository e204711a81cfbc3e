# ruff: noqa: E501  (tables of shapes as Kueue writes them)
"""Objects shaped as Kueue v0.20 writes them, on top of the captured v0.17 objects. Shapes come
from Kueue's source (github.com/kubernetes-sigs/kueue, main of 2026-08-22, ff69552):
keps/10852-inadmissible-workloads-observability/README.md "Scenario 2/3/4" (QuotaReserved and
Admitted conditions with the granular reasons), apis/kueue/v1beta2/workload_types.go
(SchedulingStats.evictions, clusterName, nominatedClusterNames) and
apis/kueue/v1beta2/clusterqueue_types.go (ClusterQueue Active reasons)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from kueue_graphql.diagnosis import Absent, Forbidden, Stage, Verdict, diagnose
from kueue_graphql.kueue.vocabulary import kueue_version_of
from tests.diagnosis.captured import as_input, load


def _with_conditions(data: dict[str, Any], *conditions: dict[str, str]) -> dict[str, Any]:
    wl = copy.deepcopy(data["workload"])
    kept = [
        c for c in wl["status"]["conditions"] if c["type"] not in {x["type"] for x in conditions}
    ]
    wl["status"]["conditions"] = kept + [
        dict(c, lastTransitionTime="2026-12-03T08:00:00Z") for c in conditions
    ]
    return wl


NO_RESERVATION = {
    "type": "Admitted",
    "status": "False",
    "reason": "NoReservation",
    "message": "The workload has no reservation",
}


@pytest.mark.parametrize(
    ("reason", "message", "code"),
    [
        # KEP-10852 Scenario 2
        (
            "WaitingForQuota",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
            "flavor standard, 2 more needed",
            "WaitingForQuota",
        ),
        # Scenario 3
        ("Misconfigured", "LocalQueue local-queue doesn't exist", "LocalQueueNotFound"),
        # Scenario 4
        ("NoMatchingFlavor", "couldn't find matching flavor for pod set main", "NoMatchingFlavor"),
        # workload_types.go reasons without a message shape of their own
        ("OnHold", "quota reservation released", "OnHold"),
        ("WaitingForPodsReady", "waiting for admitted workloads to be ready", "WaitingForPodsReady"),
        ("PendingEvaluation", "Workload is pending evaluation in the scheduling queue", "PendingEvaluation"),
    ],
)  # fmt: skip
def test_granular_quota_reserved_reasons(reason: str, message: str, code: str) -> None:
    data = load("too-big-3x1cpu")
    wl = _with_conditions(
        data,
        {"type": "QuotaReserved", "status": "False", "reason": reason, "message": message},
        NO_RESERVATION,
    )
    d = diagnose(replace(as_input(data, "viewer"), workload=wl, events=[]))
    assert d.stage is Stage.WAITING_FOR_QUOTA_RESERVATION
    first = d.reasons[0]
    assert (first.code, first.kueue_reason) == (code, reason)


def test_eviction_history_and_hidden_preemptor() -> None:
    data = load("low-priority-victim")
    wl = copy.deepcopy(data["workload"])
    # workload_types.go WorkloadSchedulingStatsEviction{reason, underlyingCause, count}
    wl["status"]["schedulingStats"] = {
        "evictions": [
            {"reason": "Preempted", "underlyingCause": "InClusterQueue", "count": 2},
            {"reason": "PodsReadyTimeout", "underlyingCause": "", "count": 1},
        ]
    }
    wl["status"]["clusterName"] = "worker-1"
    inp = replace(as_input(data, "alice"), workload=wl, preemptor=Forbidden("may not list"))
    d = diagnose(inp)
    assert d.stage is Stage.PREEMPTED
    assert [(e.reason, e.underlying_cause, e.count) for e in d.evictions] == [
        ("Preempted", "InClusterQueue", 2),
        ("PodsReadyTimeout", "", 1),
    ]
    assert d.preemptor is not None
    assert d.preemptor.uid == "367ca259-2158-4bd6-b6ce-7b68ce92ef23"
    assert d.preemptor.workload is None  # hidden: the caller could not find it
    d = diagnose(replace(inp, preemptor=Absent("gone")))
    assert d.preemptor is not None
    assert d.preemptor.workload is None


@pytest.mark.parametrize(
    ("reason", "message", "code", "kind", "obj"),
    [
        ("FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): a,b.", "FlavorNotFound", "ResourceFlavor", "a"),
        ("AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): ac1.", "AdmissionCheckNotFound", "AdmissionCheck", "ac1"),
        ("TopologyNotFound", 'Can\'t admit new workloads: there is no Topology "t1" for TAS flavor "f".', "TopologyNotFound", "Topology", "t1"),
        ("CohortCycleDetected", "Can't admit new workloads: cohort cycle.", "CohortCycleDetected", "ClusterQueue", None),
        ("Terminating", "Can't admit new workloads; clusterQueue is terminating", "ClusterQueueTerminating", "ClusterQueue", None),
    ],
)  # fmt: skip
def test_cluster_queue_inactive_causes(
    reason: str, message: str, code: str, kind: str, obj: str | None
) -> None:
    data = load("too-big-3x1cpu")
    cq = copy.deepcopy(data["clusterQueue"])
    cq["status"]["conditions"] = [
        {"type": "Active", "status": "False", "reason": reason, "message": message}
    ]
    d = diagnose(replace(as_input(data, "viewer"), cluster_queue=cq))
    r = next(x for x in d.reasons if x.code == code)
    assert r.kueue_reason == reason
    assert r.object is not None
    assert r.object.kind == kind
    assert r.object.name == (obj or cq["metadata"]["name"])
    if reason == "FlavorNotFound":  # every flavor the message names is its own reason
        assert {x.object.name for x in d.reasons if x.code == code and x.object} == {"a", "b"}
    # never FITS_NOW while the queue admits nothing (this Workload also never fits: 3 > 2)
    assert d.quota.verdict in (Verdict.NEVER_FITS, Verdict.QUEUE_INACTIVE)
    assert not any("resume clusterqueue" in s for s in d.next_steps)


def _deployment(image: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    # config/components/manager/manager.yaml with config/default/kustomization.yaml applied
    # (namespace kueue-system, namePrefix kueue-), image set as a release does
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "kueue-controller-manager",
            "namespace": "kueue-system",
            "labels": {"control-plane": "controller-manager", **(labels or {})},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": image}]}}},
    }


def test_kueue_version_from_its_deployment() -> None:
    assert kueue_version_of(_deployment("registry.k8s.io/kueue/kueue:v0.20.0")) == "v0.20.0"
    assert kueue_version_of(_deployment("localhost:5000/kueue@sha256:abc")) is None
    labelled = _deployment("x/kueue:main", {"app.kubernetes.io/version": "v0.17.0"})
    assert kueue_version_of(labelled) == "v0.17.0"
    assert kueue_version_of(Forbidden("no")) is None
