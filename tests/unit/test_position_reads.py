"""What the `impersonate` read mode reads of Kueue's visibility API for one queue position, from
a fake visibility API over a captured-shape list (calls and items counted, nothing timed).

Regressions (issue 26): the head of a 10,000-entry queue cost 20 pages of 500 items, and a
Workload behind more than 10,000 entries (same-named LocalQueues of other namespaces,
kueue#10575) was answered ABSENT. Only names that existed before the fix are imported, so the
file runs against the old code too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.identity import Identity
from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.client import ApiCallMeter
from kueue_graphql.lookups.apiserver import ApiServerReader
from kueue_graphql.lookups.diagnosis import _queue_position

BOUND = 20_000  # kube/pending_pages.py PENDING_BOUND, documented in docs/service.md


def _workload(namespace: str, name: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"queueName": "lq", "priority": 0},
        "status": {"conditions": []},
    }


@dataclass
class FakeVisibility:
    """Kueue's localqueues/<lq>/pendingworkloads over a fixed list, counting calls and items."""

    entries: list[dict[str, Any]]
    calls: list[tuple[int, int]] = field(default_factory=list)

    async def request_json(
        self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), **_: Any
    ) -> dict[str, Any]:
        assert method == "GET"
        assert path.endswith("/localqueues/lq/pendingworkloads"), path
        options = dict(query)
        limit, offset = int(options.get("limit", 1000)), int(options.get("offset", 0))
        self.calls.append((offset, limit))
        return {"items": self.entries[offset : offset + limit]}

    @property
    def items_served(self) -> int:
        return sum(min(limit, max(0, len(self.entries) - offset)) for offset, limit in self.calls)


class AllowAll:
    async def allowed(self, identity: Identity, access: Access, meter: ApiCallMeter) -> bool:
        return True


def _queue(total: int, foreign_every: int = 2) -> list[dict[str, Any]]:
    """Kueue's LocalQueue list of `a/lq`: every other entry is a same-named LocalQueue's of
    namespace b (kueue#10575)."""
    entries = []
    for index in range(total):
        namespace = "b" if index % foreign_every else "a"
        entries.append(
            {
                "metadata": {
                    "namespace": namespace,
                    "name": f"wl-{index:06d}",
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
                "priority": 0,
                "localQueueName": "lq",
                "positionInClusterQueue": index,
                "positionInLocalQueue": index,
            }
        )
    return entries


async def _position(fake: FakeVisibility, name: str) -> object:
    async def identity() -> Identity:
        return Identity("alice")

    reader = ApiServerReader(
        fake,  # type: ignore[arg-type]
        AllowAll(),  # type: ignore[arg-type]
        identity,
        impersonate=True,
        meter=ApiCallMeter(budget=100),
    )
    return await _queue_position(reader, "a", _workload("a", name))


async def test_position_0_costs_one_small_page() -> None:
    """Regression: the head of a 10,000-entry queue used to cost 20 pages of 500."""
    fake = FakeVisibility(_queue(10_000))
    found = await _position(fake, "wl-000000")
    assert isinstance(found, dict)
    assert found["positionInClusterQueue"] == 0
    assert fake.calls == [(0, 10)]
    assert fake.items_served == 10


async def test_a_workload_past_the_old_cap_is_found() -> None:
    """Regression: behind same-named LocalQueues of other namespaces, entry 10,004 of the list
    used to be answered ABSENT ("not among the first 10000 pending Workloads read")."""
    fake = FakeVisibility(_queue(10_010))
    found = await _position(fake, "wl-010004")
    assert isinstance(found, dict), found
    assert found["positionInClusterQueue"] == 10_004
    assert found["positionInLocalQueue"] == 5_002  # its own namespace's entries only
    # Pages of 10, 100, 1,000, then 2,000: 8 calls, and nothing read past the page it is in.
    assert len(fake.calls) == 8
    assert fake.items_served <= 10_004 + 2_000


async def test_past_the_bound_the_answer_is_beyond_n_never_absent() -> None:
    fake = FakeVisibility(_queue(BOUND + 500))
    found = await _position(fake, f"wl-{BOUND + 100:06d}")
    assert found == {"positionBeyond": BOUND}
    assert fake.items_served == BOUND


async def test_not_in_a_short_list_is_absent() -> None:
    fake = FakeVisibility(_queue(30))
    found = await _position(fake, "wl-999999")
    assert isinstance(found, dx.Absent)
    assert fake.calls == [(0, 10), (10, 100)]
