"""Pages of a list in keyset order, the order the API server lists objects in.

The API server returns a list in the order of its storage keys (`<namespace>/<name>`, or
`<name>` for cluster-scoped kinds), and so does `kubectl get -A`. Pages here follow the same
order, so a page can be cut from the list while it is still being read: once `first` objects
after the cursor are in hand (plus one, to know whether there is a next page), the rest of the
list is not needed unless the caller asked for `totalCount`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kueue.objects import metadata

# (namespace + "/", name) compares exactly as the storage key "<namespace>/<name>" does: a
# namespace never contains "/", so "team/..." < "team-a/..." is decided where the full keys
# differ ("/" vs "-").
OrderKey = tuple[str, str]


def order_key(namespace: str | None, name: str) -> OrderKey:
    return (f"{namespace or ''}/", name)


def object_order_key(obj: JsonObject) -> OrderKey:
    meta = metadata(obj)
    return order_key(meta.get("namespace"), str(meta.get("name") or ""))


@dataclass(frozen=True)
class PageRequest:
    first: int
    # (namespace, name) of the last object of the previous page.
    after: tuple[str, str] | None = None
    # Whether the caller wants `totalCount`, which needs the whole list.
    count_all: bool = True

    @property
    def after_key(self) -> OrderKey | None:
        return order_key(*self.after) if self.after is not None else None


@dataclass(frozen=True)
class Page:
    items: list[JsonObject]
    has_next: bool
    # None when the request did not ask for it (the list was not read to its end).
    total_count: int | None


def page_of(objects: Iterable[JsonObject], request: PageRequest | None) -> Page:
    """Cut a page from objects in any order (the whole list at hand)."""
    ordered = sorted(objects, key=object_order_key)
    if request is None:
        return Page(items=ordered, has_next=False, total_count=len(ordered))
    after = request.after_key
    start = 0
    if after is not None:
        start = next(
            (i for i, o in enumerate(ordered) if object_order_key(o) > after), len(ordered)
        )
    return Page(
        items=ordered[start : start + request.first],
        has_next=start + request.first < len(ordered),
        total_count=len(ordered),
    )


@dataclass
class PageCollector:
    """Collects a page from a list read chunk by chunk, and says when it has enough.

    It stops early only while the chunks arrive in keyset order; should the API server ever
    list out of order, it reads on to the end and sorts, so a page is never wrong.
    """

    request: PageRequest | None
    kept: list[JsonObject] = field(default_factory=list)
    in_order: bool = True
    _last: OrderKey | None = None

    def observe(self, chunk: list[JsonObject]) -> None:
        """Note the order of a chunk as read (before any filter)."""
        for obj in chunk:
            key = object_order_key(obj)
            if self._last is not None and key <= self._last:
                self.in_order = False
            self._last = key

    def add(self, kept: list[JsonObject]) -> bool:
        """Add the chunk's objects that pass the filter; True when no more are needed."""
        self.kept.extend(kept)
        request = self.request
        if request is None or request.count_all or not self.in_order:
            return False
        after = request.after_key
        beyond = sum(1 for o in self.kept if after is None or object_order_key(o) > after)
        return beyond > request.first

    def page(self, *, complete: bool) -> Page:
        page = page_of(self.kept, self.request)
        if complete:
            return page
        # Stopped early: there is at least one object beyond the page, and no total.
        return Page(items=page.items, has_next=True, total_count=None)
