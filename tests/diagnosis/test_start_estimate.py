"""The earliest-start estimate: a time only with its basis, else None with the reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from kueue_graphql.diagnosis.start import Holder, holder_deadline, start_estimate

T0 = datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)
CPU = ("standard", "cpu")


def _holder(cpu: int, minutes: int | None, flavor: str = "standard") -> Holder:
    at = None if minutes is None else T0 + timedelta(minutes=minutes)
    return Holder({(flavor, "cpu"): Decimal(cpu)}, at, f"ends {minutes}m")


def test_deadline_from_maximum_execution_time_minus_time_used() -> None:
    at, basis = holder_deadline(T0, 600, past_execution_seconds=100)
    assert at == T0 + timedelta(seconds=500)
    assert "maximumExecutionTimeSeconds 600" in basis
    assert "100 s already used" in basis


def test_the_earlier_of_the_two_limits_wins() -> None:
    at, basis = holder_deadline(T0, 3600, job_started_at=T0, active_deadline_seconds=60)
    assert at == T0 + timedelta(seconds=60)
    assert "activeDeadlineSeconds 60" in basis


def test_no_limit_no_deadline() -> None:
    assert holder_deadline(T0, None) == (None, "")


def test_released_by_the_holder_that_covers_the_shortfall() -> None:
    holders = [_holder(1, 30), _holder(1, 10), _holder(2, 20)]
    est = start_estimate([["standard"]], {CPU: Decimal(2)}, holders, holders_complete=True, now=T0)
    # In deadline order: 1 CPU at 10m, then 2 more at 20m: 2 CPU are free by 20m.
    assert est.releases_by == T0 + timedelta(minutes=20)
    assert "ends 10m; ends 20m" in est.explanation
    assert "at the latest" in est.explanation


def test_holder_without_limit_gives_no_number() -> None:
    holders = [_holder(1, 10), _holder(4, None)]
    est = start_estimate([["standard"]], {CPU: Decimal(2)}, holders, holders_complete=True, now=T0)
    assert est.releases_by is None
    assert "neither maximumExecutionTimeSeconds" in est.explanation


def test_unreadable_holders_give_no_number() -> None:
    est = start_estimate(
        [["standard"]],
        {CPU: Decimal(1)},
        [_holder(1, 10)],
        holders_complete=False,
        incomplete_because="2 admitted Workloads of other namespaces could not be read",
        now=T0,
    )
    assert est.releases_by is None
    assert "other namespaces" in est.explanation


def test_earliest_flavor_of_a_group_latest_group() -> None:
    holders = [_holder(1, 50), _holder(1, 5, flavor="spare"), _holder(1, 30, flavor="gpu")]
    missing = {CPU: Decimal(1), ("spare", "cpu"): Decimal(1), ("gpu", "example.com/gpu"): 0}
    missing[("gpu", "cpu")] = Decimal(1)
    est = start_estimate(
        [["standard", "spare"], ["gpu"]], missing, holders, holders_complete=True, now=T0
    )
    # Group 1: spare frees by 5m (earlier than standard's 50m); group 2: gpu by 30m.
    assert est.releases_by == T0 + timedelta(minutes=30)


def test_fits_now_needs_no_estimate() -> None:
    est = start_estimate([["standard"]], {CPU: Decimal(0)}, [], holders_complete=True, now=T0)
    assert est.releases_by is None
    assert "enough quota is free now" in est.explanation


def test_workloads_ahead_are_mentioned() -> None:
    est = start_estimate(
        [["standard"]], {CPU: Decimal(1)}, [_holder(1, 10)], holders_complete=True, ahead=3, now=T0
    )
    assert "the 3 Workload(s) ahead" in est.explanation


# Issue 21, "Time": a holder past its deadline (its Job's activeDeadlineSeconds passed, but its
# Pods have not terminated: Job condition FailureTarget) still holds quota. The estimate must
# not answer a moment in the past, for every shape of the class: the overrun holder alone, an
# overrun one plus a timed one that covers the need, plus one that does not.


def _overrun(cpu: int, minutes_ago: int) -> Holder:
    return Holder(
        {CPU: Decimal(cpu)},
        T0 - timedelta(minutes=minutes_ago),
        f"one of yours: its Job's activeDeadlineSeconds 60 (ended {minutes_ago}m ago)",
        holds_because="its Job set FailureTarget (DeadlineExceeded) at 2026-12-03T09:50:00Z: "
        "its Pods have not all terminated",
    )


def test_an_overrun_holder_gives_no_time_in_the_past() -> None:
    est = start_estimate(
        [["standard"]], {CPU: Decimal(1)}, [_overrun(1, 5)], holders_complete=True, now=T0
    )
    assert est.releases_by is None
    assert "past their deadline and still hold quota" in est.explanation
    assert "FailureTarget (DeadlineExceeded)" in est.explanation
    assert "ended at 2026-12-03T09:55:00Z" in est.explanation


def test_a_timed_holder_still_answers_beside_an_overrun_one() -> None:
    holders = [_overrun(1, 5), _holder(2, 20)]
    est = start_estimate([["standard"]], {CPU: Decimal(2)}, holders, holders_complete=True, now=T0)
    # The overrun holder's 1 CPU has no date; the timed holder's 2 CPU cover the need by 20m.
    assert est.releases_by == T0 + timedelta(minutes=20)
    assert "ends 20m" in est.explanation


def test_a_deadline_exactly_now_is_overrun() -> None:
    est = start_estimate(
        [["standard"]], {CPU: Decimal(1)}, [_holder(1, 0)], holders_complete=True, now=T0
    )
    assert est.releases_by is None


def test_the_answer_is_never_before_now() -> None:
    holders = [_overrun(1, 30), _overrun(1, 1), _holder(1, 10), _holder(1, 40)]
    for need in range(1, 5):
        est = start_estimate(
            [["standard"]], {CPU: Decimal(need)}, holders, holders_complete=True, now=T0
        )
        assert est.releases_by is None or est.releases_by > T0, (need, est)
