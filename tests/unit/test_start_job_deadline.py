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
    est = start_estimate([["standard"]], {CPU: Decimal(1)}, [hidden], holders_complete=True)
    assert est.releases_by is None
    assert "you may not read Job j" in est.explanation
