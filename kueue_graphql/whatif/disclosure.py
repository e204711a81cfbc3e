"""whatIf's answer without quota figures, for callers the disclosure policy shows no numbers:
Kueue's messages with every figure cut off, reasons without their numbers, and no borrowing
level (it tells how far up the cohort tree quota is left)."""

from __future__ import annotations

import re
from dataclasses import replace

from kueue_graphql.kueue.model import QuotaLine, Reason
from kueue_graphql.whatif.model import PodSetOutcome

__all__ = [
    "line_without_names",
    "outcome_without_numbers",
    "reason_without_numbers",
    "strip_numbers",
]


_NUMBERS = (
    re.compile(
        r", previously considered podsets requests \([^)]*\) \+ current podset request "
        r"\([^)]*\) > maximum capacity \([^)]*\)"
    ),
    re.compile(r", [^,;]* more needed"),
)


def strip_numbers(message: str) -> str:
    """Kueue's message with every quota figure cut off (numbers not disclosed)."""
    for pattern in _NUMBERS:
        message = pattern.sub("", message)
    return message


def outcome_without_numbers(outcome: PodSetOutcome) -> PodSetOutcome:
    groups = tuple(
        replace(
            g,
            borrowing_level=None,
            attempts=tuple(
                replace(a, reasons=tuple(strip_numbers(r) for r in a.reasons), borrowing_level=None)
                for a in g.attempts
            ),
        )
        for g in outcome.groups
    )
    return replace(outcome, groups=groups)


def reason_without_numbers(reason: Reason) -> Reason:
    return replace(reason, message=strip_numbers(reason.message), numbers=())


def line_without_names(line: QuotaLine, cluster_queue: str) -> QuotaLine:
    """The line with the names of the other objects whose limits bind withheld: only the
    ClusterQueue itself and its own cohort are named (the caller knows them already)."""
    own = {("ClusterQueue", cluster_queue), ("Cohort", line.cohort)}
    limits = tuple(
        b if (b.kind, b.name) in own else replace(b, name=None) for b in line.binding_limits
    )
    return replace(line, binding_limits=limits)
