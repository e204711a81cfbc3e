"""Every GraphQL example in the docs is valid against the schema the code builds, and is one
named operation whose name no other example uses.

Docs that drift from the code are worse than none: a newcomer pastes the README's query into
GraphiQL first, a portal team feeds every block to graphql-codegen
(tests/unit/test_docs_codegen.py), which refuses anonymous operations beside others and a name
defined twice.
"""

from __future__ import annotations

import pytest
from graphql import NoDeprecatedCustomRule, OperationDefinitionNode, parse, validate

from kueue_graphql.graph.schema import build_schema
from tests.legit_queries import docs_queries as examples


def test_the_docs_have_graphql_examples() -> None:
    assert len(examples()) >= 5


def operation_names(query: str) -> list[str | None]:
    """The name of each operation the document defines (None for an anonymous one)."""
    return [
        node.name.value if node.name else None
        for node in parse(query).definitions
        if isinstance(node, OperationDefinitionNode)
    ]


def test_every_example_is_one_named_operation() -> None:
    unnamed = [where for where, query in examples() if None in operation_names(query)]
    assert not unnamed, f"anonymous operations (give each a name): {unnamed}"
    several = [where for where, query in examples() if len(operation_names(query)) != 1]
    assert not several, f"blocks that are not exactly one operation: {several}"


def test_no_operation_name_is_defined_twice_across_the_docs() -> None:
    where_named: dict[str | None, list[str]] = {}
    for where, query in examples():
        for name in operation_names(query):
            where_named.setdefault(name, []).append(where)
    twice = {name: places for name, places in where_named.items() if name and len(places) > 1}
    assert not twice, f"operation names defined more than once: {twice}"


@pytest.mark.parametrize(("where", "query"), examples(), ids=[w for w, _ in examples()])
def test_example_is_valid_against_the_schema(where: str, query: str) -> None:
    schema = build_schema()._schema
    errors = validate(schema, parse(query))
    assert not errors, f"{where}: {[e.message for e in errors]}"


def _shipped_documents() -> list[tuple[str, str]]:
    """The docs' examples and the queries the package itself sends (the CLI's)."""
    from kueue_graphql.cli.render import WHAT_IF_QUERY, WHY_QUERY

    return [*examples(), ("cli/render.py#WHY_QUERY", WHY_QUERY), ("WHAT_IF_QUERY", WHAT_IF_QUERY)]


@pytest.mark.parametrize(
    ("where", "query"), _shipped_documents(), ids=[w for w, _ in _shipped_documents()]
)
def test_what_we_ship_uses_no_deprecated_field(where: str, query: str) -> None:
    # A field kept one release for old clients (e.g. the flat quantity fields replaced by
    # `Quantity`) must not be what the docs teach or the CLI asks.
    schema = build_schema()._schema
    errors = validate(schema, parse(query), [NoDeprecatedCustomRule])
    assert not errors, f"{where}: {[e.message for e in errors]}"
