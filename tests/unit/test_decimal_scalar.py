"""The `Decimal` scalar: specified by URL (`@specifiedBy`, what codegen and GraphiQL show), always
plain decimal text on the wire, and strict about what it would take as input."""

from __future__ import annotations

from decimal import Decimal

import pytest
from graphql import GraphQLScalarType

from kueue_graphql.graph.quantity import DECIMAL_SPECIFIED_BY
from kueue_graphql.graph.schema import build_schema
from tests.unit.test_schema_file import SCHEMA_FILE


def decimal_type() -> GraphQLScalarType:
    scalar = build_schema()._schema.get_type("Decimal")
    assert isinstance(scalar, GraphQLScalarType)
    return scalar


def test_decimal_says_where_its_format_is_specified() -> None:
    assert decimal_type().specified_by_url == DECIMAL_SPECIFIED_BY
    assert f'scalar Decimal @specifiedBy(url: "{DECIMAL_SPECIFIED_BY}")' in SCHEMA_FILE.read_text()


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (Decimal("1E-7"), "0.0000001"),  # str() would give "1E-7"
        (Decimal("1.5E+3"), "1500"),
        (Decimal("0.500"), "0.5"),
        (Decimal("-0"), "0"),
        (Decimal("1610612736"), "1610612736"),
    ],
)
def test_decimal_serializes_as_plain_decimal_text(value: Decimal, wire: str) -> None:
    assert decimal_type().serialize(value) == wire


def test_decimal_input_is_a_plain_decimal_string() -> None:
    assert decimal_type().parse_value("-0.25") == Decimal("-0.25")
    for refused in ("NaN", "Infinity", "1e3", "01", "+1", " 1", "1.", 0.1, 3, None):
        with pytest.raises(ValueError, match="plain decimal notation"):
            decimal_type().parse_value(refused)
