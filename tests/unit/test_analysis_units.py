"""The accept/refuse decision on a query is made in work units, never by a clock.

The analysis budget used to be 50 ms of thread CPU time: the same legitimate query (every
Diagnosis field to depth 3) was answered on an idle server and refused on a loaded one (issue
22, N3). Here the clocks jump forward enormously on every reading, as on the slowest machine
imaginable, or refuse to be read at all: the decisions are the same, and so are the units.
"""

from __future__ import annotations

import functools
import itertools
import re
import time
from pathlib import Path

import pytest
import strawberry
from graphql import parse, specified_rules

from kueue_graphql.cli import _parser, main
from kueue_graphql.cli.serve import settings_from
from kueue_graphql.graph.query_cost import QueryLimits, QueryRefusedError, measure_document
from kueue_graphql.graph.schema import DocumentChecks, build_schema
from tests.legit_queries import diagnosis_query, docs_queries
from tests.query_bombs import (
    EVERY_LIMIT_BUT_UNITS,
    alias_bomb,
    alias_fan_out,
    fan_out,
    field_bomb,
    nesting_bomb,
)

RULES = tuple(specified_rules)
CLOCKS = ("thread_time", "process_time", "perf_counter", "monotonic", "time")
DOC = Path(__file__).resolve().parents[2] / "docs" / "service.md"


@functools.cache
def schema_with(limits: QueryLimits) -> strawberry.Schema:
    return build_schema(limits)


def analysed(query: str, limits: QueryLimits | None = None) -> list[str]:
    """The refusals of `query` as the server analyses it (parse, measure, validate; the
    analysis keeps nothing, so one schema serves every call)."""
    strawberry_schema = schema_with(limits or QueryLimits())
    checks: DocumentChecks = strawberry_schema.checks  # type: ignore[attr-defined]
    _, errors = checks.analyse(strawberry_schema._schema, query, RULES)
    return [error.message for error in errors]


def legitimate() -> str:
    return diagnosis_query(schema_with(QueryLimits())._schema)


def units(text: str) -> int:
    return measure_document(parse(text), QueryLimits()).units


def bombs() -> list[str]:
    return [fan_out(12), fan_out(40), alias_fan_out(12), field_bomb(1900), alias_bomb(600)]


def slow(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> None:
    """Every reading of these clocks is 1,000 s after the previous one."""
    for name in names:
        readings = itertools.count(start=1000.0, step=1000.0)
        monkeypatch.setattr(time, name, lambda readings=readings: next(readings))


async def test_a_legitimate_query_is_accepted_however_slow_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Regression (issue 22, N3): "the query is too expensive to analyse (over 50 ms)" before,
    # as on a loaded server. Through DocumentChecks.check, the server's path (thread, timer):
    # the event loop's own clock (monotonic) is left alone, the CPU clocks jump.
    query = legitimate()
    slow(monkeypatch, ("thread_time", "process_time", "perf_counter"))
    strawberry_schema = build_schema()
    checks: DocumentChecks = strawberry_schema.checks  # type: ignore[attr-defined]
    analysis = await checks.check(strawberry_schema._schema, query, RULES)
    assert [error.message for error in analysis.errors] == []


@pytest.mark.parametrize("clock", ["jumping", "unreadable"])
def test_decisions_and_units_do_not_depend_on_any_clock(
    monkeypatch: pytest.MonkeyPatch, clock: str
) -> None:
    queries = [legitimate(), *(text for _, text in docs_queries()), *bombs()]
    expected = [analysed(query) for query in queries]
    counted = units(legitimate())
    if clock == "jumping":
        slow(monkeypatch, CLOCKS)
    else:

        def unreadable() -> float:
            raise AssertionError("the analysis read a clock")

        for name in CLOCKS:
            monkeypatch.setattr(time, name, unreadable)
    assert [analysed(query) for query in queries] == expected
    assert units(legitimate()) == counted
    assert expected[0] == [], "the legitimate query is accepted"
    assert all(expected[-len(bombs()) :]), "every bomb is refused"


def test_the_units_count_what_the_analysis_visits() -> None:
    # viewer, two spreads of A, A's two fields once: 5 selections; in viewer's set `a` and
    # `groups` twice each and one pair of spreads: 3 comparisons.
    document = parse("{ viewer { ...A ...A } } fragment A on Viewer { a: username groups }")
    assert measure_document(document, QueryLimits()).units == 5 + 3
    # Arguments' values count; an unused fragment is validated, so it counts too.
    document = parse(
        '{ diagnose(namespace: "a", kind: "b", name: "c") { stage } } '
        "fragment U on Viewer { groups }"
    )
    assert measure_document(document, QueryLimits()).units == 2 + 3 + 1
    # A sum over operations, not the largest.
    one = measure_document(parse("{ viewer { username groups } }"), QueryLimits()).units
    two = "query A { viewer { username groups } } query B { viewer { username groups } }"
    assert measure_document(parse(two), QueryLimits()).units == 2 * one


def test_every_docs_query_is_accepted_with_the_default_limits() -> None:
    refused = {where: errors for where, text in docs_queries() if (errors := analysed(text))}
    assert refused == {}


@pytest.mark.parametrize(
    "bomb",
    [fan_out(12), fan_out(20), fan_out(40), alias_fan_out(12), field_bomb(1900)],
    ids=["fan-out-12", "fan-out-20", "fan-out-40", "alias-fan-out-12", "field-bomb-1900"],
)
def test_bombs_are_refused_by_units(bomb: str) -> None:
    # With every other measured limit lifted, the units alone refuse them, in the walk.
    lifted = QueryLimits(**EVERY_LIMIT_BUT_UNITS)
    with pytest.raises(QueryRefusedError, match="too expensive to analyse") as refused:
        measure_document(parse(bomb), lifted)
    assert f"limit of {lifted.max_analysis_units}" in refused.value.message


@pytest.mark.parametrize(
    ("bomb", "why"),
    [
        (fan_out(12), "too expensive to analyse"),
        (field_bomb(1900), "too expensive to analyse"),
        (alias_fan_out(12), "aliases"),
        (alias_bomb(600), "aliases"),
        (nesting_bomb(600), "nested too deeply"),
    ],
)
def test_with_the_default_limits_each_bomb_is_refused_by_a_counted_limit(
    bomb: str, why: str
) -> None:
    (message,) = analysed(bomb)
    assert why in message


def test_the_units_refusal_says_the_limit_the_cost_and_what_to_do() -> None:
    query = legitimate()
    needed = units(query)
    (message,) = analysed(query, QueryLimits(max_analysis_units=needed - 1))
    assert f"limit of {needed - 1}" in message
    assert re.search(r"at least \d+ units", message)
    assert "select fewer fields" in message
    assert analysed(query, QueryLimits(max_analysis_units=needed)) == []


def docs_units_table() -> dict[str, int]:
    """docs/service.md's table of the largest docs queries: `README.md#2` -> units."""
    text = DOC.read_text()
    start = text.index("| query | what it selects | units |")
    table = text[start : text.index("\n\n", start)]
    rows = re.findall(r"^\| `([^`]+)` \| [^|]+ \| ([\d,]+) \|$", table, re.MULTILINE)
    return {where: int(units.replace(",", "")) for where, units in rows}


def test_the_docs_table_of_analysis_units_is_computed() -> None:
    # The three largest docs queries and the Diagnosis query, with their units as counted.
    counted = {where: units(text) for where, text in docs_queries()}
    largest = dict(sorted(counted.items(), key=lambda item: -item[1])[:3])
    largest["every Diagnosis field, depth 3"] = units(legitimate())
    assert docs_units_table() == largest


def test_serve_defaults_are_the_query_limits_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MAX_ANALYSIS_UNITS", "MAX_ANALYSIS_MS"):
        monkeypatch.delenv(f"KUEUE_GRAPHQL_{name}", raising=False)
    limits = settings_from(_parser().parse_args(["serve"])).query_limits
    assert limits.max_analysis_units == QueryLimits().max_analysis_units
    assert limits.max_analysis_seconds == QueryLimits().max_analysis_seconds
    monkeypatch.setenv("KUEUE_GRAPHQL_MAX_ANALYSIS_UNITS", "1234")
    monkeypatch.setenv("KUEUE_GRAPHQL_MAX_ANALYSIS_MS", "2500")
    limits = settings_from(_parser().parse_args(["serve"])).query_limits
    assert (limits.max_analysis_units, limits.max_analysis_seconds) == (1234, 2.5)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--max-analysis-ms", "50"], "--max-analysis-units"),
        (["--max-analysis-units", "0"], "at least 1"),
    ],
)
def test_a_clock_budget_is_refused_at_startup(
    flags: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The old 50 ms would make the backstop refuse legitimate queries on a loaded machine.
    assert main(["serve", *flags]) == 2
    assert says in capsys.readouterr().err


async def test_the_backstop_is_a_timer_that_stops_the_analysis_and_is_not_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An analysis that would never end by itself: it runs until told to stop (bounded here).
    strawberry_schema = build_schema(QueryLimits(max_analysis_seconds=0.01))
    checks: DocumentChecks = strawberry_schema.checks  # type: ignore[attr-defined]
    stopped: list[bool] = []
    analyse = checks.analyse

    def endless(*args: object) -> tuple[object, list[object]]:
        *arguments, backstop = args
        stopped.append(backstop.wait(timeout=60))  # type: ignore[attr-defined]
        return analyse(*arguments, backstop)  # type: ignore[arg-type]

    monkeypatch.setattr(checks, "analyse", endless)
    for _ in range(2):
        analysis = await checks.check(strawberry_schema._schema, legitimate(), RULES)
        (error,) = analysis.errors
        assert error.message.startswith("the query took too long to analyse")
        assert "0.01 s" in error.message
    assert stopped == [True, True], "set by the timer, each time analysed afresh"
