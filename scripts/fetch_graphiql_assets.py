"""Fetch GraphiQL's JavaScript and CSS from the npm registry, for `serve --graphiql-assets DIR`.

For each pinned package of strawberry's GraphiQL page (GRAPHIQL_ASSETS in
kueue_graphql/http/graphiql.py) runs `npm pack <package>@<version>` (the npm registry, no CDN;
npm checks the tarball against the registry's integrity hash), extracts only the files the page
loads into DIR (default .cache/graphiql-assets) and checks each against the SHA-256 committed in
scripts/graphiql-assets.sha256. Files already in DIR with the right hash are kept (no npm call).

    uv run python scripts/fetch_graphiql_assets.py [DIR]        # or: make graphiql-assets
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from kueue_graphql.http.graphiql import GRAPHIQL_ASSETS

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO / ".cache" / "graphiql-assets"
SUMS = Path(__file__).resolve().parent / "graphiql-assets.sha256"


def expected_sums() -> dict[str, str]:
    """`sha256sum` format: '<hex>  <file>' per line."""
    pairs = (line.split() for line in SUMS.read_text().splitlines() if line.strip())
    return {name: digest for digest, name in pairs}


def split(asset: str) -> tuple[str, str]:
    """'@scope/name@1.0.2/dist/x.js' -> ('@scope/name@1.0.2', 'dist/x.js')."""
    parts = asset.split("/")
    n = 2 if asset.startswith("@") else 1
    return "/".join(parts[:n]), "/".join(parts[n:])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(directory: Path) -> None:
    sums = expected_sums()
    directory.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, dict[str, str]] = {}  # package spec -> {path in tarball: local name}
    for asset, local in GRAPHIQL_ASSETS.items():
        target = directory / local
        if target.is_file() and sha256(target) == sums[local]:
            print(f"  kept     {local} (sha256 ok)")
            continue
        spec, path = split(asset)
        wanted.setdefault(spec, {})[path] = local
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
    bad = [name for name in GRAPHIQL_ASSETS.values() if sha256(directory / name) != sums[name]]
    if bad:
        for name in bad:
            (directory / name).unlink()
        raise SystemExit(f"sha256 mismatch (removed): {', '.join(bad)}; see {SUMS}")
    print(f"{len(GRAPHIQL_ASSETS)} GraphiQL files in {directory}, sha256 verified against {SUMS}")
    print(f"serve them: kueue-graphql serve --graphiql-assets {directory} ...")


if __name__ == "__main__":
    fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR)
