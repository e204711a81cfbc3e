"""The value model of Kueue's rules: objects as read (or markers where they could not be), reasons
with their numbers, verdicts and quota lines.

Inputs are Kubernetes objects exactly as the API server returns them (JSON as plain dicts), each
wrapped in an Observed value: the object, or a marker saying the caller may not read it
(Forbidden) or it does not exist / is not served (Absent). Nothing here guesses what lies behind
a Forbidden marker.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias, TypeVar

__all__ = [
    "Absent",
    "BindingLimit",
    "Failed",
    "Forbidden",
    "KubeObject",
    "Number",
    "ObjectRef",
    "Observed",
    "QuotaLine",
    "QuotaReport",
    "Reason",
    "ReasonSource",
    "Verdict",
    "Visibility",
    "is_known",
    "known",
]

KubeObject: TypeAlias = Mapping[str, Any]


@dataclass(frozen=True)
class Forbidden:
    """The caller may not read this object (the API server answered 403)."""

    detail: str = ""


@dataclass(frozen=True)
class Absent:
    """The object does not exist (404), or the API serving it is not installed."""

    detail: str = ""


@dataclass(frozen=True)
class Failed:
    """The API that serves it answered with an error (e.g. Kueue's visibility server failed)."""

    detail: str = ""


T = TypeVar("T")


Observed: TypeAlias = T | Forbidden | Absent


def is_known(value: object) -> bool:
    """True when an Observed value holds the object itself rather than a marker."""
    return not isinstance(value, Forbidden | Absent)


def known(value: Observed[T]) -> T | None:
    """The object an Observed value holds, None for a marker."""
    return None if isinstance(value, Forbidden | Absent) else value


class ReasonSource(enum.Enum):
    CONDITION = "CONDITION"
    EVENT = "EVENT"
    OBJECT = "OBJECT"


@dataclass(frozen=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str | None = None
    api_version: str | None = None


@dataclass(frozen=True)
class Number:
    """A named quantity read from a message or an object, e.g. maximumCapacity = 2."""

    name: str
    value: Decimal
    text: str


@dataclass(frozen=True)
class Reason:
    """One structured cause.

    `code` is a normalized code (the granular reason names of later Kueue releases where one
    applies, e.g. ExceedsMaxQuota, or a kube-scheduler cause such as InsufficientResource);
    `kueue_reason` is what was actually written (e.g. the legacy `Pending`).
    """

    code: str
    message: str
    source: ReasonSource
    kueue_reason: str | None = None
    resource: str | None = None
    flavor: str | None = None
    pod_set: str | None = None
    object: ObjectRef | None = None
    numbers: tuple[Number, ...] = ()

    def number(self, name: str) -> Decimal | None:
        for n in self.numbers:
            if n.name == name:
                return n.value
        return None


class Visibility(enum.Enum):
    """Whether a derived section could be computed from what the caller may read."""

    AVAILABLE = "AVAILABLE"
    FORBIDDEN = "FORBIDDEN"
    ABSENT = "ABSENT"
    NOT_APPLICABLE = "NOT_APPLICABLE"
    UNAVAILABLE = "UNAVAILABLE"
    """The API that computes it failed: not reported, rather than guessed absent."""


class Verdict(enum.Enum):
    NEVER_FITS = "NEVER_FITS"
    QUEUE_INACTIVE = "QUEUE_INACTIVE"
    """The quota would do, but the LocalQueue or ClusterQueue admits nothing now (inactive,
    stopped): no FITS_NOW / MUST_WAIT while that lasts."""
    FITS_NOW = "FITS_NOW"
    MUST_WAIT = "MUST_WAIT"
    UNKNOWN = "UNKNOWN"
    """Cohort members the caller may not read decide it."""


@dataclass(frozen=True)
class BindingLimit:
    """A limit that caps what a ClusterQueue can get, where it sits in the cohort tree.

    `limit` is `lendingLimit` (a member keeps part of its quota from the cohort),
    `borrowingLimit` (the queue's own, or a Cohort's towards its parent) or `nominalQuota` (a
    Cohort's own quota: the whole tree holds no more). `name` is None when the caller may not
    read the object (the disclosure policy gives figures, never other tenants' names).
    """

    kind: str
    """ClusterQueue or Cohort."""
    name: str | None
    limit: str
    value: Decimal
    withheld: Decimal | None = None
    """lendingLimit: how much of the member's quota it keeps from the request (never lent, or
    unused now and not lent); None for the other limits."""


@dataclass(frozen=True)
class QuotaLine:
    """One (flavor, resource) the workload needs, against its ClusterQueue and cohort.

    Amounts are exact. `None` means "not limited" for limits, and "could not be computed
    from what the caller may read" for cohort figures.
    """

    flavor: str
    resource: str
    requested: Decimal
    nominal_quota: Decimal
    borrowing_limit: Decimal | None
    lending_limit: Decimal | None
    reserved: Decimal
    used: Decimal
    borrowed: Decimal
    cohort: str | None
    cohort_can_lend: Decimal | None
    maximum_capacity: Decimal | None
    available_now: Decimal | None
    verdict: Verdict
    limited_by: str | None = None
    """NOMINAL_QUOTA, BORROWING_LIMIT, COHORT or NOT_IN_CLUSTER_QUEUE when it does not fit."""
    counts_this_workload: bool = False
    """The Workload holds a reservation, so `reserved` already includes its own request."""
    binding_limits: tuple[BindingLimit, ...] = ()
    """Which limits, and where in the tree, make it not fit (NEVER_FITS / MUST_WAIT); empty
    when it fits, when the cohort could not be read, or when only others' usage is in the way."""


@dataclass(frozen=True)
class QuotaReport:
    visibility: Visibility
    cluster_queue: str | None = None
    lines: tuple[QuotaLine, ...] = ()
    verdict: Verdict | None = None
    """Best flavor per resource group, worst across groups."""
    detail: str = ""
