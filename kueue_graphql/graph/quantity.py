"""The schema's one amount type, `Quantity`, and the keyed entries that carry one.

Every amount the API returns is a `Quantity`: the text as Kubernetes writes it plus the exact
decimal. Entries keyed by a resource or a name hold it as `value`; the flat text and number fields
they had before are deprecated for one release (see CHANGELOG.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, TypeVar, cast

import strawberry

from kueue_graphql.kueue import quantity as kube_quantity
from kueue_graphql.kueue.exact import format_quantity as format_for_resource

# One release from 0.2.0: the flat fields go in 0.3.0.
_USE_VALUE = "Use `value { quantity amount }`; removed in 0.3.0."
_QUANTITY_TEXT = 'Kubernetes notation, e.g. "500m", "1536Mi".'


F = TypeVar("F", bound=Callable[..., Any])


def replaced_by(field: str) -> Callable[[F], F]:
    """A deprecated flat text or number field, kept one release beside its Quantity `field`.

    Typed like `common.field`: strawberry's keyword-only `field` returns Any."""
    reason = f"Use `{field} {{ quantity amount }}`; removed in 0.3.0."

    def decorate(resolver: F) -> F:
        return cast(F, strawberry.field(resolver, deprecation_reason=reason))

    return decorate


# The text of a JSON number without exponent: what `Decimal` values look like on the wire.
DECIMAL_SPECIFIED_BY = "https://www.rfc-editor.org/rfc/rfc8259#section-6"
_DECIMAL_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")


def _decimal_input(value: object) -> Decimal:
    """A `Decimal` given as input: a string in the wire format, nothing else (no NaN, no
    exponent, no JSON number whose precision the client's parser may already have lost)."""
    if not isinstance(value, str) or not _DECIMAL_TEXT.fullmatch(value):
        raise ValueError('a Decimal is a string of plain decimal notation, e.g. "0.5" or "-12"')
    return Decimal(value)


DECIMAL_SCALAR = strawberry.scalar(
    name="Decimal",
    description="An exact decimal number, serialized as a string so no precision is lost: the "
    "text of a JSON number (RFC 8259, section 6) without exponent and without trailing "
    'fractional zeros, e.g. "0.5", "-2", "1610612736". Map it to `string` (or a decimal '
    "library's type) in generated clients, never to a binary floating-point number.",
    specified_by_url=DECIMAL_SPECIFIED_BY,
    serialize=lambda value: kube_quantity.decimal_text(Decimal(value)),
    parse_value=_decimal_input,
)


def exact(value: Decimal) -> Decimal:
    # Decimal serializes as a string in GraphQL: exact, unlike Float. Plain notation, no exponent.
    return Decimal(kube_quantity.decimal_text(value))


@strawberry.type(
    description="An amount as Kubernetes writes it, with its exact decimal value. Every amount "
    "in this API has this type."
)
class Quantity:
    quantity: str = strawberry.field(description=_QUANTITY_TEXT)
    amount: Decimal | None = strawberry.field(
        description='Exact number, e.g. "0.5", "1610612736". Null only when the object\'s text '
        "is not a valid quantity (computed amounts are never null)."
    )

    @classmethod
    def of(cls, quantity: kube_quantity.Quantity) -> Quantity:
        """A quantity parsed from, or summed over, objects: printed in its own notation."""
        return cls(quantity=kube_quantity.format_quantity(quantity), amount=exact(quantity.amount))

    @classmethod
    def computed(cls, value: Decimal, resource: str | None) -> Quantity:
        """An exact amount the service computed, printed as Kubernetes prints that resource."""
        return cls(quantity=format_for_resource(value, resource), amount=exact(value))

    @classmethod
    def maybe_computed(cls, value: Decimal | None, resource: str | None) -> Quantity | None:
        return None if value is None else cls.computed(value, resource)

    @classmethod
    def written(cls, text: object) -> Quantity:
        """A field as the object writes it; a text that is not a quantity keeps no amount."""
        try:
            parsed = kube_quantity.parse_quantity(text)  # type: ignore[arg-type]
        except ValueError:
            return cls(quantity=str(text), amount=None)
        return cls(quantity=str(text), amount=exact(parsed.amount))

    @classmethod
    def maybe_written(cls, text: object) -> Quantity | None:
        return None if text is None else cls.written(text)


def text_of(value: Quantity | None) -> str | None:
    """The text of an optional Quantity, for the deprecated flat fields."""
    return None if value is None else value.quantity


def amount_of(value: Quantity | None) -> Decimal | None:
    return None if value is None else value.amount


@strawberry.type(description="An amount of one resource.")
class ResourceQuantity:
    resource: str
    value: Quantity
    quantity: str = strawberry.field(description=_QUANTITY_TEXT, deprecation_reason=_USE_VALUE)
    amount: Decimal | None = strawberry.field(
        description="Exact number; null if `quantity` is malformed.",
        deprecation_reason=_USE_VALUE,
    )

    @classmethod
    def holding(cls, resource: str, value: Quantity) -> ResourceQuantity:
        return cls(resource=resource, value=value, quantity=value.quantity, amount=value.amount)

    @classmethod
    def of(cls, resource: str, quantity: kube_quantity.Quantity) -> ResourceQuantity:
        return cls.holding(resource, Quantity.of(quantity))

    @classmethod
    def computed(cls, resource: str, value: Decimal) -> ResourceQuantity:
        return cls.holding(resource, Quantity.computed(value, resource))

    @classmethod
    def written(cls, resource: str, text: object) -> ResourceQuantity:
        return cls.holding(resource, Quantity.written(text))


def resource_list(resources: Mapping[str, Any] | None) -> list[ResourceQuantity]:
    """A `ResourceList` map ({cpu: "1"}) as a list, sorted by resource name."""
    return [
        ResourceQuantity.written(name, text) for name, text in sorted((resources or {}).items())
    ]


def quantities(resources: Mapping[str, kube_quantity.Quantity]) -> list[ResourceQuantity]:
    return [ResourceQuantity.of(name, q) for name, q in sorted(resources.items())]


def computed_quantities(pairs: Iterable[tuple[str, Decimal]]) -> list[ResourceQuantity]:
    """Amounts the service computed, in the order given."""
    return [ResourceQuantity.computed(name, value) for name, value in pairs]
