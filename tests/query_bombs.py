"""Issue 8's query bombs, as text: shared by the unit tests, the service tests and
benchmarks/query_bomb.py. Nothing here imports the service, so the same documents can be sent
to any version of it (the regression tests were run against the code before the fix)."""

from __future__ import annotations


def fan_out(levels: int) -> str:
    """The pre-auth CPU bomb: each fragment spreads the previous one four times (4^levels
    fields once expanded; strawberry's limiters walked every path: 42.7 s for 12 levels)."""
    fragments = ["fragment F0 on Viewer { username }"] + [
        f"fragment F{i} on Viewer {{ ...F{i - 1} ...F{i - 1} ...F{i - 1} ...F{i - 1} }}"
        for i in range(1, levels + 1)
    ]
    return f"{{ viewer {{ ...F{levels} }} }} " + " ".join(fragments)


def alias_fan_out(levels: int) -> str:
    """The fan-out with two aliased fields in its innermost fragment."""
    return fan_out(levels).replace(
        "fragment F0 on Viewer { username }", "fragment F0 on Viewer { a: username b: username }"
    )


def alias_bomb(count: int) -> str:
    return "{ viewer { " + " ".join(f"a{i}: username" for i in range(count)) + " } }"


def field_bomb(count: int) -> str:
    """One field repeated: quadratic work for graphql-core's OverlappingFieldsCanBeMerged."""
    return "{ viewer { " + "username " * count + "} }"


def nesting_bomb(levels: int) -> str:
    return "{ " + "viewer { " * levels + "username" + " }" * levels + " }"


# Keyword arguments of QueryLimits lifting every measured limit but the analysis units: with
# them only the units refuse a bomb (tests), or, with the units lifted too, count it (benchmark).
EVERY_LIMIT_BUT_UNITS = {
    "max_depth": 10**6,
    "max_aliases": 10**9,
    "max_fields": 10**100,
    "max_cost": 10**100,
    "max_comparisons": 10**100,
}
