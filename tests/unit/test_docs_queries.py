"""Every GraphQL example in the docs is valid against the schema the code builds.

Docs that drift from the code are worse than none: a newcomer pastes the README's query into
GraphiQL first.
"""

from __future__ import annotations

import pytest
from graphql import parse, validate

from kueue_graphql.graph.schema import build_schema
from tests.legit_queries import docs_queries as examples


def test_the_docs_have_graphql_examples() -> None:
    assert len(examples()) >= 5


@pytest.mark.parametrize(("where", "query"), examples(), ids=[w for w, _ in examples()])
def test_example_is_valid_against_the_schema(where: str, query: str) -> None:
    schema = build_schema()._schema
    errors = validate(schema, parse(query))
    assert not errors, f"{where}: {[e.message for e in errors]}"
