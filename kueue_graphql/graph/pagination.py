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
from typing import Generic, TypeVar

import strawberry

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


def paginate(
    objects: Sequence[JsonObject],
    first: int,
    after: str | None,
    max_page_size: int,
    wrap: Callable[[JsonObject], T],
) -> Connection[T]:
    if not 1 <= first <= max_page_size:
        raise BadRequestError(f"`first` must be between 1 and {max_page_size}")
    ordered = sorted(objects, key=_sort_key)
    start = 0
    if after is not None:
        position = decode_cursor(after)
        start = next((i for i, o in enumerate(ordered) if _sort_key(o) > position), len(ordered))
    page = ordered[start : start + first]
    has_next = start + first < len(ordered)
    end_cursor = encode_cursor(_sort_key(page[-1])) if page else None
    return Connection(
        nodes=[wrap(o) for o in page],
        page_info=PageInfo(has_next_page=has_next, end_cursor=end_cursor),
        total_count=len(ordered),
    )
