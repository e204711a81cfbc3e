"""Kubernetes resource quantities ("500m", "2Gi", "1e3") as exact numbers, and back.

Floats cannot hold 0.1 or 2^63 exactly, and quota arithmetic must not drift: Kueue compares
requests against quota exactly, so this module works in `Decimal` with enough precision for any
quantity Kubernetes accepts (at most 2^63 * 10^18 with nano precision).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext
from enum import Enum

# Enough digits for 2^63 * 1Ei expressed with nano precision, so no operation here rounds.
_EXACT = Context(prec=80)

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


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
        with localcontext(_EXACT):
            return Quantity(self.amount + other.amount, _merge_format(self.format, other.format))

    def __mul__(self, factor: int) -> Quantity:
        with localcontext(_EXACT):
            return Quantity(self.amount * factor, self.format)

    def __str__(self) -> str:
        return format_quantity(self)


def _merge_format(a: QuantityFormat, b: QuantityFormat) -> QuantityFormat:
    return a if a == b else QuantityFormat.DECIMAL_SI


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse a Kubernetes quantity string; raises ValueError when it is not one."""
    if isinstance(text, bool):
        raise ValueError(f"not a quantity: {text!r}")
    if isinstance(text, int | float):
        # JSON numbers show up where manifests wrote `cpu: 2` without quotes.
        text = repr(text) if isinstance(text, float) else str(text)
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    number, suffix = match.group("number"), match.group("suffix") or ""
    with localcontext(_EXACT):
        base = Decimal(number)
        if suffix in _BINARY:
            return Quantity(base * _BINARY[suffix], QuantityFormat.BINARY_SI)
        if suffix in _DECIMAL:
            return Quantity(base * _DECIMAL[suffix], QuantityFormat.DECIMAL_SI)
        return Quantity(base * Decimal(10) ** int(suffix[1:]), QuantityFormat.DECIMAL_EXPONENT)


def format_quantity(quantity: Quantity) -> str:
    """Print in Kubernetes' canonical style: the largest suffix that keeps the value exact."""
    amount = quantity.amount
    with localcontext(_EXACT):
        if amount == 0:
            return "0"
        sign = "-" if amount < 0 else ""
        magnitude = -amount if amount < 0 else amount
        if quantity.format is QuantityFormat.BINARY_SI and magnitude == magnitude.to_integral():
            integer = int(magnitude)
            for suffix, factor in reversed(_BINARY.items()):
                if integer >= factor and integer % factor == 0:
                    return f"{sign}{integer // factor}{suffix}"
            if integer < 1024:
                return f"{sign}{integer}"
        if quantity.format is QuantityFormat.DECIMAL_EXPONENT and magnitude == int(magnitude):
            integer, exponent = int(magnitude), 0
            while integer % 10 == 0:
                integer, exponent = integer // 10, exponent + 1
            exponent_3 = exponent - exponent % 3
            if exponent_3:
                return f"{sign}{integer * 10 ** (exponent % 3)}e{exponent_3}"
            return f"{sign}{int(magnitude)}"
        for suffix in ("E", "P", "T", "G", "M", "k", "", "m", "u", "n"):
            scaled = magnitude / _DECIMAL[suffix]
            if scaled >= 1 and scaled == scaled.to_integral():
                return f"{sign}{int(scaled)}{suffix}"
        # Finer than a nano: Kubernetes rounds up to nano precision.
        nanos = (magnitude / _DECIMAL["n"]).to_integral_value(rounding="ROUND_CEILING")
        return f"{sign}{int(nanos)}n"


def decimal_text(amount: Decimal) -> str:
    """The exact number as plain decimal text, without exponent: "0.5", "2147483648"."""
    with localcontext(_EXACT):
        if amount == amount.to_integral():
            return str(int(amount))
        return format(amount.normalize(), "f")
