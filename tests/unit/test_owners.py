"""kueue/owners.py: which Pods an owner of each kind hands off to, and who suspends it."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_graphql.kube.resources import canonical_kind
from kueue_graphql.kueue.owners import (
    no_child_yet,
    owner_status,
    pod_belongs,
    pod_group_of,
    pods_selector,
    ray_cluster_of,
    ray_pod_belongs,
    ray_pods_selector,
    suspended_by,
)


def pod(name: str, labels: dict[str, str], owner_uid: str | None = None) -> dict[str, Any]:
    refs = [{"kind": "Job", "name": "child", "uid": owner_uid, "controller": True}]
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": labels,
            "ownerReferences": refs if owner_uid else [],
        },
    }


def test_a_jobsets_pods_belong_to_it_through_its_child_jobs() -> None:
    # Owned by the child Job, labelled with the JobSet's uid (jobset v0.11.1).
    mine = pod("w-0", {"jobset.sigs.k8s.io/jobset-uid": "js-uid"}, owner_uid="job-uid")
    older = pod("w-0-old", {"jobset.sigs.k8s.io/jobset-uid": "old-js-uid"}, owner_uid="job-2")
    assert pods_selector("JobSet", "js-uid", None) == "jobset.sigs.k8s.io/jobset-uid=js-uid"
    assert pod_belongs(mine, "JobSet", "js-uid", None)
    assert not pod_belongs(older, "JobSet", "js-uid", None)


def test_a_statefulset_and_a_pod_group_hand_off_to_their_group() -> None:
    workload = {
        "metadata": {
            "name": "statefulset-web-1a2b3",
            "ownerReferences": [{"kind": "StatefulSet", "uid": "sts-uid", "controller": True}],
        }
    }
    group = pod_group_of(None, "StatefulSet", workload)
    assert group == "statefulset-web-1a2b3"
    assert pods_selector("StatefulSet", "sts-uid", group) == (
        "kueue.x-k8s.io/pod-group-name=statefulset-web-1a2b3"
    )
    assert pod_belongs(
        pod("web-0", {"kueue.x-k8s.io/pod-group-name": group}), "StatefulSet", "sts-uid", group
    )
    assert not pod_belongs(pod("other-0", {}), "StatefulSet", "sts-uid", group)
    # A grouped Pod, its Workload not made yet: the group is the Pod's own label.
    member = pod("pg-0", {"kueue.x-k8s.io/pod-group-name": "pg"})
    assert pod_group_of(member, "Pod", None) == "pg"


def test_a_plain_pod_is_its_own() -> None:
    plain = pod("solo", {})
    assert pod_group_of(plain, "Pod", None) is None
    assert pod_belongs(plain, "Pod", "uid-solo", None)
    assert not pod_belongs(pod("other", {}), "Pod", "uid-solo", None)


@pytest.mark.parametrize(
    ("suspend", "workload", "labels", "expected"),
    [
        (False, {"spec": {"active": True}}, {}, None),
        (True, {"spec": {"active": True}}, {"kueue.x-k8s.io/queue-name": "lq"}, "kueue"),
        (True, {"spec": {"active": False}}, {"kueue.x-k8s.io/queue-name": "lq"}, "user"),
        (True, None, {}, "user"),  # no queue: Kueue does not manage it
        (True, None, {"kueue.x-k8s.io/queue-name": "lq"}, "kueue"),
    ],
)
def test_who_suspends_an_owner(
    suspend: bool, workload: dict[str, Any] | None, labels: dict[str, str], expected: str | None
) -> None:
    owner = {"kind": "JobSet", "metadata": {"labels": labels}, "spec": {"suspend": suspend}}
    assert suspended_by(owner, workload) == expected


@pytest.mark.parametrize(
    ("typed", "kind"),
    [
        ("jobset", "JobSet"),
        ("JOBSETS", "JobSet"),
        ("jobsets.jobset.x-k8s.io", "JobSet"),
        ("sts", "StatefulSet"),
        ("statefulsets.apps", "StatefulSet"),
        ("po", "Pod"),
        ("js", "js"),  # not a short name kubectl knows
    ],
)
def test_kinds_as_kubectl_users_type_them(typed: str, kind: str) -> None:
    assert canonical_kind(typed) == kind


def _ray_job(cluster: str | None, deployment: str | None = None) -> dict[str, Any]:
    state: dict[str, str] = {}
    if cluster:
        state["rayClusterName"] = cluster
    if deployment:
        state["jobDeploymentStatus"] = deployment
    return {"kind": "RayJob", "metadata": {"name": "rj", "uid": "rj-uid"}, "status": state}


def test_a_rayjobs_pods_are_its_rayclusters_once_the_operator_made_one() -> None:
    # Kueue's PodLabelSelector for a RayJob: ray.io/cluster=<status.rayClusterName>.
    assert ray_cluster_of(_ray_job(None), "RayJob", None) is None
    assert ray_cluster_of(_ray_job("rj-raycluster-x7"), "RayJob", None) == "rj-raycluster-x7"
    assert ray_pods_selector("rj-raycluster-x7") == "ray.io/cluster=rj-raycluster-x7"
    mine = pod("rj-head", {"ray.io/cluster": "rj-raycluster-x7"})
    assert ray_pod_belongs(mine, "rj-raycluster-x7")
    assert not ray_pod_belongs(pod("other-head", {"ray.io/cluster": "other"}), "rj-raycluster-x7")
    # A RayCluster hands off to its own Pods, by its name (from the Workload when not read).
    workload = {
        "metadata": {"ownerReferences": [{"kind": "RayCluster", "name": "rc", "controller": True}]}
    }
    assert ray_cluster_of(None, "RayCluster", workload) == "rc"


def test_an_admitted_rayjob_without_a_raycluster_says_the_operator_has_not_acted() -> None:
    missing = no_child_yet(_ray_job(None))
    assert missing is not None
    assert "no RayCluster yet" in missing
    assert "KubeRay operator" in missing
    assert "jobDeploymentStatus is empty" in missing
    assert no_child_yet(_ray_job("rj-raycluster-x7", "Initializing")) is None
    assert owner_status(_ray_job("rj-raycluster-x7", "Initializing")) == "Initializing"
    assert owner_status(_ray_job(None)) is None


@pytest.mark.parametrize(
    ("typed", "kind"),
    [
        ("rayjob", "RayJob"),
        ("RayJobs", "RayJob"),
        ("rayjobs.ray.io", "RayJob"),
        ("raycluster", "RayCluster"),
        ("rayclusters.ray.io", "RayCluster"),
    ],
)
def test_ray_kinds_as_kubectl_types_them(typed: str, kind: str) -> None:
    assert canonical_kind(typed) == kind
