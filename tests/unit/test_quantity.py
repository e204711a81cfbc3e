from decimal import Decimal

import pytest

from kueue_graphql.core.quantity import (
    QuantityFormat,
    decimal_text,
    format_quantity,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("500m", "0.5"),
        ("1", "1"),
        ("2Gi", "2147483648"),
        ("256Mi", "268435456"),
        ("1.5", "1.5"),
        ("1e3", "1000"),
        ("100u", "0.0001"),
        ("3k", "3000"),
        ("0.1", "0.1"),
        (".5", "0.5"),
        ("8Ei", str(8 * 2**60)),
    ],
)
def test_parse_is_exact(text: str, exact: str) -> None:
    assert decimal_text(parse_quantity(text).amount) == exact


def test_json_numbers_are_quantities() -> None:
    assert parse_quantity(2).amount == Decimal(2)


@pytest.mark.parametrize("bad", ["", "abc", "1Xi", "1.2.3", "--1", "1 Gi"])
def test_rejects_non_quantities(bad: str) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(bad)


def test_tenths_do_not_drift() -> None:
    total = parse_quantity("0")
    for _ in range(10):
        total = total + parse_quantity("100m")
    assert total.amount == 1
    assert format_quantity(total) == "1"


@pytest.mark.parametrize(
    ("parts", "factor", "printed"),
    [
        (["256Mi"], 3, "768Mi"),
        (["1"], 3, "3"),
        (["500m"], 2, "1"),
        (["500m"], 3, "1500m"),
        (["1Gi", "512Mi"], 1, "1536Mi"),
        (["1e3"], 2, "2e3"),
        (["1k", "1Ki"], 1, "2024"),  # mixed notations fall back to decimal SI
    ],
)
def test_sums_print_canonically(parts: list[str], factor: int, printed: str) -> None:
    total = parse_quantity(parts[0])
    for part in parts[1:]:
        total = total + parse_quantity(part)
    assert format_quantity(total * factor) == printed


def test_binary_format_is_remembered() -> None:
    assert parse_quantity("1Gi").format is QuantityFormat.BINARY_SI
    assert parse_quantity("1G").format is QuantityFormat.DECIMAL_SI
