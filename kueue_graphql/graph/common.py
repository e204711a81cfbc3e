"""Small value types shared by several kinds, and helpers to reach the request context."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from decimal import Decimal
from typing import Any, TypeVar, cast

import strawberry
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionSetNode,
)

from kueue_graphql.context import RequestContext
from kueue_graphql.graph.quantity import Quantity, amount_of, replaced_by, text_of
from kueue_graphql.kueue.objects import items
from kueue_graphql.lookups import KueueReader

Info = strawberry.Info[RequestContext, None]
JSON = strawberry.scalars.JSON


# A subscription renews its reads (fresh API-call meter, identity and access re-checked) for
# every message it pushes; the fields of that message resolve through them. A ContextVar, so
# each operation (its own task) sees only its own.
LIVE_READS: ContextVar[KueueReader | None] = ContextVar("LIVE_READS", default=None)


def reads(info: Info) -> KueueReader:
    return LIVE_READS.get() or info.context.reads


@strawberry.type(description="A status condition, as in `status.conditions`.")
class Condition:
    type: str
    status: str
    reason: str | None
    message: str | None
    last_transition_time: str | None
    observed_generation: int | None

    @classmethod
    def from_json(cls, condition: Mapping[str, Any]) -> Condition:
        return cls(
            type=str(condition.get("type", "")),
            status=str(condition.get("status", "")),
            reason=condition.get("reason"),
            message=condition.get("message"),
            last_transition_time=condition.get("lastTransitionTime"),
            observed_generation=condition.get("observedGeneration"),
        )


def conditions(obj: Mapping[str, Any]) -> list[Condition]:
    return [Condition.from_json(c) for c in items(obj, "status", "conditions")]


@strawberry.type
class Taint:
    key: str
    value: str | None
    effect: str


def taints(items: Sequence[Mapping[str, Any]] | None) -> list[Taint]:
    return [
        Taint(key=str(t.get("key", "")), value=t.get("value"), effect=str(t.get("effect", "")))
        for t in items or []
    ]


@strawberry.type
class Toleration:
    key: str | None
    operator: str | None
    value: str | None
    effect: str | None
    toleration_seconds: int | None


def tolerations(items: Sequence[Mapping[str, Any]] | None) -> list[Toleration]:
    return [
        Toleration(
            key=t.get("key"),
            operator=t.get("operator"),
            value=t.get("value"),
            effect=t.get("effect"),
            toleration_seconds=t.get("tolerationSeconds"),
        )
        for t in items or []
    ]


@strawberry.type(description="Usage of one resource in one flavor (`flavorsUsage[].resources`).")
class ResourceUsage:
    name: str
    total_value: Quantity | None
    borrowed_value: Quantity | None

    @replaced_by("totalValue")
    def total(self) -> str | None:
        return text_of(self.total_value)

    @replaced_by("totalValue")
    def total_amount(self) -> Decimal | None:
        return amount_of(self.total_value)

    @replaced_by("borrowedValue")
    def borrowed(self) -> str | None:
        return text_of(self.borrowed_value)

    @replaced_by("borrowedValue")
    def borrowed_amount(self) -> Decimal | None:
        return amount_of(self.borrowed_value)


@strawberry.type(description="`flavorsReservation[]` / `flavorsUsage[]` entry of a queue.")
class FlavorUsage:
    name: str
    resources: list[ResourceUsage]


def flavor_usages(items: Sequence[Mapping[str, Any]] | None) -> list[FlavorUsage]:
    result = []
    for flavor in items or []:
        resources = []
        for resource in flavor.get("resources") or []:
            resources.append(
                ResourceUsage(
                    name=str(resource.get("name", "")),
                    total_value=Quantity.maybe_written(resource.get("total")),
                    borrowed_value=Quantity.maybe_written(resource.get("borrowed")),
                )
            )
        result.append(FlavorUsage(name=str(flavor.get("name", "")), resources=resources))
    return result


F = TypeVar("F", bound=Callable[..., Any])


def field(*, description: str | None = None, name: str | None = None) -> Callable[[F], F]:
    """`@strawberry.field(description=...)` that keeps the resolver's type for mypy.

    strawberry's keyword-only overload of `field` returns Any, which strict mypy rejects as an
    untyped decorator.
    """

    def decorate(resolver: F) -> F:
        return cast(F, strawberry.field(resolver, description=description, name=name))

    return decorate


def selected_nodes(
    selection_sets: Sequence[SelectionSetNode],
    name: str,
    fragments: Mapping[str, FragmentDefinitionNode],
) -> list[FieldNode]:
    """The fields named `name` in `selection_sets` (inside fragments too), as document nodes."""
    found: list[FieldNode] = []
    pending = list(selection_sets)
    seen: set[str] = set()
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode):
                if selection.name.value == name:
                    found.append(selection)
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = fragments.get(selection.name.value)
                if fragment is not None and selection.name.value not in seen:
                    seen.add(selection.name.value)
                    pending.append(fragment.selection_set)
    return found


def as_json(value: object) -> JSON:
    """Mark plain JSON data (dicts, lists, strings, numbers) as the JSON scalar for mypy."""
    return cast(JSON, value)
