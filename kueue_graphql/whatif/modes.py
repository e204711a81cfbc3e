"""Kueue's granular assignment mode: how a flavor can take a request, and which flavor wins.

A port of the mode types of Kueue v0.17.0 pkg/scheduler/flavorassigner/flavorassigner.go:

- `preemptionMode` (noFit < noPreemptionCandidates < preempt < reclaim < fit) and, for the
  Workload's Assignment, `FlavorAssignmentMode` (NoFit, Preempt, Fit: `flavorAssignmentMode`);
- `borrowingLevel`: 0 when the ClusterQueue's own quota suffices, else the height of the lowest
  cohort subtree whose quota takes the request (whatif.borrowing); lower is `betterThan`;
- `granularMode` = (preemptionMode, borrowingLevel), from `worstGranularMode` (noFit, MaxInt) to
  `bestGranularMode` (fit, 0);
- `isPreferred`: `flavorFungibility.preference` BorrowingOverPreemption (the default) ranks the
  preemption mode first, then the lower borrowing level; PreemptionOverBorrowing the lower
  borrowing level first, then the preemption mode; a noFit mode is never preferred;
- `shouldTryNextFlavor`: noFit and noPreemptionCandidates always go on; a mode that found
  preemption targets goes on under `whenCanPreempt: TryNextFlavor`; a mode that borrows (level
  above 0) goes on under `whenCanBorrow: TryNextFlavor`, whatever `whenCanPreempt` says.

The defaults are the CRD's (v1beta2 FlavorFungibility): whenCanBorrow MayStopSearch,
whenCanPreempt TryNextFlavor, no preference.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

__all__ = [
    "BEST",
    "WORST",
    "GranularMode",
    "PreemptionMode",
    "is_preferred",
    "should_try_next_flavor",
]

TRY_NEXT_FLAVOR = "TryNextFlavor"


class PreemptionMode(IntEnum):
    """flavorassigner.go `preemptionMode`, ordered from the least to the most preferred."""

    NO_FIT = 0
    NO_PREEMPTION_CANDIDATES = 1
    """Preemption could make room, but Kueue's simulation found no target."""
    PREEMPT = 2
    """Targets found in the ClusterQueue itself."""
    RECLAIM = 3
    """Targets found only in other ClusterQueues of the cohort."""
    FIT = 4

    def assignment_mode(self) -> str:
        """`flavorAssignmentMode`: the mode Kueue shows per flavor (NoFit, Preempt, Fit)."""
        if self is PreemptionMode.FIT:
            return "Fit"
        return "NoFit" if self is PreemptionMode.NO_FIT else "Preempt"


@dataclass(frozen=True)
class GranularMode:
    """flavorassigner.go `granularMode`."""

    preemption_mode: PreemptionMode
    borrowing_level: int
    """`borrowingLevel`: 0 no borrowing, else the height of the subtree the quota comes from."""

    def is_preempt_mode(self) -> bool:
        """`isPreemptMode`: preemption targets were found."""
        return self.preemption_mode in (PreemptionMode.PREEMPT, PreemptionMode.RECLAIM)


WORST = GranularMode(PreemptionMode.NO_FIT, sys.maxsize)
"""`worstGranularMode` (borrowing level math.MaxInt)."""
BEST = GranularMode(PreemptionMode.FIT, 0)
"""`bestGranularMode`."""


def is_preferred(a: GranularMode, b: GranularMode, fungibility: Mapping[str, Any]) -> bool:
    """`isPreferred`: mode `a` is better than `b` under the ClusterQueue's flavorFungibility."""
    if a.preemption_mode is PreemptionMode.NO_FIT:
        return False
    if b.preemption_mode is PreemptionMode.NO_FIT:
        return True
    if fungibility.get("preference") == "PreemptionOverBorrowing":
        if a.borrowing_level != b.borrowing_level:
            return a.borrowing_level < b.borrowing_level
        return a.preemption_mode > b.preemption_mode
    # BorrowingOverPreemption, explicit or by default.
    if a.preemption_mode != b.preemption_mode:
        return a.preemption_mode > b.preemption_mode
    return a.borrowing_level < b.borrowing_level


def should_try_next_flavor(mode: GranularMode, fungibility: Mapping[str, Any]) -> bool:
    """`shouldTryNextFlavor`: go on to the group's next flavor after one in this mode."""
    if mode.preemption_mode in (PreemptionMode.NO_FIT, PreemptionMode.NO_PREEMPTION_CANDIDATES):
        return True
    if mode.is_preempt_mode() and fungibility.get("whenCanPreempt", TRY_NEXT_FLAVOR) == (
        TRY_NEXT_FLAVOR
    ):
        return True
    return mode.borrowing_level != 0 and fungibility.get("whenCanBorrow") == TRY_NEXT_FLAVOR
