"""Kubernetes resource quantities as exact fractions.

Kueue compares quantities as int64 milli-units (CPU) or units; Fractions keep that exactness
without choosing a scale up front, so "500m" x 3 is exactly 3/2 and never 1.4999999.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["QuantityError", "format_quantity", "parse_quantity"]


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse "500m", "1.5Gi", "2", "1e3" (or a JSON number) into an exact Fraction."""
    if isinstance(text, bool):
        raise QuantityError(f"not a quantity: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"not a quantity: {text!r}")
    number = Fraction(match.group("number"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def format_quantity(value: Fraction) -> str:
    """Render a value the way kubectl would show it: "3", "1500m", "768Mi", "2Gi".

    Binary suffixes are used only for exact multiples of 1024 from Ki up, which is how memory
    quantities written with Mi/Gi come back after arithmetic.
    """
    if value < 0:
        return "-" + format_quantity(-value)
    if value.denominator == 1:
        whole = value.numerator
        if whole >= 1024:
            for suffix, factor in reversed(_BINARY.items()):
                if whole % factor == 0:
                    return f"{whole // factor}{suffix}"
        return str(whole)
    for suffix, factor in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        scaled = value * factor
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    # Kubernetes rounds sub-nano quantities up; show that, never a float.
    nanos = -((-value.numerator * 10**9) // value.denominator)
    return f"{nanos}n"
