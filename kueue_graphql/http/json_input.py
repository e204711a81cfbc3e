"""JSON from callers (HTTP bodies, WebSocket messages), decoded with bounded cost.

The input is already within the size cap (http/document_size.py). Python's parser recurses per
nesting level (RecursionError at ~1,000 levels) and refuses integers over 4,300 digits
(ValueError): both are bad input like a syntax error, and a value nested deeper than
`max_depth` is refused once decoded (counted without recursion).
"""

from __future__ import annotations

import json


class JsonInputError(ValueError):
    """The input is not JSON the server accepts; the message says why (never echoes it)."""


def json_depth(value: object) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (iterative: no recursion)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def decode_json(data: str | bytes, max_depth: int, what: str) -> object:
    """`data` decoded; JsonInputError naming `what` ("the request body", "the message") when
    it is not JSON, nests deeper than `max_depth`, or holds a number Python refuses."""
    too_deep = f"{what} nests more than {max_depth} levels deep"
    try:
        parsed = json.loads(data)
    except RecursionError as error:
        raise JsonInputError(too_deep) from error
    except ValueError as error:
        raise JsonInputError(f"{what} is not valid JSON") from error
    if json_depth(parsed) > max_depth:
        raise JsonInputError(too_deep)
    return parsed
