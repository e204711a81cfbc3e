"""The `cache` read mode's indexed store of one kind: client-go's Indexer (tools/cache/store.go's
`cache` over thread_safe_store.go's `threadSafeMap`, with index.go's IndexFunc), in Python.

Mirrors k8s.io/client-go@v0.36.3/tools/cache/{store.go,thread_safe_store.go,index.go}. Pure
logic, no I/O: a Reflector (kube/reflector.py) feeds a store through `replace` (a complete list,
client-go's Replace) and `apply` (one watch event: Add, Update or Delete). A store keeps

- its objects by storage key (`kube.paging.order_key`: `<namespace>/<name>`, client-go's
  MetaNamespaceKeyFunc), and
- postings: for each index key (e.g. "Workloads of namespace team-a, LocalQueue lq-a, pending"),
  the storage keys of the matching objects in storage-key order, kept sorted on every change
  (bisect), so one page after a cursor is O(log n + page) and a count is O(1). The index keys
  of an object come from the kind's IndexFunc (Kueue's: lookups/cache_indexes.py); the first
  element of a key names its index, as an index name does in client-go's Indexers.
- ordered postings (no client-go counterpart): for each key an OrderFunc gives, the matching
  objects sorted by a key of the kind's own (e.g. Kueue's queue order of pending Workloads),
  kept sorted on every change the same way, so an object's rank is one bisect, O(log n).

`replace` builds a complete new state and swaps it in with one assignment: a reader sees the
old state or the new one, never a half-built one. `apply` changes the live state synchronously
(no await inside), so a reader running between two awaits sees whole events only.

Objects handed out are shared by every request: nobody may change them.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.paging import OrderKey, Page, PageRequest, object_order_key
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kueue.objects import metadata

PostingKey = tuple[Hashable, ...]
# One value of a combined index meaning "any value of this attribute".
ANY = None

ALL: PostingKey = ("all",)

# An object's index keys (besides ALL and its namespace's, which every store keeps).
IndexFunc = Callable[[JsonObject], list[PostingKey]]
# An object's ordered index keys, each with the key it sorts by in that posting (comparable
# with every other object's; ties are broken by storage key).
SortKey = tuple[Any, ...]
OrderFunc = Callable[[JsonObject], list[tuple[PostingKey, SortKey]]]
OrderedEntry = tuple[SortKey, OrderKey]
_T = TypeVar("_T")
# What one change did to an ordered posting: (posting, entry before, entry after); None where
# the object was not in it. Only entries that came, went or moved (sort key changed).
Move = tuple[PostingKey, OrderedEntry | None, OrderedEntry | None]
# Whether a value derived from an ordered posting still holds after one of its objects changed
# (old, new) without moving in the posting.
Keep = Callable[[JsonObject, JsonObject], bool]


def _never(old: JsonObject, new: JsonObject) -> bool:
    return False


def namespace_key(namespace: str | None) -> PostingKey:
    return ("ns", namespace or "")


def combinations(prefix: str, values: Sequence[str]) -> list[PostingKey]:
    """Every key of a combined index over `values`: each attribute either its value or ANY
    (2^len keys), so any combination of filters has its own exact posting."""
    keys: list[PostingKey] = []
    for mask in itertools.product((False, True), repeat=len(values)):
        keys.append(
            (prefix, *(value if keep else ANY for value, keep in zip(values, mask, strict=True)))
        )
    return keys


def ingest(resource: Resource, obj: JsonObject) -> JsonObject:
    """The object as the store keeps it: without managedFields (half of a Workload's bytes,
    never served), with the apiVersion/kind that list items lack."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.kind)
    return obj


def _no_keys(obj: JsonObject) -> list[PostingKey]:
    return []


def _no_order(obj: JsonObject) -> list[tuple[PostingKey, SortKey]]:
    return []


# -- the store -------------------------------------------------------------------------------


@dataclass
class StoreState:
    """One consistent view of a kind. Replaced whole on a re-list."""

    objects: dict[OrderKey, JsonObject] = field(default_factory=dict)
    postings: dict[PostingKey, list[OrderKey]] = field(default_factory=dict)
    keys_of: dict[OrderKey, tuple[PostingKey, ...]] = field(default_factory=dict)
    ordered: dict[PostingKey, list[OrderedEntry]] = field(default_factory=dict)
    ordered_of: dict[OrderKey, tuple[tuple[PostingKey, OrderedEntry], ...]] = field(
        default_factory=dict
    )
    derived: dict[PostingKey, dict[str, tuple[object, Keep]]] = field(default_factory=dict)
    """Values computed from an ordered posting and its objects (`Indexer.derived`), dropped
    when an entry of that posting is added or removed, or changed in a way its `Keep` says
    matters."""
    resource_version: str = ""


class Indexer:
    """The objects of one kind, indexed by `index` (see the module docstring)."""

    def __init__(
        self, resource: Resource, index: IndexFunc | None = None, order: OrderFunc | None = None
    ) -> None:
        self.resource = resource
        self._keys = index or _no_keys
        self._order = order or _no_order
        self._state: StoreState | None = None
        # time.monotonic() of the last word from the API server (list, event or bookmark).
        self.heard_at: float | None = None
        # The ordered entries the change being told about added, removed or moved (`Move`s),
        # readable by listeners while they are told; () after a re-list (anything may have).
        self.moves: tuple[Move, ...] = ()
        # Told after every change is applied (the object; None after a re-list: anything may
        # have changed), by namespace ("" for cluster-scoped kinds) and for all (None).
        self._listeners: dict[str | None, set[Callable[[JsonObject | None], None]]] = {}

    def listen(
        self, namespace: str | None, listener: Callable[[JsonObject | None], None]
    ) -> Callable[[], None]:
        """Call `listener` after each change in `namespace` (None: any); returns the undo."""
        key = (namespace or "") if namespace is not None else None
        self._listeners.setdefault(key, set()).add(listener)

        def stop() -> None:
            listeners = self._listeners.get(key)
            if listeners is not None:
                listeners.discard(listener)
                if not listeners:
                    del self._listeners[key]

        return stop

    def _tell(self, obj: JsonObject | None) -> None:
        if not self._listeners:
            return
        if obj is None:
            targets = [listener for group in self._listeners.values() for listener in group]
        else:
            namespace = str(metadata(obj).get("namespace") or "")
            targets = [*self._listeners.get(None, ()), *self._listeners.get(namespace, ())]
        for listener in targets:
            listener(obj)

    # -- feeding ---------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return self._state is not None

    @property
    def resource_version(self) -> str:
        return self._state.resource_version if self._state is not None else ""

    def age_seconds(self, now: float | None = None) -> float | None:
        if self.heard_at is None:
            return None
        return max(0.0, (time.monotonic() if now is None else now) - self.heard_at)

    def _ordered_keys(
        self, obj: JsonObject, key: OrderKey
    ) -> tuple[tuple[PostingKey, OrderedEntry], ...]:
        return tuple((index_key, (sort, key)) for index_key, sort in self._order(obj))

    def _index_keys(self, obj: JsonObject) -> tuple[PostingKey, ...]:
        meta = metadata(obj)
        keys = [ALL, namespace_key(meta.get("namespace")), *self._keys(obj)]
        return tuple(dict.fromkeys(keys))

    def replace(self, objects: Iterable[JsonObject], resource_version: str) -> None:
        """A complete list: build a new state aside, then swap it in at once."""
        state = StoreState(resource_version=resource_version)
        postings: dict[PostingKey, list[OrderKey]] = {}
        for obj in objects:
            ingest(self.resource, obj)
            key = object_order_key(obj)
            state.objects[key] = obj
            index_keys = self._index_keys(obj)
            state.keys_of[key] = index_keys
            for index_key in index_keys:
                postings.setdefault(index_key, []).append(key)
            ordered = self._ordered_keys(obj, key)
            if ordered:
                state.ordered_of[key] = ordered
                for index_key, entry in ordered:
                    state.ordered.setdefault(index_key, []).append(entry)
        for keys in postings.values():
            keys.sort()
        for entries in state.ordered.values():
            entries.sort()
        state.postings = postings
        self._state = state
        self.heard_at = time.monotonic()
        self.moves = ()
        self._tell(None)

    def apply(self, event_type: str, obj: JsonObject, resource_version: str | None) -> None:
        """One watch event (ADDED, MODIFIED, DELETED; BOOKMARK moves the version only)."""
        state = self._state
        if state is None:
            return
        self.heard_at = time.monotonic()
        if resource_version:
            state.resource_version = resource_version
        if event_type == "BOOKMARK":
            return
        ingest(self.resource, obj)
        key = object_order_key(obj)
        before = state.objects.get(key)
        placed = dict(state.ordered_of.get(key, ()))
        self._remove(state, key)
        if event_type != "DELETED":
            state.objects[key] = obj
            index_keys = self._index_keys(obj)
            state.keys_of[key] = index_keys
            for index_key in index_keys:
                bisect.insort(state.postings.setdefault(index_key, []), key)
            ordered = self._ordered_keys(obj, key)
            if ordered:
                state.ordered_of[key] = ordered
                for index_key, entry in ordered:
                    bisect.insort(state.ordered.setdefault(index_key, []), entry)
        self._forget_derived(state, before, None if event_type == "DELETED" else obj, placed)
        now = dict(state.ordered_of.get(key, ()))
        self.moves = tuple(
            (index_key, placed.get(index_key), now.get(index_key))
            for index_key in placed.keys() | now.keys()
            if placed.get(index_key) != now.get(index_key)
        )
        self._tell(obj)

    @staticmethod
    def _forget_derived(
        state: StoreState,
        before: JsonObject | None,
        after: JsonObject | None,
        placed: dict[PostingKey, OrderedEntry],
    ) -> None:
        """Drop what was derived from the postings a change touched: all of it where an entry
        came, went or moved; where the object stayed in place, what its `Keep` does not keep."""
        key = None if after is None else object_order_key(after)
        now = dict(state.ordered_of.get(key, ())) if key is not None else {}
        for index_key in placed.keys() | now.keys():
            kept = state.derived.get(index_key)
            if kept is None:
                continue
            entry = now.get(index_key)
            if entry is None or entry != placed.get(index_key) or before is None or after is None:
                del state.derived[index_key]
                continue
            for name, (_, keep) in list(kept.items()):
                if not keep(before, after):
                    del kept[name]

    def size(self) -> int:
        """Objects in the store now (0 before the first list)."""
        return len(self._state.objects) if self._state is not None else 0

    def touch(self) -> None:
        """The API server was heard from (a watch opened) without a change."""
        if self._state is not None:
            self.heard_at = time.monotonic()

    @staticmethod
    def _remove(state: StoreState, key: OrderKey) -> None:
        if state.objects.pop(key, None) is None:
            return
        for index_key in state.keys_of.pop(key, ()):
            keys = state.postings.get(index_key)
            if keys is None:
                continue
            at = bisect.bisect_left(keys, key)
            if at < len(keys) and keys[at] == key:
                del keys[at]
            if not keys:
                del state.postings[index_key]
        for index_key, entry in state.ordered_of.pop(key, ()):
            entries = state.ordered.get(index_key)
            if entries is None:
                continue
            at = bisect.bisect_left(entries, entry)
            if at < len(entries) and entries[at] == entry:
                del entries[at]
            if not entries:
                del state.ordered[index_key]

    # -- reading ---------------------------------------------------------------------------

    def state(self) -> StoreState:
        if self._state is None:
            raise LookupError(f"{self.resource.kind} store not synced")
        return self._state

    def get(self, namespace: str | None, name: str) -> JsonObject | None:
        return self.state().objects.get((f"{namespace or ''}/", name))

    def placed(self, namespace: str | None, name: str) -> dict[PostingKey, OrderedEntry]:
        """The object's entries in ordered postings, by posting (empty when in none)."""
        return dict(self.state().ordered_of.get((f"{namespace or ''}/", name), ()))

    def count(self, index_key: PostingKey) -> int:
        return len(self.state().postings.get(index_key, ()))

    def keys_with(self, prefix: str) -> list[PostingKey]:
        """The index keys of one index that have objects (e.g. every cohort a queue names)."""
        return [k for k, keys in self.state().postings.items() if k[0] == prefix and keys]

    def ordered(self, index_key: PostingKey) -> Sequence[OrderedEntry]:
        """The ordered posting of `index_key`, (sort key, storage key) ascending; read it,
        never change it (bisect it for a rank: O(log n))."""
        return self.state().ordered.get(index_key, ())

    def derived(
        self,
        index_key: PostingKey,
        name: str,
        build: Callable[[Sequence[OrderedEntry]], _T],
        keep: Keep = _never,
    ) -> _T:
        """`build(ordered(index_key))`, computed once and kept until the posting changes (an
        entry added, removed or moved), or one of its objects changes in place in a way `keep`
        does not keep (e.g. Kueue's status updates of pending Workloads leave their requests
        alone): running totals over a queue. `build` may read the posting's objects (`get`),
        never change them; the value must not hold on to the posting itself (a posting emptied
        and refilled is another list)."""
        state = self.state()
        kept = state.derived.setdefault(index_key, {})
        if name not in kept:
            kept[name] = (build(state.ordered.get(index_key, ())), keep)
        return cast("_T", kept[name][0])

    def items(self, index_key: PostingKey) -> list[JsonObject]:
        state = self.state()
        return [state.objects[key] for key in state.postings.get(index_key, ())]

    def page(
        self,
        index_keys: Sequence[PostingKey],
        request: PageRequest | None,
        keep: Callable[[JsonObject], bool] | None = None,
    ) -> Page:
        """One page of the union of disjoint postings, in storage-key order.

        Without `keep`: O(k log n + page) for k postings, the total from their lengths. A `keep`
        filter (e.g. a label selector, rare) walks the postings from the cursor on."""
        state = self.state()
        postings = [state.postings.get(k, []) for k in dict.fromkeys(index_keys)]
        after = request.after_key if request is not None else None
        if keep is None:
            total = sum(len(p) for p in postings)
            if request is None:
                keys = list(heapq.merge(*postings)) if len(postings) != 1 else list(postings[0])
                return Page([state.objects[k] for k in keys], has_next=False, total_count=total)
            merged = heapq.merge(*(_from(p, after) for p in postings))
            taken = list(itertools.islice(merged, request.first + 1))
            return Page(
                [state.objects[k] for k in taken[: request.first]],
                has_next=len(taken) > request.first,
                total_count=total,
            )
        matching = (
            state.objects[k]
            for k in heapq.merge(*(_from(p, after) for p in postings))
            if keep(state.objects[k])
        )
        if request is None:
            items = list(matching)
            return Page(items, has_next=False, total_count=len(items))
        taken_objects = list(itertools.islice(matching, request.first + 1))
        total_count: int | None = None
        if request.count_all:
            total_count = sum(1 for p in postings for k in p if keep(state.objects[k]))
        return Page(
            taken_objects[: request.first],
            has_next=len(taken_objects) > request.first,
            total_count=total_count,
        )


def _from(keys: list[OrderKey], after: OrderKey | None) -> Iterator[OrderKey]:
    """The keys after the cursor: a bisect, then an index walk (islice would step through the
    skipped keys one by one)."""
    start = 0 if after is None else bisect.bisect_right(keys, after)
    return (keys[i] for i in range(start, len(keys)))
