"""Kubernetes quantities as exact Decimals for the diagnosis' and whatIf's arithmetic, over the
service's own parser (kueue.quantity).

The diagnosis adds, subtracts and multiplies across scales (per-pod x count, quota minus usage,
borrowing headroom) and never divides. Every parsed quantity has at most 63 significant digits
between 10^-9 and 10^124 (kueue.quantity's limits), so under `ARITHMETIC`'s 200 digits each such
sum, difference or product by a count is exact; `Inexact` is trapped there, so a result that
would round raises instead of printing a wrong number. Arithmetic on these values runs under
`ARITHMETIC` (the `exact_arithmetic` decorator, or `localcontext(ARITHMETIC)` in async code);
comparisons need no context. Parsing (with its grammar and limits) and printing are
kueue.quantity's, so a number shows the same here as anywhere else in the API.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from decimal import (
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    localcontext,
)
from typing import ParamSpec, TypeVar

from kueue_graphql.kueue import quantity as dq
from kueue_graphql.kueue.quantity import QuantityError

__all__ = [
    "ARITHMETIC",
    "ZERO",
    "QuantityError",
    "exact_arithmetic",
    "format_quantity",
    "parse_quantity",
]

ARITHMETIC = Context(
    prec=dq.EXACT.prec, traps=[InvalidOperation, DivisionByZero, Overflow, Inexact]
)
"""The context of every sum, difference and multiple of quantities: wide enough for all of them,
and raising `decimal.Inexact` rather than rounding."""

ZERO = Decimal(0)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def exact_arithmetic(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a (synchronous, non-generator) function under `ARITHMETIC`."""

    @functools.wraps(function)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with localcontext(ARITHMETIC):
            return function(*args, **kwargs)

    return run


def parse_quantity(text: str | int | float) -> Decimal:
    """Parse "500m", "1.5Gi", "2", "1e3" (or a JSON number) into its exact Decimal;
    QuantityError as kueue.quantity.parse_quantity."""
    return dq.parse_quantity(text).amount


def _binary(resource: str | None) -> bool:
    # As Kueue's resources.ResourceQuantity: memory-like resources print in binary SI.
    return resource in ("memory", "ephemeral-storage") or (
        resource is not None and resource.startswith("hugepages-")
    )


def format_quantity(value: Decimal, resource: str | None = None) -> str:
    """Print as Kubernetes would for that resource: "3", "1500m", "768Mi", "2Gi"; anything finer
    than a nano is rounded up to one, as Kubernetes does."""
    fmt = dq.QuantityFormat.BINARY_SI if _binary(resource) else dq.QuantityFormat.DECIMAL_SI
    return dq.format_quantity(dq.Quantity(value, fmt))
