"""graphql-codegen over the committed SDL and every GraphQL block of the docs, as a portal team's
TypeScript build runs it: `typescript` (the schema's types) and `typescript-operations` (one type
per operation, importing the schema's), with the scalar mapping docs/service.md documents, then
`tsc --noEmit --strict` on the result and on a check that the README's amounts are strings.

No control plane: Node and npm only (tests/node, pinned by its lock file and installed on first
use by tests/node_clients.py); every Node run is bounded in time.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from graphql import OperationDefinitionNode, parse

from tests import node_clients
from tests.legit_queries import REPO, docs_queries

CODEGEN = "node_modules/@graphql-codegen/cli/cjs/bin.js"
TSC = "node_modules/typescript/bin/tsc"
SECONDS = 180.0
# docs/service.md, *The graph*: what a client maps the custom scalars to.
SCALARS = {"Decimal": "string", "JSON": "unknown"}

# Compiled with the generated files: the mapping reaches the operations' types, exactly (an
# `any` would pass a plain assignment, not this equality).
CHECK = """\
import type { Scalars } from './schema';
import type { AdmissionPathQuery } from './operations';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2)
  ? true
  : false;
type Request = NonNullable<NonNullable<AdmissionPathQuery['workloadFor']>['totalRequests']>[number];

export const decimalIsAString: Equal<Scalars['Decimal']['output'], string> = true;
export const amountIsAString: Equal<Request['value']['amount'], string | null> = true;
"""


@dataclass(frozen=True)
class Generated:
    codegen: node_clients.Finished
    tsc: node_clients.Finished | None  # None when codegen failed

    def said(self) -> str:
        runs = [self.codegen, *([self.tsc] if self.tsc else [])]
        return "\n".join(run.stdout + run.stderr for run in runs)


async def generate(
    tmp_path: Path, documents: list[tuple[str, str]], scalars: dict[str, str] = SCALARS
) -> Generated:
    """codegen over schema/schema.graphql and `documents` (one .graphql file each), then tsc."""
    project = await node_clients.installed()
    folder = tmp_path / "documents"
    folder.mkdir()
    for index, (where, text) in enumerate(documents):
        (folder / f"{index:02d}-{re.sub(r'[^A-Za-z0-9]+', '-', where)}.graphql").write_text(text)
    out = tmp_path / "generated"
    config = {
        "overwrite": True,
        "errorsOnly": True,  # only failures are printed, with what failed
        "schema": str(REPO / "schema" / "schema.graphql"),
        "documents": [f"{folder}/*.graphql"],
        "config": {"scalars": scalars, "strictScalars": True},
        "generates": {
            str(out / "schema.ts"): {"plugins": ["typescript"]},
            str(out / "operations.ts"): {
                "plugins": ["typescript-operations"],
                # Relative to codegen's working directory (tests/node); written as './schema'.
                "config": {"importSchemaTypesFrom": os.path.relpath(out / "schema", project)},
            },
        },
    }
    (tmp_path / "codegen.json").write_text(json.dumps(config))
    codegen = await node_clients.bounded(
        ["node", CODEGEN, "--config", str(tmp_path / "codegen.json")], SECONDS
    )
    if codegen.returncode:
        return Generated(codegen, None)
    (out / "check.ts").write_text(CHECK)
    tsc = await node_clients.bounded(
        ["node", TSC, "--noEmit", "--strict", "--pretty", "false", str(out / "check.ts")], SECONDS
    )
    return Generated(codegen, tsc)


async def test_codegen_types_every_docs_operation_and_they_compile(tmp_path: Path) -> None:
    generated = await generate(tmp_path, docs_queries())
    assert generated.codegen.returncode == 0, generated.said()
    assert generated.tsc is not None
    assert generated.tsc.returncode == 0, generated.said()
    operations = (tmp_path / "generated" / "operations.ts").read_text()
    for where, text in docs_queries():
        (operation,) = parse(text).definitions
        assert isinstance(operation, OperationDefinitionNode), where
        assert operation.name, where
        typed = f"export type {operation.name.value}{operation.operation.value.title()} = "
        assert typed in operations, where
    schema = (tmp_path / "generated" / "schema.ts").read_text()
    assert "Decimal: { input: string; output: string; }" in schema


@pytest.mark.parametrize(
    ("added", "says"),
    [
        # A field the schema does not have: the docs drifted from the code.
        ("query Broken { viewer { username shoeSize } }", 'Cannot query field "shoeSize"'),
        # A name the docs already define (the README's Why, four times over, before issue 24).
        ("query AdmissionPath { viewer { username } }", "Not all operations have an unique name"),
    ],
    ids=["unknown-field", "duplicate-name"],
)
async def test_codegen_fails_on_a_broken_docs_block(tmp_path: Path, added: str, says: str) -> None:
    generated = await generate(tmp_path, [*docs_queries(), ("docs/added.md#1", added)])
    assert generated.codegen.returncode != 0
    assert generated.tsc is None
    assert says in generated.said()


async def test_tsc_fails_when_decimal_is_not_mapped_to_string(tmp_path: Path) -> None:
    generated = await generate(tmp_path, docs_queries(), {**SCALARS, "Decimal": "number"})
    assert generated.codegen.returncode == 0, generated.said()
    assert generated.tsc is not None
    assert generated.tsc.returncode != 0
    assert "check.ts" in generated.said()
    assert "decimalIsAString" in (tmp_path / "generated" / "check.ts").read_text()
