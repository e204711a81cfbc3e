"""The wheel's build hook: GraphiQL's JavaScript and CSS, and the admission map's layout library,
go into every wheel, or no wheel is built.

The files (kueue_graphql/http/graphiql_assets/ and admission_map_vendor/, git-ignored) are fetched
with npm by `make graphiql-assets` and `make map-assets`; each must match the SHA-256 committed in
kueue_graphql/http/graphiql_assets.sha256 and admission_map_vendor.sha256. Only the listed files
are packaged. Editable installs
(`uv sync`) read the source tree and are not checked here; the server checks at startup.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE_DIR = "kueue_graphql/http"
# Directory of fetched files -> the command that fetches them.
FETCHED = {
    "graphiql_assets": "make graphiql-assets",
    "admission_map_vendor": "make map-assets",
}


class GraphiQLAssetsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        problems: list[str] = []
        for directory, command in FETCHED.items():
            problems += self.include(root, directory, command, build_data)
        if problems:
            raise RuntimeError(
                "the wheel must carry the files fetched from npm: " + "; ".join(problems)
            )

    @staticmethod
    def include(root: Path, directory: str, command: str, build_data: dict[str, Any]) -> list[str]:
        sums = root / PACKAGE_DIR / f"{directory}.sha256"
        problems: list[str] = []
        for line in sums.read_text().splitlines():
            if not line.strip():
                continue
            digest, name = line.split()
            path = root / PACKAGE_DIR / directory / name
            if not path.is_file():
                problems.append(f"{directory}/{name} missing (fetch it: `{command}`)")
            elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                problems.append(
                    f"{directory}/{name} differs from its SHA-256 in {sums.name} "
                    f"(fetch it again: `{command}`)"
                )
            else:
                build_data["force_include"][str(path)] = f"{PACKAGE_DIR}/{directory}/{name}"
        return problems
