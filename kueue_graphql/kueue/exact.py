"""Kubernetes quantities as exact Fractions, over the service's own parser (kueue.quantity).

The diagnosis does arithmetic across scales (per-pod x count, quota minus usage, borrowing
headroom), so it works in Fractions; parsing (with its grammar and limits) and printing are
kueue.quantity's, so a number shows the same here as anywhere else in the API.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

from kueue_graphql.kueue import quantity as dq
from kueue_graphql.kueue.quantity import QuantityError

__all__ = ["QuantityError", "as_decimal", "format_quantity", "parse_quantity"]


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse "500m", "1.5Gi", "2", "1e3" (or a JSON number) into an exact Fraction;
    QuantityError as kueue.quantity.parse_quantity."""
    return Fraction(dq.parse_quantity(text).amount)


def as_decimal(value: Fraction) -> Decimal:
    """The Fraction as a Decimal, exact for sums and multiples of parsed quantities."""
    with localcontext(dq.EXACT):
        return Decimal(value.numerator) / Decimal(value.denominator)


def _binary(resource: str | None) -> bool:
    # As Kueue's resources.ResourceQuantity: memory-like resources print in binary SI.
    return resource in ("memory", "ephemeral-storage") or (
        resource is not None and resource.startswith("hugepages-")
    )


def format_quantity(value: Fraction, resource: str | None = None) -> str:
    """Print as Kubernetes would for that resource: "3", "1500m", "768Mi", "2Gi".

    Values here are sums and multiples of parsed quantities, so they are exact in decimal;
    anything finer than a nano is rounded up to one, as Kubernetes does.
    """
    fmt = dq.QuantityFormat.BINARY_SI if _binary(resource) else dq.QuantityFormat.DECIMAL_SI
    return dq.format_quantity(dq.Quantity(as_decimal(value), fmt))
