"""The wheel's build hook: GraphiQL's JavaScript and CSS go into every wheel, or no wheel is built.

The files (kueue_graphql/http/graphiql_assets/, git-ignored) are fetched with npm by
`make graphiql-assets`; each must match the SHA-256 committed in
kueue_graphql/http/graphiql_assets.sha256. Only the listed files are packaged. Editable installs
(`uv sync`) read the source tree and are not checked here; the server checks at startup.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE_DIR = "kueue_graphql/http"


class GraphiQLAssetsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        sums = root / PACKAGE_DIR / "graphiql_assets.sha256"
        problems: list[str] = []
        for line in sums.read_text().splitlines():
            if not line.strip():
                continue
            digest, name = line.split()
            path = root / PACKAGE_DIR / "graphiql_assets" / name
            if not path.is_file():
                problems.append(f"{name} missing")
            elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                problems.append(f"{name} differs from its SHA-256 in {sums.name}")
            else:
                build_data["force_include"][str(path)] = f"{PACKAGE_DIR}/graphiql_assets/{name}"
        if problems:
            raise RuntimeError(
                "the wheel must carry GraphiQL's files (kueue_graphql/http/graphiql_assets): "
                + "; ".join(problems)
                + ". Fetch them first with `make graphiql-assets` (npm pack, sha256-checked)"
            )
