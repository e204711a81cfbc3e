"""Fetch GraphiQL's JavaScript and CSS from the npm registry, into the package (for the wheel).

For each pinned package of strawberry's GraphiQL page (GRAPHIQL_ASSETS in
kueue_graphql/http/graphiql.py) runs `npm pack <package>@<version>` (the npm registry, no CDN;
npm checks the tarball against the registry's integrity hash), extracts only the files the page
loads and their licences into DIR (default kueue_graphql/http/graphiql_assets, git-ignored, which
the wheel carries) and checks each against the SHA-256 committed in
kueue_graphql/http/graphiql_assets.sha256. Files already in DIR with the right hash are kept
(no npm call).

    uv run python scripts/fetch_graphiql_assets.py [DIR]        # or: make graphiql-assets
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from kueue_graphql.http.graphiql import (
    ASSET_SUMS,
    GRAPHIQL_ASSETS,
    GRAPHIQL_LICENSES,
    PACKAGED_ASSETS,
)
from kueue_graphql.http.vendored import expected_sums, sha256

# The files the page loads and their licences.
FILES = {**GRAPHIQL_ASSETS, **GRAPHIQL_LICENSES}


def split(asset: str) -> tuple[str, str]:
    """'@scope/name@1.0.2/dist/x.js' -> ('@scope/name@1.0.2', 'dist/x.js')."""
    parts = asset.split("/")
    n = 2 if asset.startswith("@") else 1
    return "/".join(parts[:n]), "/".join(parts[n:])


def fetch(directory: Path) -> None:
    sums = expected_sums(ASSET_SUMS)
    directory.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, dict[str, str]] = {}  # package spec -> {path in tarball: local name}
    for asset, local in FILES.items():
        target = directory / local
        if target.is_file() and sha256(target) == sums[local]:
            print(f"  kept     {local} (sha256 ok)")
            continue
        spec, path = split(asset)
        wanted.setdefault(spec, {})[path] = local
    if wanted and shutil.which("npm") is None:
        raise SystemExit(
            "npm not found: GraphiQL's files are fetched with `npm pack` from the npm registry; "
            "install Node.js (npm), or run the server with --no-graphiql"
        )
    with tempfile.TemporaryDirectory() as tmp:
        for spec, files in wanted.items():
            npm = subprocess.run(
                ["npm", "pack", spec, "--json", "--pack-destination", tmp],
                cwd=tmp,
                check=False,
                capture_output=True,
                text=True,
            )
            if npm.returncode:
                raise SystemExit(f"npm pack {spec} failed:\n{npm.stderr.strip()}")
            packed = json.loads(npm.stdout)[0]
            print(f"npm pack {spec}: {packed['filename']} {packed['integrity']}")
            with tarfile.open(Path(tmp) / packed["filename"]) as tarball:
                for member in tarball.getmembers():
                    # Members are '<top>/<path>' ('package/' for most packages).
                    local = files.pop(member.name.partition("/")[2], None)
                    if local is None or not member.isfile():
                        continue
                    data = tarball.extractfile(member)
                    assert data is not None
                    (directory / local).write_bytes(data.read())
                    print(f"  fetched  {local} from {spec}/{member.name.partition('/')[2]}")
            if files:
                raise SystemExit(f"{spec}: not in the tarball: {', '.join(files)}")
    bad = [name for name in FILES.values() if sha256(directory / name) != sums[name]]
    if bad:
        for name in bad:
            (directory / name).unlink()
        raise SystemExit(f"sha256 mismatch (removed): {', '.join(bad)}; see {ASSET_SUMS}")
    print(f"{len(FILES)} GraphiQL files (with licences) in {directory}, sha256 as in {ASSET_SUMS}")
    if directory.resolve() != PACKAGED_ASSETS:
        print(f"serve them: kueue-graphql serve --graphiql-assets {directory} ...")


if __name__ == "__main__":
    fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else PACKAGED_ASSETS)
