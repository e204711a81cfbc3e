"""What Kueue's quota reasons say per pod set, over every flavor it tried.

Kueue writes one part per flavor it tried for a pod set ("insufficient quota for cpu in flavor
spare, ... > maximum capacity (2), insufficient unused quota for cpu in flavor standard, 2 more
needed"). The flavors are alternatives: the pod set can never fit only when every flavor tried
exceeds what it can ever provide; when one of them only waits for quota, the pod set waits.
The summary and the next steps speak from this, never from the first flavor alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kueue_graphql.kueue.exact import format_quantity
from kueue_graphql.kueue.model import Reason
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["PodSetQuota", "ceilings", "pod_set_quotas", "requested", "shortfalls"]


@dataclass(frozen=True)
class PodSetQuota:
    """The quota reasons of one pod set, in Kueue's order."""

    pod_set: str | None
    exceeded: tuple[Reason, ...]
    """Flavors that can never provide the request (ExceedsMaxQuota)."""
    waiting: tuple[Reason, ...]
    """Flavors that could, once quota is free (WaitingForQuota)."""

    @property
    def never_fits(self) -> bool:
        return bool(self.exceeded) and not self.waiting


def pod_set_quotas(reasons: Sequence[Reason]) -> list[PodSetQuota]:
    """Per pod set with a quota reason, in the order Kueue names them."""
    order: list[str | None] = []
    exceeded: dict[str | None, list[Reason]] = {}
    waiting: dict[str | None, list[Reason]] = {}
    for r in reasons:
        if r.code not in (Code.EXCEEDS_MAX_QUOTA, Code.WAITING_FOR_QUOTA):
            continue
        if r.pod_set not in order:
            order.append(r.pod_set)
        into = exceeded if r.code == Code.EXCEEDS_MAX_QUOTA else waiting
        into.setdefault(r.pod_set, []).append(r)
    return [PodSetQuota(p, tuple(exceeded.get(p, ())), tuple(waiting.get(p, ()))) for p in order]


def _amount(r: Reason, number: str) -> str:
    value = r.number(number)
    return "?" if value is None else format_quantity(value, r.resource)


def ceilings(exceeded: Sequence[Reason]) -> str:
    """ "2 in flavor spare, 1 in flavor standard" (resource named when they differ)."""
    same = len({r.resource for r in exceeded}) == 1
    return ", ".join(
        f"{_amount(r, 'maximumCapacity')}{'' if same else f' {r.resource}'} in flavor {r.flavor}"
        for r in exceeded
    )


def shortfalls(waiting: Sequence[Reason]) -> str:
    """ "2 more cpu must be free in flavor spare, or 1 more cpu in flavor standard"."""
    parts = [f"{_amount(r, 'moreNeeded')} more {r.resource}" for r in waiting]
    first = f"{parts[0]} must be free in flavor {waiting[0].flavor}"
    return ", or ".join(
        [
            first,
            *(
                f"{part} in flavor {r.flavor}"
                for part, r in zip(parts[1:], waiting[1:], strict=True)
            ),
        ]
    )


def requested(exceeded: Sequence[Reason]) -> str | None:
    """ "3 cpu" when every flavor failed on the same resource and amount, else None."""
    asked = {(r.resource, r.number("requested")) for r in exceeded}
    if len(asked) != 1:
        return None
    resource, value = next(iter(asked))
    return None if value is None else f"{format_quantity(value, resource)} {resource}"
