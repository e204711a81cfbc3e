"""The document measure: fragments are measured once, so a fan-out is refused in milliseconds."""

from __future__ import annotations

import gc
import time

import pytest
from graphql import get_introspection_query, parse, specified_rules

from kueue_graphql.graph.query_cost import (
    AnalysisStoppedError,
    Backstop,
    QueryLimits,
    QueryRefusedError,
    measure_document,
)
from kueue_graphql.graph.schema import build_schema
from tests.query_bombs import fan_out, field_bomb


@pytest.mark.parametrize("levels", [12, 20, 40])
async def test_fragment_fan_out_is_refused_quickly(levels: int) -> None:
    schema = build_schema()
    started = time.process_time()
    result = await schema.execute(fan_out(levels))
    elapsed = time.process_time() - started
    assert result.errors, "the fan-out must be refused"
    assert result.errors[0].extensions == {"code": "BAD_REQUEST"}
    assert result.data is None
    # Not a timing assertion on the figure (benchmarks/query_bomb.py prints it): only that the
    # refusal did not expand 4^levels fields (4^12 walks took 42.7 s before).
    assert elapsed < 5, elapsed


def test_expanded_figures_count_each_spread() -> None:
    document = parse("{ viewer { ...A ...A } } fragment A on Viewer { a: username groups }")
    measure = measure_document(document, QueryLimits(max_comparisons=10**9))
    assert measure.fields == 1 + 2 * 2
    assert measure.aliases == 2
    assert measure.depth == 1


def test_cost_multiplies_page_sizes() -> None:
    document = parse("{ workloads(first: 50) { nodes { name } } }")
    assert measure_document(document, QueryLimits()).cost == 1 + 50 * 2
    variable = parse("query($n: Int!) { workloads(first: $n) { nodes { name } } }")
    assert measure_document(variable, QueryLimits(assumed_page_size=100)).cost == 1 + 100 * 2
    with pytest.raises(QueryRefusedError, match="cost"):
        measure_document(document, QueryLimits(max_cost=100))


@pytest.mark.parametrize(
    ("query", "limits", "fragment"),
    [
        ("{ a { b { c { d } } } }", QueryLimits(max_depth=2), "depth"),
        ("{ x: a y: a z: a }", QueryLimits(max_aliases=2), "aliases"),
        ("{ a b c d }", QueryLimits(max_fields=3), "fields"),
        ("{ " + "a " * 150 + "}", QueryLimits(), "comparisons"),
        ("{ a(n: " + "9" * 41 + ") }", QueryLimits(), "number"),
        ("{ a(n: [1, {x: " + "1" * 41 + ".5}]) }", QueryLimits(), "number"),
    ],
)
def test_each_limit_refuses(query: str, limits: QueryLimits, fragment: str) -> None:
    with pytest.raises(QueryRefusedError, match=fragment):
        measure_document(parse(query), limits)


def test_cyclic_and_unknown_fragments_are_left_to_validation() -> None:
    document = parse("{ viewer { ...A ...Missing } } fragment A on Viewer { ...A username }")
    assert measure_document(document, QueryLimits()).fields == 2


def test_the_walk_stops_once_the_backstop_is_set() -> None:
    document = parse("{ " + " ".join(f"f{i}" for i in range(1000)) + " }")
    backstop = Backstop()
    assert measure_document(document, QueryLimits(), backstop=backstop).fields == 1000
    backstop.set()
    with pytest.raises(AnalysisStoppedError):
        measure_document(document, QueryLimits(), backstop=backstop)


def test_validation_stops_once_the_backstop_is_set() -> None:
    # 201 selections for the walk (under the 256 it looks at the backstop after), over 400
    # nodes for validation, which stops: the refusal says why and is not the units'.
    query = "{ viewer { " + "username " * 200 + "} }"
    strawberry_schema = build_schema(QueryLimits(max_comparisons=10**6, max_analysis_units=10**6))
    checks, schema = strawberry_schema.checks, strawberry_schema._schema  # type: ignore[attr-defined]
    backstop = Backstop()
    assert checks.analyse(schema, query, tuple(specified_rules), backstop)[1] == []
    backstop.set()
    _, errors = checks.analyse(schema, query, tuple(specified_rules), backstop)
    assert [e.message.split(":")[0] for e in errors] == ["the query took too long to analyse"]
    assert "backstop" in errors[0].message


async def test_parse_and_validation_are_cached_without_refused_documents() -> None:
    schema = build_schema()
    valid, refused = "{ __typename }", "{ viewer { usrname } }"
    for _ in range(2):
        assert (await schema.execute(valid)).errors is None
        errors = (await schema.execute(refused)).errors
        assert errors
        assert "usrname" in errors[0].message
        assert errors[0].locations
    checks = schema.extensions[0].args[0]  # type: ignore[union-attr]
    assert list(checks.parsed.keys()) == [valid]
    assert [key[0] for key in checks.validated] == [refused]
    (kept,) = checks.validated.values()
    assert all(error.nodes is None for error in kept.errors), "no AST kept for a refusal"


def test_edges_that_grow_with_the_cluster_are_pages_with_a_required_first() -> None:
    schema = build_schema()._schema
    edges = {
        ("ClusterQueue", "workloads"),
        ("LocalQueue", "workloads"),
        ("Cohort", "members"),
        ("Cohort", "children"),
        ("ResourceFlavor", "clusterQueues"),
    }
    for type_name, field_name in edges:
        edge = schema.get_type(type_name).fields[field_name]  # type: ignore[union-attr]
        assert str(edge.type).endswith("Connection"), (type_name, field_name, edge.type)
        assert str(edge.args["first"].type) == "Int!"
        assert str(edge.args["after"].type) == "String"


async def test_nested_edge_pages_multiply_the_cost_and_are_refused_before_any_read() -> None:
    # 100 ClusterQueues x 100 Workloads each x 6 fields: over the default 50,000.
    query = """{ clusterQueues(first: 100) { nodes { workloads(first: 100) {
      nodes { name namespace status priority creationTimestamp uid } } } } }"""
    measure = measure_document(parse(query), QueryLimits(max_cost=10**9))
    assert measure.cost == 1 + 100 * (1 + 1 + 100 * (1 + 6))
    result = await build_schema().execute(query)
    assert result.errors
    assert result.errors[0].extensions == {"code": "BAD_REQUEST"}
    assert "cost" in result.errors[0].message
    assert result.data is None


async def test_refused_documents_leave_no_objects_behind() -> None:
    # Every parsed document used to be kept (256 of them): 300 distinct 1,900-field documents
    # left 2.5 million objects for every full garbage collection to walk (0.7 s pauses).
    schema = build_schema()
    await schema.execute(field_bomb(1900))
    gc.collect()
    before = len(gc.get_objects())
    for i in range(100):
        result = await schema.execute(f"# {i}\n" + field_bomb(1900))
        assert result.errors
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 20_000, f"{grown} objects kept by 100 refused documents"


@pytest.mark.parametrize("deprecated_inputs", [False, True])
def test_the_standard_introspection_query_is_within_the_default_limits(
    deprecated_inputs: bool,
) -> None:
    """graphql-js' introspection query (GraphiQL's, Apollo's, codegen's) nests `ofType` seven
    deep: depth 14 if each counted, refused by the default 12 (GraphiQL's Docs pane said
    "Error fetching schema"). A chain of `ofType` (one type each, never a list) adds no level."""
    query = get_introspection_query(input_value_deprecation=deprecated_inputs)
    measure_document(parse(query), QueryLimits())


def test_introspection_that_nests_lists_is_still_refused_by_depth() -> None:
    nested = "name"
    for _ in range(7):
        nested = f"fields {{ type {{ ofType {{ {nested} }} }} }}"
    with pytest.raises(QueryRefusedError, match="depth"):
        measure_document(parse(f"{{ __schema {{ types {{ {nested} }} }} }}"), QueryLimits())
