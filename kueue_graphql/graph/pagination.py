"""Cursor pagination with a required, capped page size.

Lists are read whole from the API server (filters such as status are not server-side
selectable), sorted by (namespace, name), and cut after the cursor. The cursor is the last
item's (namespace, name), so pages stay stable when objects are added or removed elsewhere.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import strawberry
from strawberry.extensions import SchemaExtension

from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.graph.common import metadata
from kueue_graphql.kube.client import JsonObject

T = TypeVar("T")


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type(description="One page of a list.")
class Connection(Generic[T]):
    nodes: list[T]
    page_info: PageInfo
    total_count: int = strawberry.field(description="Matching objects across all pages.")


def _sort_key(obj: JsonObject) -> tuple[str, str]:
    meta = metadata(obj)
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def encode_cursor(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, binascii.Error) as error:
        raise BadRequestError("invalid cursor") from error
    return (str(namespace), str(name))


def check_page_arguments(
    first: int, after: str | None, max_page_size: int
) -> tuple[str, str] | None:
    """Refuse a bad page size or cursor; returns the decoded cursor position."""
    if not 1 <= first <= max_page_size:
        raise BadRequestError(f"`first` must be between 1 and {max_page_size}")
    return decode_cursor(after) if after is not None else None


class PageArgumentsCheck(SchemaExtension):
    """Checks `first` and `after` of every list field before its resolver reads anything, so
    a bad page costs no API call (each list is read whole before it is paged)."""

    def resolve(
        self, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        first = kwargs.get("first")
        if isinstance(first, int) and not isinstance(first, bool):
            limits = getattr(info.context, "limits", None)
            if limits is not None:
                check_page_arguments(first, kwargs.get("after"), limits.max_page_size)
        return _next(root, info, *args, **kwargs)


def paginate(
    objects: Sequence[JsonObject],
    first: int,
    after: str | None,
    max_page_size: int,
    wrap: Callable[[JsonObject], T],
) -> Connection[T]:
    position = check_page_arguments(first, after, max_page_size)
    ordered = sorted(objects, key=_sort_key)
    start = 0
    if position is not None:
        start = next((i for i, o in enumerate(ordered) if _sort_key(o) > position), len(ordered))
    page = ordered[start : start + first]
    has_next = start + first < len(ordered)
    end_cursor = encode_cursor(_sort_key(page[-1])) if page else None
    return Connection(
        nodes=[wrap(o) for o in page],
        page_info=PageInfo(has_next_page=has_next, end_cursor=end_cursor),
        total_count=len(ordered),
    )
