"""kueue.quantity against Kubernetes' own parser and printer.

The tables are k8s.io/apimachinery v0.36.3 pkg/api/resource/quantity_test.go (TestQuantityParse,
its `invalid` list, TestParseQuantityString, TestQuantityString, TestQuantityParseEmit), each
expected value written as the exact number `decQuantity(mantissa, scale, format)` stands for.
"""

from __future__ import annotations

import tracemalloc
from decimal import Decimal, Inexact

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_graphql.kueue import exact as exact_quantity
from kueue_graphql.kueue.podsets import PodSetRequest, total_needs
from kueue_graphql.kueue.quantity import (
    MAX_EXPONENT,
    MAX_LENGTH,
    Quantity,
    QuantityError,
    QuantityFormat,
    decimal_text,
    format_quantity,
    parse_quantity,
)

BIN, DEC, EXP = QuantityFormat.BINARY_SI, QuantityFormat.DECIMAL_SI, QuantityFormat.DECIMAL_EXPONENT
MAX_INT64 = str(2**63 - 1)

# TestQuantityParse's table: (input, the exact value, format).
K8S_PARSE = [
    ("0", "0", DEC),
    ("0n", "0", DEC),
    ("0u", "0", DEC),
    ("0m", "0", DEC),
    ("0Ki", "0", BIN),
    ("0k", "0", DEC),
    ("0Mi", "0", BIN),
    ("0M", "0", DEC),
    ("0Gi", "0", BIN),
    ("0G", "0", DEC),
    ("0Ti", "0", BIN),
    ("0T", "0", DEC),
    # Quantity less numbers are allowed
    ("1", "1", DEC),
    # Binary suffixes
    ("1Ki", "1024", BIN),
    ("8Ki", "8192", BIN),
    ("7Mi", "7340032", BIN),
    ("6Gi", "6442450944", BIN),
    ("5Ti", "5497558138880", BIN),
    ("4Pi", "4503599627370496", BIN),
    ("3Ei", "3458764513820540928", BIN),
    ("10Ti", "10995116277760", BIN),
    ("100Ti", "109951162777600", BIN),
    # Decimal suffixes
    ("5n", "0.000000005", DEC),
    ("4u", "0.000004", DEC),
    ("3m", "0.003", DEC),
    ("9", "9", DEC),
    ("8k", "8000", DEC),
    ("50k", "50000", DEC),
    ("7M", "7000000", DEC),
    ("6G", "6000000000", DEC),
    ("5T", "5000000000000", DEC),
    ("40T", "40000000000000", DEC),
    ("300T", "300000000000000", DEC),
    ("2P", "2000000000000000", DEC),
    ("1E", "1000000000000000000", DEC),
    # Decimal exponents
    ("1E-3", "0.001", EXP),
    ("1e3", "1000", EXP),
    ("1E6", "1000000", EXP),
    ("1e9", "1000000000", EXP),
    ("1E12", "1000000000000", EXP),
    ("1e15", "1000000000000000", EXP),
    ("1E18", "1000000000000000000", EXP),
    # Nonstandard but still parsable
    ("1e14", "100000000000000", EXP),
    ("1e13", "10000000000000", EXP),
    ("100.035k", "100035", DEC),
    # Things that look like floating point
    ("0.001", "0.001", DEC),
    ("0.0005k", "0.5", DEC),
    ("0.005", "0.005", DEC),
    ("0.05", "0.05", DEC),
    ("0.5", "0.5", DEC),
    ("0.00050k", "0.5", DEC),
    ("0.00500", "0.005", DEC),
    ("0.05000", "0.05", DEC),
    ("0.50000", "0.5", DEC),
    ("0.5e0", "0.5", EXP),
    ("0.5e-1", "0.05", EXP),
    ("0.5e-2", "0.005", EXP),
    ("10.035M", "10035000", DEC),
    ("1.2e3", "1200", EXP),
    ("1.3E+6", "1300000", EXP),
    ("1.40e9", "1400000000", EXP),
    ("1.53E12", "1530000000000", EXP),
    ("1.6e15", "1600000000000000", EXP),
    ("1.7E18", "1700000000000000000", EXP),
    ("9.01", "9.01", DEC),
    ("8.1k", "8100", DEC),
    ("7.123456M", "7123456", DEC),
    ("6.987654321G", "6987654321", DEC),
    ("5.444T", "5444000000000", DEC),
    ("40.1T", "40100000000000", DEC),
    ("300.2T", "300200000000000", DEC),
    ("2.5P", "2500000000000000", DEC),
    ("1.01E", "1010000000000000000", DEC),
    # Things that saturate/round
    ("3.001n", "0.000000004", DEC),
    ("1.1E-9", "0.000000002", EXP),
    ("0.0000000001", "0.000000001", DEC),
    ("0.0000000005", "0.000000001", DEC),
    ("0.00000000050", "0.000000001", DEC),
    ("0.5e-9", "0.000000001", EXP),
    ("0.9n", "0.000000001", DEC),
    ("0.00000012345", "0.000000124", DEC),
    ("0.00000012354", "0.000000124", DEC),
    ("9Ei", MAX_INT64, BIN),
    ("9223372036854775807Ki", MAX_INT64, BIN),
    ("12E", "12000000000000000000", DEC),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", "102435.84", BIN),
    ("0.5Mi", "524288", BIN),
    ("0.05Gi", "53687091.2", BIN),
    ("0.025Ti", "27487790694.4", BIN),
    # Things written by trolls
    ("0.000000000001Ki", "0.000000002", DEC),  # rounds up, changes format
    (".001", "0.001", DEC),
    (".0001k", "0.1", DEC),
    ("1.", "1", DEC),
    ("1.G", "1000000000", DEC),
]


@pytest.mark.parametrize(("text", "exact", "quantity_format"), K8S_PARSE)
def test_parses_as_kubernetes_does(text: str, exact: str, quantity_format: QuantityFormat) -> None:
    # As TestQuantityParse: the value and format, then with a "-" and with a "+" in front.
    for sign, expected in (("", exact), ("-", f"-{exact}"), ("+", exact)):
        parsed = parse_quantity(sign + text)
        assert decimal_text(parsed.amount) == (exact if exact == "0" else expected)
        assert parsed.format is quantity_format


@pytest.mark.parametrize(
    "bad",
    # TestQuantityParse's `invalid` list, then ParseQuantity's empty string.
    [
        *["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", ""],
        # Suffixes ParseQuantity's scanner reads but `interpret` refuses; the exponent of
        # suffix.go is digits after an optional sign; non-ASCII digits are not digits.
        *["1e", "1E+", "1K", "1k5", "1ee5", "1e5.5", "1e1.5", "--1", "1 Gi"],
        *["\u0661", "1e\u0663"],  # ARABIC-INDIC DIGIT ONE, THREE
        # No digit is 0 only on ParseQuantity's int64 fast path (see the zero test below).
        *["Pi", "Ei", "-Ei", ".Pi", "e-10", "-.E-12"],
    ],
)
def test_refuses_what_kubernetes_refuses(bad: str) -> None:
    with pytest.raises(QuantityError, match="is not a Kubernetes quantity"):
        parse_quantity(bad)


def test_surrounding_whitespace_is_trimmed_as_the_api_server_reads_json() -> None:
    # ParseQuantity refuses " 1" and "1 "; Quantity.UnmarshalJSON trims them first.
    assert parse_quantity(" 1 ").amount == 1
    assert parse_quantity("\t500m\n").amount == Decimal("0.5")


@pytest.mark.parametrize(
    "zero", [".", "-.", "+", "-", "Ki", "Ti", "m", "n", "e5", "e-9", "0e-64", "-0", "0Ei"]
)
def test_bare_signs_points_and_suffixes_are_zero_as_in_kubernetes(zero: str) -> None:
    # TestParseQuantityString: "." and "-." scan as the number 0; parseQuantityString makes an
    # empty numerator "0", so a sign or suffix alone is zero too.
    parsed = parse_quantity(zero)
    assert parsed.amount == 0
    assert format_quantity(parsed) == "0"
    assert decimal_text(parsed.amount) == "0"


def _quantity(mantissa: int, scale: int, quantity_format: QuantityFormat) -> Quantity:
    return Quantity(Decimal(mantissa).scaleb(scale), quantity_format)


# TestQuantityString's table: decQuantity(mantissa, scale, format), canonical, alternate.
K8S_STRING = [
    (1024 * 1024 * 1024, 0, BIN, "1Gi", "1024Mi"),
    (300 * 1024 * 1024, 0, BIN, "300Mi", "307200Ki"),
    (6 * 1024, 0, BIN, "6Ki", ""),
    (1001 * 1024 * 1024 * 1024, 0, BIN, "1001Gi", "1025024Mi"),
    (1024 * 1024 * 1024 * 1024, 0, BIN, "1Ti", "1024Gi"),
    (5, 0, BIN, "5", "5000m"),
    (500, -3, BIN, "500m", "0.5"),
    (1, 9, DEC, "1G", "1000M"),
    (1000, 6, DEC, "1G", "0.001T"),
    (1000000, 3, DEC, "1G", ""),
    (1000000000, 0, DEC, "1G", ""),
    (1, -3, DEC, "1m", "1000u"),
    (80, -3, DEC, "80m", ""),
    (1080, -3, DEC, "1080m", "1.08"),
    (108, -2, DEC, "1080m", "1080000000n"),
    (10800, -4, DEC, "1080m", ""),
    (300, 6, DEC, "300M", ""),
    (1, 12, DEC, "1T", ""),
    (1234567, 6, DEC, "1234567M", ""),
    (1234567, -3, BIN, "1234567m", ""),
    (3, 3, DEC, "3k", ""),
    (1025, 0, BIN, "1025", ""),
    (0, 0, DEC, "0", ""),
    (0, 0, BIN, "0", ""),
    (1, 9, EXP, "1e9", ".001e12"),
    (1, -3, EXP, "1e-3", "0.001e0"),
    (1, -9, EXP, "1e-9", "1000e-12"),
    (80, -3, EXP, "80e-3", ""),
    (300, 6, EXP, "300e6", ""),
    (1, 12, EXP, "1e12", ""),
    (1, 3, EXP, "1e3", ""),
    (3, 3, EXP, "3e3", ""),
    (0, 0, EXP, "0", "00"),
    (1, -9, DEC, "1n", ""),
    (80, -9, DEC, "80n", ""),
    (1080, -9, DEC, "1080n", ""),
    (108, -8, DEC, "1080n", ""),
    (10800, -10, DEC, "1080n", ""),
    (1, -6, DEC, "1u", ""),
    (80, -6, DEC, "80u", ""),
    (1080, -6, DEC, "1080u", ""),
]


@pytest.mark.parametrize(
    ("mantissa", "scale", "quantity_format", "canonical", "alternate"), K8S_STRING
)
def test_prints_as_kubernetes_does(
    mantissa: int, scale: int, quantity_format: QuantityFormat, canonical: str, alternate: str
) -> None:
    quantity = _quantity(mantissa, scale, quantity_format)
    assert format_quantity(quantity) == canonical
    assert format_quantity(parse_quantity(canonical)) == canonical
    if alternate:
        assert format_quantity(parse_quantity(alternate)) == canonical
    if mantissa:
        assert format_quantity(_quantity(-mantissa, scale, quantity_format)) == f"-{canonical}"


@pytest.mark.parametrize(
    ("text", "canonical"),
    # TestQuantityParseEmit
    [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
    ],
)
def test_parse_then_print_as_kubernetes_does(text: str, canonical: str) -> None:
    assert format_quantity(parse_quantity(text)) == canonical
    assert format_quantity(parse_quantity(f"-{text}")) == f"-{canonical}"


# -- the limits, and what they cost -----------------------------------------------------------


def test_length_limit() -> None:
    longest = "1" * MAX_LENGTH
    assert parse_quantity(longest).amount == int(longest)
    with pytest.raises(QuantityError, match=f"longer than {MAX_LENGTH} characters \\(5000\\)"):
        parse_quantity("1" * 5000)
    with pytest.raises(QuantityError, match=f"longer than {MAX_LENGTH}"):
        parse_quantity((10**5000 - 1) // 9)  # a JSON number past Python's int-to-text limit


@pytest.mark.parametrize("exponent", [MAX_EXPONENT + 1, 4300, 100_000, 10**30])
def test_exponent_limit(exponent: int) -> None:
    assert parse_quantity(f"1e{MAX_EXPONENT}").amount == Decimal(10) ** MAX_EXPONENT
    assert format_quantity(parse_quantity(f"1e-{MAX_EXPONENT}")) == "1e-9"  # rounded up
    for text in (f"1e{exponent}", f"1E-{exponent}", f"0e+{exponent}"):
        with pytest.raises(QuantityError, match=r"is outside -64\.\.64"):
            parse_quantity(text)


HOSTILE = [
    "1e-100000",
    "1e-1000000",
    "1e4300",
    "1" * 5000,
    "9" * 64,
    "0." + "0" * 60 + "1",
    "9" * 60 + "e64",
    "0." + "9" * 58 + "e-64",
    "9" * 62 + "E",
    "9" * 62 + "Ei",
    "." + "9" * 61 + "Ki",
    "1e-" + "9" * 60,
    "1" + "." * 5000,
    "1e" + "9" * 5000,
]


@pytest.mark.parametrize("text", HOSTILE)
def test_cost_is_bounded_whatever_the_text(text: str) -> None:
    # Work counted in memory, not in time: parsing, the Decimal the diagnosis works with and
    # printing it allocate a few KiB at most, whatever the exponent. The old parser built
    # 10^1000000 for "1e-1000000" (over 400 KiB here, minutes of gcd in the diagnosis).
    tracemalloc.start()
    try:
        try:
            value = exact_quantity.parse_quantity(text)
        except QuantityError:
            value = None
        if value is not None:
            exact_quantity.format_quantity(
                exact_quantity.ARITHMETIC.multiply(value, 100_000), "memory"
            )
            decimal_text(value)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
    if value is not None:
        assert abs(value) < 10**125
        assert value.as_integer_ratio()[1] <= 10**9


def _grammar_text() -> st.SearchStrategy[str]:
    digits = st.text("0123456789", max_size=70)
    suffix = st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E"])
    suffix |= st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
    suffix |= st.builds(
        lambda e, sign, n: f"{e}{sign}{n}",
        st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]),
        st.integers(0, 10**6),
    )
    return st.builds(
        lambda sign, whole, point, fraction, end: f"{sign}{whole}{point}{fraction}{end}",
        st.sampled_from(["", "+", "-"]),
        digits,
        st.sampled_from(["", "."]),
        digits,
        suffix,
    )


@settings(max_examples=400, deadline=None)
@given(_grammar_text() | st.text(max_size=80))
def test_any_text_is_refused_or_round_trips(text: str) -> None:
    try:
        parsed = parse_quantity(text)
    except QuantityError:
        return
    # Admitted: bounded in size, nano-exact, and its canonical text is itself admitted and
    # means the same (Kubernetes' own property: String() parses back to the value).
    assert parsed.amount == 0 or Decimal("1e-9") <= abs(parsed.amount) < Decimal("1e125")
    exponent = parsed.amount.as_tuple().exponent
    assert parsed.amount == 0 or (isinstance(exponent, int) and exponent >= -9)
    printed = format_quantity(parsed)
    assert parse_quantity(printed).amount == parsed.amount
    assert Decimal(decimal_text(parsed.amount)) == parsed.amount
    # Sums and multiples print too (W2: no int beyond Python's 4300-digit limit).
    format_quantity(parsed * 100_000 + parsed)
    decimal_text((parsed * 100_000).amount)


# -- JSON numbers, arithmetic ------------------------------------------------------------------


def test_json_numbers_are_quantities() -> None:
    assert parse_quantity(2).amount == Decimal(2)
    assert parse_quantity(1.5).amount == Decimal("1.5")
    for bad in (True, float("inf"), float("nan"), 1e300):
        with pytest.raises(QuantityError):
            parse_quantity(bad)


def test_exact_wrapper_parses_and_refuses_the_same() -> None:
    assert exact_quantity.parse_quantity("1536Mi") == Decimal(1536 * 2**20)
    assert exact_quantity.format_quantity(Decimal("1.5"), "cpu") == "1500m"
    assert exact_quantity.format_quantity(Decimal(3 * 2**29), "memory") == "1536Mi"
    with pytest.raises(exact_quantity.QuantityError, match="outside"):
        exact_quantity.parse_quantity("1e4300")


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
        (["8Ei"], 2, "18446744073709551614"),  # capped at 2^63-1 each, as Kubernetes parses
        (["1e64"], 100_000, "1e69"),
        (["999E"], 1, "999E"),
        (["1000E"], 1, "1000E"),  # Kubernetes would print "1", dropping the suffix
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
    assert parse_quantity("0.5Ki").format is QuantityFormat.BINARY_SI  # 512, at least 1
    assert parse_quantity("0.0005Ki").format is QuantityFormat.DECIMAL_SI  # below 1


def test_diagnosis_arithmetic_is_exact_for_the_widest_quantities() -> None:
    # 63 significant digits each: the default 28-digit context would round these sums.
    big = exact_quantity.parse_quantity("9" * 54 + "e64")
    nano = exact_quantity.parse_quantity("1n")
    needs = total_needs(
        [
            PodSetRequest("a", 1, {"cpu": big}, {"cpu": big}, {}, "spec"),
            PodSetRequest("b", 1, {"cpu": nano}, {"cpu": nano}, {}, "spec"),
        ]
    )
    assert needs["cpu"] == Decimal("9" * 54 + "0" * 64 + "." + "0" * 8 + "1")
    with pytest.raises(Inexact):  # where a result would round, it raises instead
        exact_quantity.ARITHMETIC.add(Decimal("1e300"), nano)
