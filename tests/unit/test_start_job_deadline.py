"""The start estimate from a Job's activeDeadlineSeconds (pure): the Job as the caller read it,
or none and why."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from kueue_graphql.diagnosis.start import Holder, holder_deadline, job_deadline, start_estimate

T0 = datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)
CPU = ("standard", "cpu")


def test_job_deadline_reads_start_time_and_active_deadline() -> None:
    job = {"spec": {"activeDeadlineSeconds": 7200}, "status": {"startTime": "2026-12-03T10:00:00Z"}}
    assert job_deadline(job) == (T0, 7200)
    assert job_deadline({"spec": {}, "status": {}}) == (None, None)
    assert job_deadline(None) == (None, None)
    assert job_deadline({"spec": {"activeDeadlineSeconds": True}}) == (None, None)
    started, seconds = job_deadline(job)
    at, basis = holder_deadline(None, None, job_started_at=started, active_deadline_seconds=seconds)
    assert at == datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)
    assert "activeDeadlineSeconds 7200 since it started at 2026-12-03T10:00:00Z" in basis


def test_a_job_that_cannot_be_read_is_an_unknown_basis() -> None:
    hidden = Holder({CPU: Decimal(1)}, None, "", unknown_because="you may not read Job j")
    est = start_estimate([["standard"]], {CPU: Decimal(1)}, [hidden], holders_complete=True, now=T0)
    assert est.releases_by is None
    assert "you may not read Job j" in est.explanation


def _admitted_workload(conditions: list[dict[str, str]]) -> dict[str, object]:
    return {
        "metadata": {"name": "w", "namespace": "team-a"},
        "spec": {"maximumExecutionTimeSeconds": 60},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "standard"}, "resourceUsage": {"cpu": "1"}}
                ],
            },
            "conditions": [
                {
                    "type": "Admitted",
                    "status": "True",
                    "lastTransitionTime": "2026-12-03T09:00:00Z",
                },
                *conditions,
            ],
        },
    }


def test_an_overrun_holder_says_why_it_still_holds_quota() -> None:
    # Past its maximumExecutionTimeSeconds (09:01), Kueue has set DeactivationTarget; its Job
    # has set FailureTarget: whichever the objects say is named, with its reason.
    from kueue_graphql.lookups.ahead import _holder

    deactivating = _admitted_workload(
        [{"type": "DeactivationTarget", "status": "True", "reason": "MaximumExecutionTimeExceeded",
          "lastTransitionTime": "2026-12-03T09:01:00Z"}]
    )  # fmt: skip
    holder = _holder(deactivating)
    assert holder.releases_by == datetime(2026, 12, 3, 9, 1, 0, tzinfo=UTC)
    assert "DeactivationTarget (MaximumExecutionTimeExceeded)" in holder.holds_because
    job = {"status": {"conditions": [
        {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded",
         "lastTransitionTime": "2026-12-03T09:01:00Z"}]}}  # fmt: skip
    assert (
        "its Job set FailureTarget (DeadlineExceeded)"
        in _holder(_admitted_workload([]), job).holds_because
    )
    assert "neither its Job nor Kueue" in _holder(_admitted_workload([])).holds_because
    est = start_estimate([["standard"]], {CPU: Decimal(1)}, [holder], holders_complete=True, now=T0)
    assert est.releases_by is None
    assert "MaximumExecutionTimeExceeded" in est.explanation
