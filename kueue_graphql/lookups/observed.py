"""A read as the diagnosis sees it: the value, or what kept it from the caller (Forbidden,
with the verb kubectl would need) or what was not there (Absent), instead of an exception."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from kueue_graphql import diagnosis as dx
from kueue_graphql.core.errors import ForbiddenError, NotFoundError

T = TypeVar("T")


async def observe(read: Awaitable[T]) -> T | dx.Forbidden | dx.Absent:
    try:
        return await read
    except ForbiddenError as error:
        return dx.Forbidden(str(error))
    except NotFoundError as error:
        return dx.Absent(str(error))
