"""Words for a limit set elsewhere in the cohort tree (`QuotaLine.binding_limits`): what it
does to the request and the lever to pull there. Shared by the diagnosis and whatIf, so both
name the same object and the same figure."""

from __future__ import annotations

from collections.abc import Iterator

from kueue_graphql.kueue.exact import ZERO, format_quantity
from kueue_graphql.kueue.model import BindingLimit, QuotaLine, Verdict

__all__ = ["elsewhere", "limit_clause", "limit_levers"]


def elsewhere(line: QuotaLine | None) -> tuple[BindingLimit, ...]:
    """The limits that bind outside the queue itself (limitedBy COHORT), if any."""
    if line is None or line.limited_by != "COHORT":
        return ()
    return line.binding_limits


def _who(b: BindingLimit, cohort: str | None) -> str:
    if b.name is not None:
        return f"{b.kind} {b.name}"
    if b.kind == "ClusterQueue":
        return f"another ClusterQueue of cohort {cohort} (name not disclosed)"
    return f"a Cohort above {cohort} (name not disclosed)"


def _effect(b: BindingLimit, line: QuotaLine) -> str:
    """What the limit does, as a verb phrase whose subject is the object that sets it."""
    res = line.resource
    value = f"{format_quantity(b.value, res)} {res}"
    if b.limit == "lendingLimit":
        kept = f"{format_quantity(b.withheld if b.withheld is not None else ZERO, res)} {res}"
        if line.verdict is Verdict.MUST_WAIT:
            return f"keeps {kept} unused that it does not lend (lendingLimit {value})"
        return f"keeps {kept} of its quota from the cohort (lendingLimit {value})"
    if b.limit == "borrowingLimit":
        return f"borrows at most {value} from its parent cohort (borrowingLimit)"
    return f"adds only {value} of its own to what its members lend (nominalQuota)"


def limit_clause(line: QuotaLine | None) -> str:
    """What the limits elsewhere do, as one clause ('' when none binds elsewhere)."""
    if line is None:
        return ""
    return "; ".join(f"{_who(b, line.cohort)} {_effect(b, line)}" for b in elsewhere(line))


def limit_levers(line: QuotaLine | None) -> Iterator[str]:
    """One next step per limit elsewhere: raise it, where it is set."""
    if line is None:
        return
    for b in elsewhere(line):
        yield (
            f"Or ask an admin to raise the {b.limit} of {_who(b, line.cohort)} in flavor "
            f"{line.flavor}: it {_effect(b, line)}."
        )
