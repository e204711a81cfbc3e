"""When could a pending Workload start? Only with a basis, else no number.

The one time the objects give is when quota must be free again: an admitted Workload with
`spec.maximumExecutionTimeSeconds` is deactivated by Kueue once it has run that long since
admission (minus `status.accumulatedPastExecutionTimeSeconds`), and a Job with
`spec.activeDeadlineSeconds` is failed that long after its `status.startTime`; either way its
quota is released by then at the latest. Nothing bounds how early they may finish, so the
answer is "quota for it is released by T at the latest" (Workloads may finish sooner; Workloads
ahead in the queue may take the quota first), and `None` with the reason when some holder
without such a limit, or one the caller could not read, stands in the way.

Per resource group, Kueue may assign any of its flavors, so the time is the earliest over the
group's flavors at which every resource of the group is covered in that flavor, and the latest
over the groups.

A deadline is never answered in the past. A holder whose deadline has passed ("overrun") still
holds its quota until its Pods have terminated (the Job controller fails an overrun Job, Kueue
deactivates a Workload past its maximum execution time, and the quota is released only when
the Pods are gone): it counts as a holder without a time, named as overrun with why it still
holds quota.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from kueue_graphql.kueue.exact import ZERO, exact_arithmetic

__all__ = ["Holder", "StartEstimate", "holder_deadline", "job_deadline", "start_estimate"]

FlavorResource = tuple[str, str]


@dataclass(frozen=True)
class Holder:
    """An admitted Workload's reservation and the latest time it releases it (None: no limit)."""

    reserved: Mapping[FlavorResource, Decimal]
    releases_by: datetime | None
    basis: str
    """E.g. "maximumExecutionTimeSeconds 600 since admission at 2026-12-03T10:00:00Z"."""
    unknown_because: str = ""
    """Without a deadline: why its basis is unknown (e.g. its Job could not be read)."""
    holds_because: str = ""
    """Why it may still hold quota once its deadline has passed, as its objects say (e.g. "its
    Job failed with DeadlineExceeded and its Pods are terminating")."""


@dataclass(frozen=True)
class StartEstimate:
    releases_by: datetime | None
    """Enough quota is released by then at the latest; None when no basis exists."""
    explanation: str


def holder_deadline(
    admitted_at: datetime | None,
    maximum_execution_seconds: int | None,
    past_execution_seconds: int = 0,
    job_started_at: datetime | None = None,
    active_deadline_seconds: int | None = None,
) -> tuple[datetime | None, str]:
    """The earlier of the two limits that apply, and its basis in words."""
    options: list[tuple[datetime, str]] = []
    if admitted_at is not None and maximum_execution_seconds is not None:
        left = max(0, maximum_execution_seconds - past_execution_seconds)
        options.append(
            (
                admitted_at + timedelta(seconds=left),
                f"maximumExecutionTimeSeconds {maximum_execution_seconds} since its admission at "
                f"{_iso(admitted_at)}"
                + (f" ({past_execution_seconds} s already used)" if past_execution_seconds else ""),
            )
        )
    if job_started_at is not None and active_deadline_seconds is not None:
        options.append(
            (
                job_started_at + timedelta(seconds=active_deadline_seconds),
                f"its Job's activeDeadlineSeconds {active_deadline_seconds} since it started at "
                f"{_iso(job_started_at)}",
            )
        )
    if not options:
        return None, ""
    return min(options)


def job_deadline(job: Mapping[str, object] | None) -> tuple[datetime | None, int | None]:
    """A batch/v1 Job's (status.startTime, spec.activeDeadlineSeconds); None where absent.
    The Job controller fails the Job that long after startTime (reset when it is resumed)."""
    if job is None:
        return None, None
    spec = job.get("spec")
    status = job.get("status")
    seconds = spec.get("activeDeadlineSeconds") if isinstance(spec, Mapping) else None
    raw = status.get("startTime") if isinstance(status, Mapping) else None
    started: datetime | None = None
    if isinstance(raw, str) and raw:
        try:
            started = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            started = None
    valid = isinstance(seconds, int) and not isinstance(seconds, bool) and seconds >= 0
    return started, seconds if valid else None


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@exact_arithmetic
def _time_for_flavor(
    flavor: str,
    missing: Mapping[str, Decimal],
    holders: Sequence[Holder],
    now: datetime,
) -> tuple[datetime | None, list[Holder], str]:
    """The earliest time the flavor has `missing` of every resource freed, from holders with
    a deadline still ahead (in deadline order); else why not."""
    need = {res: value for res, value in missing.items() if value > 0}
    if not need:
        return None, [], "fits now"

    def holds(holder: Holder) -> bool:
        return any(holder.reserved.get((flavor, res), ZERO) > 0 for res in need)

    released = dict.fromkeys(need, ZERO)
    used: list[Holder] = []
    ahead = [h for h in holders if h.releases_by is not None and h.releases_by > now]
    for holder in sorted(ahead, key=_deadline):
        if not holds(holder):
            continue
        used.append(holder)
        for res in need:
            released[res] += holder.reserved.get((flavor, res), ZERO)
        if all(released[res] >= need[res] for res in need):
            return holder.releases_by, used, ""
    overrun = sorted(
        (h for h in holders if h.releases_by is not None and h.releases_by <= now and holds(h)),
        key=_deadline,
    )
    untimed = [h for h in holders if h.releases_by is None and holds(h)]
    reasons = []
    if overrun:
        reasons.append(_overrun_reason(flavor, overrun))
    if untimed:
        unknown = sorted({h.unknown_because for h in untimed if h.unknown_because})
        reasons.append(
            f"{len(untimed)} admitted Workload(s) holding flavor {flavor} have neither "
            "maximumExecutionTimeSeconds nor a Job activeDeadlineSeconds"
            + (f" that can be read ({'; '.join(unknown)})" if unknown else "")
        )
    if reasons:
        return None, used, "; ".join(reasons)
    return None, used, f"the admitted Workloads' quota in flavor {flavor} would not be enough"


def _deadline(holder: Holder) -> datetime:
    assert holder.releases_by is not None
    return holder.releases_by


def _overrun_reason(flavor: str, overrun: Sequence[Holder]) -> str:
    holding = "; ".join(
        f"{h.basis or 'its run-time limit'} ended at {_iso(_deadline(h))}"
        + (f", and {h.holds_because}" if h.holds_because else "")
        for h in overrun
    )
    return (
        f"{len(overrun)} admitted Workload(s) holding flavor {flavor} are past their deadline "
        f"and still hold quota ({holding}); Kueue releases it once their Pods have terminated, "
        "which no object dates"
    )


def start_estimate(
    groups: Sequence[Sequence[str]],
    missing: Mapping[FlavorResource, Decimal],
    holders: Sequence[Holder],
    *,
    holders_complete: bool,
    incomplete_because: str = "",
    ahead: int | None = None,
    now: datetime,
) -> StartEstimate:
    """`groups`: the flavors of each resource group the Workload needs, in order; `missing`:
    per (flavor, resource), how much more must be free than is free now (0 or absent: enough).
    `holders_complete`: every admitted Workload of the ClusterQueue is among `holders`.
    `now`: deadlines at or before it are overrun, never answered."""
    if not holders_complete:
        return StartEstimate(None, f"no estimate: {incomplete_because}")
    latest: datetime | None = None
    bases: list[str] = []
    for flavors in groups:
        best: tuple[datetime, list[Holder]] | None = None
        reasons: list[str] = []
        for flavor in flavors:
            need = {res: v for (f, res), v in missing.items() if f == flavor}
            if not any(v > 0 for v in need.values()):
                best = None
                reasons = []
                break  # this group fits now in this flavor
            at, used, why = _time_for_flavor(flavor, need, holders, now)
            if at is not None and (best is None or at < best[0]):
                best = (at, used)
            elif at is None:
                reasons.append(why)
        else:
            if best is None:
                return StartEstimate(None, "no estimate: " + "; ".join(reasons))
        if best is not None:
            at, used = best
            bases.extend(h.basis for h in used)
            latest = at if latest is None or at > latest else latest
    if latest is None:
        return StartEstimate(None, "no estimate needed: enough quota is free now")
    text = (
        f"quota for it is released by {_iso(latest)} at the latest, because the admitted "
        f"Workloads holding it end by then ({'; '.join(dict.fromkeys(bases))}); it may start "
        "sooner if they finish earlier"
    )
    if ahead:
        text += f", or later if the {ahead} Workload(s) ahead of it take that quota first"
    return StartEstimate(latest, text)
