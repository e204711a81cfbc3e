"""Issue 21 (stale reasons, queueing strategy) on objects captured from the real Kueue v0.17.0.

tests/fixtures/issue21/: namespace stale-repro, StrictFIFO ClusterQueue stale-repro-cq (2 CPU)
held by `holder` (2 CPU); `head` (2 CPU) waits for quota, `behind` (1 CPU) waits behind it.
`local-queue-stopped.json`: LocalQueue lq stopped (stopPolicy Hold) after `head` got its
"insufficient unused quota" Pending event; `local-queue-resumed.json`: lq resumed again, with the
visibility API's pending list. Captured with kubectl get -o json (managedFields dropped).
Only `requeueState` is added by hand below (its shape from Kueue v0.17.0 workload_types.go).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from kueue_graphql.diagnosis import Absent, DiagnosisInput, Forbidden, diagnose
from kueue_graphql.kueue.pending_entry import own_entry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "issue21"
INSUFFICIENT = "insufficient unused quota for cpu in flavor stale-repro-flavor, 2 more needed"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def _input(data: dict[str, Any], name: str, *, cq_readable: bool = True) -> DiagnosisInput:
    position: Any = Absent("the visibility API answers NotFound for a stopped LocalQueue")
    if data["pendingWorkloads"] is not None:
        found = own_entry(data["pendingWorkloads"]["items"], "stale-repro", name)
        assert found is not None
        position = dict(found.item)
        if found.head_of_cluster_queue:
            position["headOfClusterQueue"] = found.head_of_cluster_queue
    return DiagnosisInput(
        workload=data["workloads"][name],
        events=data["events"],
        pods=[],
        local_queue=data["localQueue"],
        cluster_queue=data["clusterQueue"] if cq_readable else Forbidden("may not"),
        queue_position=position,
    )


def test_the_real_stale_pending_event_is_there() -> None:
    # The evidence the class is about: Kueue's latest Pending event of `head` is the quota
    # reason, written before the stop, while the condition says the LocalQueue is inactive.
    data = _load("local-queue-stopped")
    pending = [
        e
        for e in data["events"]
        if e["involvedObject"]["name"] == "head" and e["reason"] == "Pending"
    ]
    assert INSUFFICIENT in pending[-1]["message"]
    stop = data["localQueue"]["status"]["conditions"][0]
    assert (stop["reason"], stop["status"]) == ("Stopped", "False")
    assert pending[-1]["lastTimestamp"] < stop["lastTransitionTime"]


def test_a_quota_reason_from_before_the_stop_is_earlier_and_gives_no_step() -> None:
    d = diagnose(_input(_load("local-queue-stopped"), "head"))
    codes = [r.code for r in d.reasons]
    assert "WaitingForQuota" not in codes
    assert codes[0] == "LocalQueueInactive"
    assert not [s for s in d.next_steps if s.startswith("Wait:")]
    assert any("LocalQueue lq is stopped" in s for s in d.next_steps)
    assert f"[earlier, no longer current: {INSUFFICIENT} (written " in d.summary
    stopped_at = _load("local-queue-stopped")["localQueue"]["status"]["conditions"][0]
    assert f"before LocalQueue lq was stopped at {stopped_at['lastTransitionTime']})" in d.summary


def test_after_the_resume_the_quota_reason_is_current_again() -> None:
    d = diagnose(_input(_load("local-queue-resumed"), "head"))
    assert [r.code for r in d.reasons] == ["WaitingForQuota"]
    assert "earlier" not in d.summary
    assert any(s.startswith("Wait: 2 more cpu") for s in d.next_steps)


def test_behind_the_head_of_a_strict_fifo_queue() -> None:
    d = diagnose(_input(_load("local-queue-resumed"), "behind"))
    # Kueue's "LocalQueue lq is inactive" (written at the first stop) outlived the resume.
    assert [r.code for r in d.reasons] == ["BehindQueueHead"]
    behind = d.reasons[0]
    assert behind.number("aheadInClusterQueue") == 1
    assert d.blocking_object is not None
    assert (d.blocking_object.kind, d.blocking_object.name) == ("Workload", "head")
    assert "at the head: Workload head of the same LocalQueue lq" in d.summary
    assert "its quota verdict: MUST_WAIT (1 more cpu in flavor stale-repro-flavor)" in d.summary
    assert "[earlier, no longer current: LocalQueue lq is inactive" in d.summary
    assert "before LocalQueue lq became active at" in d.summary
    assert d.next_steps[0].startswith("Wait: 1 Workload(s) are ahead in ClusterQueue")
    assert not [s for s in d.next_steps if "resume" in s]


def test_a_head_of_another_namespace_is_counted_never_named() -> None:
    data = copy.deepcopy(_load("local-queue-resumed"))
    # The same list as Kueue v0.17 answers it for a same-named LocalQueue of another
    # namespace (kueue#10575): the head's entry is not the caller's.
    data["pendingWorkloads"]["items"][0]["metadata"]["namespace"] = "someone-else"
    d = diagnose(_input(data, "behind"))
    assert "a Workload of another LocalQueue" in d.summary
    assert "head" not in {r.object.name for r in d.reasons if r.object is not None}
    assert d.blocking_object is not None
    assert d.blocking_object.kind == "ClusterQueue"


def test_a_tenant_without_the_cluster_queue_still_gets_position_and_a_step() -> None:
    d = diagnose(_input(_load("local-queue-resumed"), "behind", cq_readable=False))
    assert [r.code for r in d.reasons] == ["BehindQueueHead"]
    assert "queueingStrategy is hidden from you" in d.summary
    assert "its quota verdict is not known to you" in d.summary
    assert d.next_steps[0].startswith("Wait: 1 Workload(s) are ahead")


def test_requeue_state_is_explained() -> None:
    data = copy.deepcopy(_load("local-queue-resumed"))
    data["workloads"]["head"]["status"]["requeueState"] = {
        "count": 3,
        "requeueAt": "2026-12-05T01:00:00Z",
    }
    d = diagnose(_input(data, "head"))
    requeued = [r for r in d.reasons if r.code == "RequeueBackoff"]
    assert len(requeued) == 1
    assert "requeued the Workload 3 time(s)" in requeued[0].message
    assert "until requeueAt 2026-12-05T01:00:00Z" in requeued[0].message
    assert any("backoff in status.requeueState" in s for s in d.next_steps)
    assert "Quota is free now" not in " ".join(d.next_steps)
