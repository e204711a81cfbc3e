"""The largest legitimate queries: the docs' GraphQL examples (and the answers the docs print
for them) and issue 22's "every Diagnosis field to depth 3". Shared by the unit tests, the docs'
limits table test, the printed-answers test and benchmarks/analysis_units.py; nothing here
imports the service (the schema is passed in)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from graphql import (
    GraphQLSchema,
    get_named_type,
    is_interface_type,
    is_non_null_type,
    is_object_type,
    is_union_type,
)

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GRAPHQL_BLOCK = re.compile(r"```graphql\n(.*?)```", re.DOTALL)
FENCED_BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.DOTALL)


def docs_queries() -> list[tuple[str, str]]:
    """Every ```graphql block of the README and docs/*.md, as (`file#n`, text)."""
    found = []
    for document in DOCUMENTS:
        for index, block in enumerate(GRAPHQL_BLOCK.findall(document.read_text())):
            found.append((f"{document.relative_to(REPO)}#{index + 1}", block))
    return found


@dataclass(frozen=True)
class PrintedAnswer:
    """A ```graphql block whose next fenced block is ```json: the answer the docs print for it."""

    where: str  # `file#n`, n counting the file's ```graphql blocks as docs_queries() does
    query: str
    answer: str
    prose: str  # the text from the previous fenced block to the json block, blocks left out


def docs_printed_answers() -> list[PrintedAnswer]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text()
        blocks = list(FENCED_BLOCK.finditer(text))
        graphql_seen = 0
        for index, block in enumerate(blocks):
            if block.group(1) != "graphql":
                continue
            graphql_seen += 1
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if following is None or following.group(1) != "json":
                continue
            start = blocks[index - 1].end() if index else 0
            prose = text[start : block.start()] + text[block.end() : following.start()]
            where = f"{document.relative_to(REPO)}#{graphql_seen}"
            found.append(PrintedAnswer(where, block.group(2), following.group(2), prose))
    return found


def every_field(schema: GraphQLSchema, type_name: str, depth: int) -> str:
    """A selection of every field of `type_name`, objects expanded `depth` levels deep (lists
    paged with `first: 10`, other required arguments given "x"; unions left out)."""
    kind = schema.get_type(type_name)
    assert is_object_type(kind) or is_interface_type(kind), type_name
    parts = []
    for name, definition in kind.fields.items():
        arguments = [
            f"{argument}: 10" if argument == "first" else f'{argument}: "x"'
            for argument, spec in definition.args.items()
            if is_non_null_type(spec.type)
        ]
        call = f"{name}({', '.join(arguments)})" if arguments else name
        named = get_named_type(definition.type)
        if is_union_type(named):
            continue
        if is_object_type(named) or is_interface_type(named):
            if depth > 1:
                parts.append(f"{call} {{ {every_field(schema, named.name, depth - 1)} }}")
        else:
            parts.append(call)
    return " ".join(parts)


def diagnosis_query(schema: GraphQLSchema) -> str:
    """Issue 22's legitimate query: every Diagnosis field to depth 3, within every limit."""
    selection = every_field(schema, "Diagnosis", 3)
    return f'{{ diagnose(namespace: "team-a", kind: "Job", name: "train") {{ {selection} }} }}'
