"""Cursor pagination with a required, capped page size.

Pages follow the API server's list order (storage key `<namespace>/<name>`, as `kubectl get -A`
shows; see kube.paging) and are cut after the cursor. The cursor is the last item's
(namespace, name), so pages stay stable when objects are added or removed elsewhere. Whether
`totalCount` is selected decides whether the whole list must be read.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import strawberry
from graphql import GraphQLObjectType, GraphQLSchema
from strawberry.types.nodes import SelectedField

from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.graph.common import Info, field
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kueue.objects import metadata
from kueue_graphql.lookups import Page, PageRequest, page_of

T = TypeVar("T")


@strawberry.type(description="Where a page is in its list, as Relay's connections describe it.")
class PageInfo:
    has_next_page: bool
    has_previous_page: bool = strawberry.field(
        description="Whether a page comes before this one (pages go forward only: `first` and "
        "`after`; true when the page was asked `after` a cursor)."
    )
    start_cursor: str | None = strawberry.field(description="The cursor of the page's first item.")
    end_cursor: str | None = strawberry.field(
        description="The cursor of the page's last item: pass it as `after` for the next page."
    )


@strawberry.type(description="One item of a page with its cursor (Relay's edge).")
class Edge(Generic[T]):
    node: T
    cursor: str = strawberry.field(description="Pass as `after` for the page after this item.")


@strawberry.type(
    description="One page of a list: its items as `nodes`, or as `edges` with their cursors "
    "(Relay's connection)."
)
class Connection(Generic[T]):
    nodes: list[T]
    edges: list[Edge[T]]
    page_info: PageInfo
    # None when the list was not read to its end, which happens only when `totalCount` is
    # not selected (see page_request).
    counted: strawberry.Private[int | None]

    @field(description="Matching objects across all pages.")
    def total_count(self) -> int:
        if self.counted is None:
            raise RuntimeError("totalCount resolved for a page read without it")
        return self.counted


def _cursor_of(obj: JsonObject) -> tuple[str, str]:
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


def check_page_arguments_first(schema: GraphQLSchema) -> None:
    """Make every list field (one with a `first` argument) check `first` and `after` before its
    resolver reads anything, so a bad page costs no API call (a list may be read whole before
    it is paged).

    The check wraps those fields' resolvers only, once, when the schema is built: a schema
    extension's `resolve` hook would run for every field of every request instead."""
    for named in schema.type_map.values():
        if not isinstance(named, GraphQLObjectType) or named.name.startswith("__"):
            continue
        for graphql_field in named.fields.values():
            resolve = graphql_field.resolve
            if "first" in graphql_field.args and resolve is not None:
                graphql_field.resolve = _checking_pages(resolve)


def _checking_pages(resolve: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(resolve, "checks_pages", False):
        return resolve

    def checked(root: Any, info: Any, **kwargs: Any) -> Any:
        first = kwargs.get("first")
        if isinstance(first, int) and not isinstance(first, bool):
            limits = getattr(info.context, "limits", None)
            if limits is not None:
                check_page_arguments(first, kwargs.get("after"), limits.max_page_size)
        return resolve(root, info, **kwargs)

    checked.checks_pages = True  # type: ignore[attr-defined]
    return checked


def _selects(selections: Sequence[Any], name: str) -> bool:
    for selection in selections:
        if isinstance(selection, SelectedField):
            if selection.name == name:
                return True
        elif _selects(selection.selections, name):  # a fragment: look inside it
            return True
    return False


def page_request(info: Info, first: int, after: str | None) -> PageRequest:
    """The page a list field asks for; `count_all` when any selection of it wants totalCount."""
    position = check_page_arguments(first, after, info.context.limits.max_page_size)
    count_all = any(_selects(field.selections, "totalCount") for field in info.selected_fields)
    return PageRequest(first=first, after=position, count_all=count_all)


def connection(page: Page, wrap: Callable[[JsonObject], T], *, after: str | None) -> Connection[T]:
    """The connection of `page`, asked `after` that cursor (None: the list's first page)."""
    nodes = [wrap(o) for o in page.items]
    cursors = [encode_cursor(_cursor_of(o)) for o in page.items]
    return Connection(
        nodes=nodes,
        edges=[Edge(node=n, cursor=c) for n, c in zip(nodes, cursors, strict=True)],
        page_info=PageInfo(
            has_next_page=page.has_next,
            has_previous_page=after is not None,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        ),
        counted=page.total_count,
    )


def paginate(
    objects: Sequence[JsonObject],
    first: int,
    after: str | None,
    max_page_size: int,
    wrap: Callable[[JsonObject], T],
) -> Connection[T]:
    """A page of objects already read whole."""
    position = check_page_arguments(first, after, max_page_size)
    return connection(page_of(objects, PageRequest(first=first, after=position)), wrap, after=after)
