"""Relay's compiler (npm relay-compiler, pinned in tests/node/package-lock.json) over a schema
and the operations a Relay portal writes (tests/node/relay/Portal.ts), and the documents it
generates for the wire. Shared by tests/unit/test_relay_compiler.py (compiles, validates) and
tests/service/test_relay_operations.py (runs them against the real server)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests import node_clients

RELAY = "node_modules/relay-compiler/cli.js"
OPERATIONS = node_clients.PROJECT / "relay" / "Portal.ts"
SECONDS = 180.0


async def compile_with_relay(tmp_path: Path, schema: Path) -> node_clients.Finished:
    await node_clients.installed()
    (tmp_path / "src").mkdir()
    (tmp_path / "generated").mkdir()
    shutil.copy(OPERATIONS, tmp_path / "src" / OPERATIONS.name)
    config = {
        "src": str(tmp_path / "src"),
        "schema": str(schema),
        "language": "typescript",
        "artifactDirectory": str(tmp_path / "generated"),
    }
    (tmp_path / "relay.config.json").write_text(json.dumps(config))
    return await node_clients.bounded(["node", RELAY, str(tmp_path / "relay.config.json")], SECONDS)


def generated_texts(artifacts: Path) -> dict[str, str]:
    """The document each generated operation artifact sends, by operation name."""
    texts: dict[str, str] = {}
    for artifact in artifacts.glob("*.graphql.ts"):
        for text in re.findall(r'"text": ("(?:[^"\\]|\\.)*")', artifact.read_text()):
            document = json.loads(text)
            name = re.search(r"(?:query|subscription)\s+(\w+)", document)
            assert name is not None, document
            texts[name.group(1)] = document
    return texts
