"""diagnose when the ClusterQueue admits nothing (issue 21 port: s-deleted-cq-freezes,
s-inactive-until-flavor, s-order-flavor-last): Kueue writes "ClusterQueue X is inactive" on the
Workload, so the inactive ClusterQueue is the blocking object, and the reason and the next step
name why (it is being deleted; a ResourceFlavor it names does not exist)."""

from __future__ import annotations

from typing import Any

from kueue_graphql.diagnosis import DiagnosisInput, diagnose
from kueue_graphql.kueue.model import ObjectRef

T0 = "2026-12-05T02:00:00Z"


def _workload() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "team", "uid": "u1", "creationTimestamp": T0},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": "ClusterQueue cq is inactive",
                    "lastTransitionTime": T0,
                }
            ]
        },
    }


def _cluster_queue(active: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq", **meta},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "foo-flavor", "resources": [{"name": "cpu", "nominalQuota": "5"}]}
                    ],
                }
            ],
        },
        "status": {"reservingWorkloads": 1, "conditions": [{"type": "Active", **active}]},
    }


def _diagnose(
    cq: dict[str, Any],
    lq: dict[str, Any] | None = None,
    workload: dict[str, Any] | None = None,
    **inputs: Any,
) -> Any:
    lq = lq or {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "team"},
        "spec": {"clusterQueue": "cq"},
        "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]},
    }
    return diagnose(
        DiagnosisInput(
            workload=workload or _workload(),
            events=[],
            pods=[],
            local_queue=lq,
            cluster_queue=cq,
            cluster_queues=[cq],
            cohorts=[],
            **inputs,
        )
    )


CQ_REF = ObjectRef("ClusterQueue", "cq", None, "kueue.x-k8s.io/v1beta2")


def test_a_cluster_queue_being_deleted_is_said_to_be() -> None:
    """Kueue leaves Active=True while the finalizer holds the ClusterQueue: before, diagnose
    never said it was being deleted."""
    cq = _cluster_queue(
        {"status": "True", "reason": "Ready", "message": "Can admit new workloads"},
        deletionTimestamp=T0,
        finalizers=["kueue.x-k8s.io/resource-in-use"],
    )
    d = _diagnose(cq)
    codes = [r.code for r in d.reasons]
    assert "ClusterQueueTerminating" in codes
    deleting = next(r for r in d.reasons if r.code == "ClusterQueueTerminating")
    assert f"is being deleted (deletionTimestamp {T0})" in deleting.message
    assert "while 1 Workload(s) hold quota in it" in deleting.message
    assert d.blocking_object == CQ_REF
    assert any("is being deleted" in s and "another LocalQueue" in s for s in d.next_steps)


def test_a_missing_flavor_blocks_through_the_inactive_cluster_queue() -> None:
    """Before: the blocking object was the missing ResourceFlavor, while Kueue reports the
    ClusterQueue inactive."""
    cq = _cluster_queue(
        {
            "status": "False",
            "reason": "FlavorNotFound",
            "message": (
                "Can't admit new workloads: references missing ResourceFlavor(s): foo-flavor."
            ),
        }
    )
    d = _diagnose(cq)
    assert d.blocking_object == CQ_REF
    flavor = next(r for r in d.reasons if r.code == "FlavorNotFound")
    assert flavor.object is not None
    assert flavor.object.name == "foo-flavor"
    assert "foo-flavor" in d.summary
    assert any("create ResourceFlavor foo-flavor" in s for s in d.next_steps)
