"""Parsing Kueue's and kube-scheduler's messages.

Strings marked REAL were written by Kueue v0.17.0 / kube-scheduler 1.36 on the test control
plane (they are also in tests/fixtures/captured). Strings marked HAND-MADE reproduce shapes of
other Kueue releases or branches the cluster does not show, from their source.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from kueue_graphql.kueue.messages import (
    KUEUE_API,
    parse_failed_scheduling,
    parse_kueue_message,
    parse_taint,
    split_flavor_parts,
)
from kueue_graphql.kueue.model import ObjectRef, ReasonSource

C = ReasonSource.CONDITION


def test_exceeds_max_quota_real() -> None:
    # REAL: too-big-3x1cpu
    msg = (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor standard, "
        "previously considered podsets requests (0) + current podset request (3) > maximum "
        "capacity (2)"
    )
    [r] = parse_kueue_message(msg, "Pending", C)
    assert (r.code, r.kueue_reason, r.resource, r.flavor, r.pod_set) == (
        "ExceedsMaxQuota",
        "Pending",
        "cpu",
        "standard",
        "main",
    )
    assert r.number("requested") == 3
    assert r.number("maximumCapacity") == 2
    assert r.number("previouslyConsidered") == 0
    assert r.object == ObjectRef("ResourceFlavor", "standard", None, KUEUE_API)


def test_waiting_for_quota_real() -> None:
    # REAL: over-borrowing-limit
    msg = (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "standard, 1 more needed"
    )
    [r] = parse_kueue_message(msg, "Pending", C)
    assert (r.code, r.resource, r.flavor) == ("WaitingForQuota", "cpu", "standard")
    assert r.number("moreNeeded") == 1


def test_untolerated_taint_real_and_taint_shapes() -> None:
    # REAL: no-spot-toleration (Go prints the corev1.Taint value with %s)
    msg = (
        "couldn't assign flavors to pod set main: untolerated taint "
        "{kueue-graphql.example/spot true NoSchedule <nil>} in flavor spot-tainted"
    )
    [r] = parse_kueue_message(msg, "Pending", C)
    assert (r.code, r.flavor) == ("UntoleratedFlavorTaint", "spot-tainted")
    taint = r.message.removeprefix("untolerated taint ").rsplit(" in flavor ", 1)[0]
    assert parse_taint(taint) == ("kueue-graphql.example/spot", "true", "NoSchedule")
    # HAND-MADE: the other renderings of a taint
    assert parse_taint("a.b/c=d:NoExecute") == ("a.b/c", "d", "NoExecute")
    assert parse_taint("&Taint{Key:k,Value:,Effect:NoSchedule,TimeAdded:<nil>,}") == (
        "k",
        None,
        "NoSchedule",
    )


@pytest.mark.parametrize(
    ("message", "code", "kind", "obj"),
    [
        # REAL (v0.17 workload controller, reason Inadmissible)
        ("LocalQueue lq-stopped is inactive", "LocalQueueInactive", "LocalQueue", "lq-stopped"),
        (
            "ClusterQueue cq-does-not-exist doesn't exist",
            "ClusterQueueNotFound",
            "ClusterQueue",
            "cq-does-not-exist",
        ),
        # HAND-MADE: other branches of the same controller / scheduler
        ("LocalQueue lq doesn't exist", "LocalQueueNotFound", "LocalQueue", "lq"),
        ("LocalQueue lq is stopped", "LocalQueueStopped", "LocalQueue", "lq"),
        ("ClusterQueue cq is inactive", "ClusterQueueInactive", "ClusterQueue", "cq"),
        ("ClusterQueue cq not found", "ClusterQueueNotFound", "ClusterQueue", "cq"),
        ("ClusterQueue cq is stopped", "ClusterQueueStopped", "ClusterQueue", "cq"),
    ],
)
def test_queue_messages(message: str, code: str, kind: str, obj: str) -> None:
    [r] = parse_kueue_message(message, "Inadmissible", C)
    assert r.code == code
    assert r.object == ObjectRef(kind, obj, None, KUEUE_API)


def test_several_pod_sets_and_parts_hand_made() -> None:
    # HAND-MADE: two pod sets ("; "), one with two parts (", ") that themselves contain ", "
    msg = (
        "couldn't assign flavors to pod set driver: flavor on-demand doesn't match node "
        "affinity, insufficient quota for cpu in flavor spot, previously considered podsets "
        "requests (500m) + current podset request (2500m) > maximum capacity (2); couldn't "
        "assign flavors to pod set workers: insufficient unused quota for memory in flavor "
        "spot, 1536Mi more needed, resource example.com/gpu unavailable in ClusterQueue"
    )
    parts = split_flavor_parts(msg)
    assert [ps for ps, _ in parts] == ["driver", "driver", "workers", "workers"]
    reasons = parse_kueue_message(msg, "Pending", C)
    assert [r.code for r in reasons] == [
        "FlavorNodeAffinityMismatch",
        "ExceedsMaxQuota",
        "WaitingForQuota",
        "ResourceNotCovered",
    ]
    # what the Workload needs so far: earlier pod sets (500m) + this one (2500m)
    assert reasons[1].number("requested") == 3
    assert reasons[1].number("podSetRequest") == Decimal("2.5")
    assert reasons[1].number("previouslyConsidered") == Decimal("0.5")
    assert reasons[2].number("moreNeeded") == 1536 * 2**20
    assert reasons[3].resource == "example.com/gpu"


def test_granular_reasons_of_later_releases_hand_made() -> None:
    # HAND-MADE: with UnadmittedWorkloadsObservability on, the reason is granular and the
    # message keeps the flavor-assigner shape.
    msg = (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
        "standard, previously considered podsets requests (0) + current podset request (3) > "
        "maximum capacity (2)"
    )
    [r] = parse_kueue_message(msg, "ExceedsMaxQuota", C)
    assert (r.code, r.kueue_reason) == ("ExceedsMaxQuota", "ExceedsMaxQuota")
    [s] = parse_kueue_message("workload is suspended", "Suspended", C)
    assert (s.code, s.kueue_reason) == ("Suspended", "Suspended")


def test_older_release_shapes_hand_made() -> None:
    # HAND-MADE: shapes of releases before the "previously considered" wording
    [r] = parse_kueue_message(
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
        "default in ClusterQueue, request > maximum capacity (24 > 16)",
        "Pending",
        C,
    )
    assert r.code == "ExceedsMaxQuota"
    assert (r.number("requested"), r.number("maximumCapacity")) == (24, 16)
    [w] = parse_kueue_message(
        "couldn't assign flavors to pod set main: insufficient unused quota in cohort for cpu "
        "in flavor default, 4 more needed",
        "Pending",
        C,
    )
    assert (w.code, w.number("moreNeeded")) == ("WaitingForQuota", 4)


def test_unknown_message_kept_verbatim() -> None:
    [r] = parse_kueue_message("something new happened", "Pending", C)
    assert (r.code, r.message) == ("Unrecognized", "something new happened")
    assert parse_kueue_message("", "Pending", C) == []


def test_failed_scheduling_histogram() -> None:
    # Shape from kube-scheduler 1.36 framework.FitError; see test_diagnose for the REAL one.
    msg = (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node "
        "affinity/selector, 1 node(s) had untolerated taint(s). preemption: 0/3 nodes are "
        "available: 1 No preemption victims found for incoming pod, 2 Preemption is not "
        "helpful for scheduling."
    )
    reasons = parse_failed_scheduling(msg, ReasonSource.EVENT)
    assert [(r.code, r.resource, r.number("nodes")) for r in reasons] == [
        ("InsufficientResource", "cpu", 1),
        ("NodeAffinityMismatch", None, 1),
        ("UntoleratedNodeTaint", None, 1),
    ]
    assert all(r.number("totalNodes") == 3 for r in reasons)
    # REAL (kube-scheduler 1.36 while the fake nodes still had their not-ready taint)
    [taint] = parse_failed_scheduling(
        "0/2 nodes are available: 2 node(s) had untolerated taint(s). no new claims to "
        "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
        "scheduling.",
        ReasonSource.CONDITION,
    )
    assert (taint.code, taint.message, taint.number("nodes")) == (
        "UntoleratedNodeTaint",
        "2 node(s) had untolerated taint(s)",
        2,
    )
    [other] = parse_failed_scheduling("no nodes available to schedule pods", ReasonSource.EVENT)
    assert other.code == "SchedulerFilter"
