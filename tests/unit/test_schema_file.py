"""schema/schema.graphql is what the code serves; regenerate with `kueue-graphql schema`."""

import io
from contextlib import redirect_stdout
from pathlib import Path

from kueue_graphql.cli import main

SCHEMA_FILE = Path(__file__).parents[2] / "schema" / "schema.graphql"


def test_committed_schema_matches_code() -> None:
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["schema"]) == 0
    assert printed.getvalue() == SCHEMA_FILE.read_text(), (
        "schema/schema.graphql is stale: run `uv run kueue-graphql schema > schema/schema.graphql`"
    )


def test_schema_is_read_only() -> None:
    # Queries and subscriptions read; nothing writes.
    assert "type Mutation" not in SCHEMA_FILE.read_text()
