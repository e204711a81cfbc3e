"""Kubernetes resource quantities ("500m", "2Gi", "1e3") as exact numbers, and back.

Parsing follows `k8s.io/apimachinery/pkg/api/resource` v0.36.3 (`ParseQuantity` and
`parseQuantityString` in quantity.go, the suffixes of suffix.go). It accepts exactly what
`ParseQuantity` accepts, within the limits below, and nothing else:

    quantity ::= sign? digits? ("." digits?)? suffix?      (not empty; ASCII digits only)
    suffix   ::= n | u | m | k | M | G | T | P | E         (10^-9 .. 10^18)
               | Ki | Mi | Gi | Ti | Pi | Ei               (2^10 .. 2^60)
               | ("e" | "E") sign? digits                  (10^exponent)

so ".5", "5.", "1.G", "+1", "1E-3" are quantities and ".", a lone "-" or "Ki" are zero, as in
Kubernetes ("Pi", "Ei" and "e-10" without a digit are not: ParseQuantity's slow path refuses
them); "1.1.M", "0.1mi", "1i", "1 " are not. Surrounding whitespace is trimmed, as the API
server's JSON decoding does (`Quantity.UnmarshalJSON`).

The value is what the API server stores for it: a non-zero amount finer than a nano is rounded
up (away from zero) to a whole number of nanos ("0.5n" -> 1n, "3.001n" -> 4n); a binary-SI
amount beyond 2^63-1 is capped at 2^63-1 ("9Ei"), and one between 0 and 1 is decimal SI.

Limits of this service (`ParseQuantity` has none; its exponent is an int64 cut to int32):
- at most `MAX_LENGTH` (64) characters once trimmed; the longest quantity Kubernetes prints for
  an int64 at nano scale has 30;
- a written exponent within +-`MAX_EXPONENT` (64), zero included ("0e100" is refused).
Inside them every value has at most 63 significant digits between 10^-9 and 10^124, so parsing is
one anchored match over at most 64 characters and arithmetic on numbers of at most 133 digits:
no power is taken of a written exponent, and nothing is computed before the bounds are checked
(`1e-1000000` once cost more than a minute of CPU, `1e4300` an INTERNAL error).

Arithmetic is exact: `Decimal` with `EXACT`'s 200 digits, room for sums and multiples of any
quantity admitted here. Printing follows Kubernetes' canonical form (`CanonicalizeBytes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_UP, Context, Decimal, localcontext
from enum import Enum

__all__ = [
    "EXACT",
    "MAX_EXPONENT",
    "MAX_LENGTH",
    "QUANTITY_SYNTAX",
    "Quantity",
    "QuantityError",
    "QuantityFormat",
    "decimal_text",
    "format_quantity",
    "parse_quantity",
]

MAX_LENGTH = 64
MAX_EXPONENT = 64
# Kubernetes' cap on a binary-SI amount (apimachinery math.go `maxAllowed`, int64's maximum).
MAX_BINARY = Decimal(2**63 - 1)

# Room for 133 digits of any admitted value plus sums and multiples: no operation here rounds.
EXACT = Context(prec=200)

QUANTITY_SYNTAX = (
    "a Kubernetes quantity is a decimal number with an optional suffix: n, u, m, k, M, G, T, P, "
    "E (powers of 10), Ki, Mi, Gi, Ti, Pi, Ei (powers of 2) or e<exponent> (within "
    f"+-{MAX_EXPONENT}), at most {MAX_LENGTH} characters, e.g. 500m, 2Gi, 1.5, 1e3"
)

_NANO = Decimal("1e-9")
_DECIMAL_EXPONENT = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_EXPONENT = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL_EXPONENT.items()}
_BINARY_SUFFIX = {exponent // 10: suffix for suffix, exponent in _BINARY_EXPONENT.items()}
# parseQuantityString's scan as one pattern; no nested repetition, so matching is linear.
_GRAMMAR = re.compile(
    r"(?P<sign>[+-]?)(?P<integer>[0-9]*)(?:\.(?P<fraction>[0-9]*))?"
    r"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE](?P<exponent>[+-]?[0-9]+))?"
)
# A JSON integer of more bits has more than MAX_LENGTH digits: refused before str() is taken.
_MAX_INT_BITS = 4 * MAX_LENGTH


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity, or is one beyond this service's limits."""


class QuantityFormat(Enum):
    """How a quantity was written; sums keep the format of their inputs, as Kubernetes does."""

    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


@dataclass(frozen=True)
class Quantity:
    """An exact amount plus the notation used to print it."""

    amount: Decimal
    format: QuantityFormat = QuantityFormat.DECIMAL_SI

    def __add__(self, other: Quantity) -> Quantity:
        with localcontext(EXACT):
            return Quantity(self.amount + other.amount, _merge_format(self.format, other.format))

    def __mul__(self, factor: int) -> Quantity:
        with localcontext(EXACT):
            return Quantity(self.amount * factor, self.format)

    def __str__(self) -> str:
        return format_quantity(self)


def _merge_format(a: QuantityFormat, b: QuantityFormat) -> QuantityFormat:
    return a if a == b else QuantityFormat.DECIMAL_SI


def _text(value: str | int | float) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, float):
        return repr(value)  # at most 24 characters; inf and nan fail the grammar
    if isinstance(value, int):
        # JSON numbers show up where manifests wrote `cpu: 2` without quotes.
        if value.bit_length() > _MAX_INT_BITS:
            raise QuantityError(f"longer than {MAX_LENGTH} characters")
        return str(value)
    return value.strip()


def parse_quantity(value: str | int | float) -> Quantity:
    """Parse a Kubernetes quantity (or a JSON number); QuantityError when it is not one or is
    beyond the limits above. The message shows the text only when it is within MAX_LENGTH."""
    text = _text(value)
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"longer than {MAX_LENGTH} characters ({len(text)})")
    match = _GRAMMAR.fullmatch(text) if text else None
    if match is None:
        raise QuantityError(f"{text!r} is not a Kubernetes quantity")
    suffix = match["suffix"] or ""
    fraction = match["fraction"] or ""
    if suffix in _BINARY_EXPONENT:
        quantity_format, exponent = QuantityFormat.BINARY_SI, 0
    elif suffix in _DECIMAL_EXPONENT:
        quantity_format, exponent = QuantityFormat.DECIMAL_SI, _DECIMAL_EXPONENT[suffix]
    else:
        quantity_format, exponent = QuantityFormat.DECIMAL_EXPONENT, int(match["exponent"])
        if not -MAX_EXPONENT <= exponent <= MAX_EXPONENT:
            raise QuantityError(
                f"{text!r}: exponent {exponent} is outside -{MAX_EXPONENT}..{MAX_EXPONENT}"
            )
    if not match["integer"] + fraction and (suffix in ("Pi", "Ei") or exponent < -9):
        # No digit reads as 0 in parseQuantityString, but where ParseQuantity leaves its int64
        # fast path (these suffixes) inf.Dec refuses the empty number.
        raise QuantityError(f"{text!r} is not a Kubernetes quantity")
    digits = (match["integer"] + fraction).lstrip("0") or "0"
    negative = match["sign"] == "-" and digits != "0"
    # Built from its digits and exponent (at most 63 and |64 + 63|): no power is computed.
    amount = Decimal((int(negative), tuple(map(int, digits)), exponent - len(fraction)))
    with localcontext(EXACT):
        if quantity_format is QuantityFormat.BINARY_SI:
            amount *= 2 ** _BINARY_EXPONENT[suffix]
        if amount and _exponent(amount) < -9:
            amount = amount.quantize(_NANO, rounding=ROUND_UP)
        if quantity_format is QuantityFormat.BINARY_SI:
            if amount.copy_abs() > MAX_BINARY:
                amount = MAX_BINARY.copy_sign(amount)
            elif 0 < amount.copy_abs() < 1:
                quantity_format = QuantityFormat.DECIMAL_SI
    return Quantity(amount, quantity_format)


def _exponent(finite: Decimal) -> int:
    exponent = finite.as_tuple().exponent
    assert isinstance(exponent, int), "finite amounts only"
    return exponent


def _canonical(magnitude: Decimal) -> tuple[str, int]:
    """(digits, exponent) with magnitude = digits * 10^exponent, trailing zeros moved into the
    exponent and the exponent lowered to a multiple of 3 (apimachinery amount.go
    `AsCanonicalBytes`). String work only, so any finite size prints."""
    exponent = _exponent(magnitude)
    digits = "".join(map(str, magnitude.as_tuple().digits))
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    down = exponent % 3
    return stripped + "0" * down, exponent - down


def _round_up_to_nano(magnitude: Decimal) -> Decimal:
    if _exponent(magnitude) >= -9:
        return magnitude
    # A context as wide as the number, so no sum here can hit a precision limit.
    context = Context(prec=max(EXACT.prec, magnitude.adjusted() + 12))
    return magnitude.quantize(_NANO, rounding=ROUND_UP, context=context)


def _binary_text(magnitude: Decimal) -> str | None:
    """As Kubernetes prints a binary-SI amount: a whole number with the largest binary suffix
    that divides it; None where it prints decimal SI instead (below 1024, or a fraction)."""
    if magnitude < 1024 or magnitude.adjusted() >= EXACT.prec:  # no int of a huge sum
        return None
    if _exponent(magnitude) < 0 and magnitude != magnitude.to_integral_value(context=EXACT):
        return None
    integer, power = int(magnitude), 0
    while power < 6 and integer % 1024 == 0:
        integer, power = integer // 1024, power + 1
    return f"{integer}{_BINARY_SUFFIX.get(power, '')}"


def format_quantity(quantity: Quantity) -> str:
    """Print in Kubernetes' canonical form (`Quantity.String`): "1500m", "1536Mi", "2e3".

    Like Kubernetes, a decimal amount gets the exponent (a multiple of 3) that leaves a whole
    mantissa, anything finer than a nano rounds up to one. Beyond Kubernetes: decimal SI above
    10^18 keeps the suffix E ("1000E"; Kubernetes would drop the suffix), binary above Ei stays
    in Ei. Never raises on a finite amount."""
    amount = quantity.amount
    if amount.is_zero():
        return "0"
    sign = "-" if amount.is_signed() else ""
    magnitude = _round_up_to_nano(amount.copy_abs())  # abs() would round to the context
    if quantity.format is QuantityFormat.BINARY_SI:
        binary = _binary_text(magnitude)
        if binary is not None:
            return sign + binary
    digits, exponent = _canonical(magnitude)
    if quantity.format is QuantityFormat.DECIMAL_EXPONENT:
        return f"{sign}{digits}e{exponent}" if exponent else sign + digits
    if exponent > 18:
        digits, exponent = digits + "0" * (exponent - 18), 18
    return f"{sign}{digits}{_DECIMAL_SUFFIX[exponent]}"


def decimal_text(amount: Decimal) -> str:
    """The exact number as plain decimal text, without exponent: "0.5", "2147483648"."""
    text = format(amount, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
