"""Relay's compiler (npm relay-compiler, pinned in tests/node/package-lock.json) over the
committed SDL and the operations a Relay portal writes (tests/node/relay/Portal.ts):
@refetchable fragments need the `Node` interface and `Query.node(id:)`, @connection needs
`edges { cursor node }` and `pageInfo`. The documents Relay generates for the wire must then
validate against the server's own schema.

No control plane: Node and npm only (tests/node_clients.py installs tests/node on first use).
"""

from __future__ import annotations

import re
from pathlib import Path

from graphql import parse, validate

from kueue_graphql.graph.schema import build_schema
from tests.legit_queries import REPO
from tests.relay_compile import compile_with_relay, generated_texts


async def test_relay_compiles_the_portal_operations_over_the_sdl(tmp_path: Path) -> None:
    compiled = await compile_with_relay(tmp_path, REPO / "schema" / "schema.graphql")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    generated = {p.name for p in (tmp_path / "generated").glob("*.graphql.ts")}
    # The refetch and pagination queries Relay derives from the directives, through node(id:).
    assert {
        "PortalWorkloadRefetchQuery.graphql.ts",
        "PortalWorkloadsPaginationQuery.graphql.ts",
        "PortalNodeQuery.graphql.ts",
        "PortalWhyQuery.graphql.ts",
        "PortalDiagnosisSubscription.graphql.ts",
    } <= generated
    schema = build_schema()._schema
    texts = generated_texts(tmp_path / "generated")
    assert len(texts) >= 5
    for text in texts.values():
        assert validate(schema, parse(text)) == [], text
    refetch = (tmp_path / "generated" / "PortalWorkloadRefetchQuery.graphql.ts").read_text()
    assert "node(id: $id)" in refetch


async def test_relay_refuses_a_schema_without_object_identification(tmp_path: Path) -> None:
    # The schema before issue 24 (no Node interface, no edges): the same operations fail.
    sdl = (REPO / "schema" / "schema.graphql").read_text()
    without = re.sub(r"\n  node\(id: ID!\): Node\n", "\n", sdl)
    assert without != sdl
    (tmp_path / "old.graphql").write_text(without)
    compiled = await compile_with_relay(tmp_path, tmp_path / "old.graphql")
    assert compiled.returncode != 0
    assert "node" in (compiled.stdout + compiled.stderr)
