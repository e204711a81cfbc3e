"""Fetch the admission map's layout library from the npm registry, into the package (for the wheel).

Runs `npm ci --ignore-scripts` in web/admission-map (versions and integrity hashes pinned by its
package-lock.json), copies only the files the page loads and their licences (VENDOR_FILES,
VENDOR_LICENSES in kueue_graphql/http/map_assets.py) into kueue_graphql/http/admission_map_vendor
(git-ignored, which the wheel carries) and checks each against the SHA-256 committed in
kueue_graphql/http/admission_map_vendor.sha256. When every file is already there with the right
hash, npm is not called.

    uv run python scripts/fetch_map_assets.py        # or: make map-assets
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from kueue_graphql.http.map_assets import (
    VENDOR_DIRECTORY,
    VENDOR_FILES,
    VENDOR_LICENSES,
    VENDOR_SUMS,
)
from kueue_graphql.http.vendored import mismatches

NPM_PROJECT = Path(__file__).resolve().parents[1] / "web" / "admission-map"


def fetch() -> None:
    if not mismatches(VENDOR_DIRECTORY, VENDOR_SUMS):
        print(f"admission map: layout library in {VENDOR_DIRECTORY} (sha256 ok)")
        return
    if shutil.which("npm") is None:
        raise SystemExit(
            "npm not found: the admission map's layout library is fetched with `npm ci`; "
            "install Node.js (npm), or run the server with --no-admission-map"
        )
    npm = subprocess.run(
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=NPM_PROJECT,
        check=False,
        capture_output=True,
        text=True,
    )
    if npm.returncode:
        raise SystemExit(f"npm ci in {NPM_PROJECT} failed:\n{npm.stderr.strip()}")
    VENDOR_DIRECTORY.mkdir(parents=True, exist_ok=True)
    for source, local in {**VENDOR_FILES, **VENDOR_LICENSES}.items():
        shutil.copyfile(NPM_PROJECT / "node_modules" / source, VENDOR_DIRECTORY / local)
        print(f"  fetched  {local} from {source}")
    problems = mismatches(VENDOR_DIRECTORY, VENDOR_SUMS)
    if problems:
        shutil.rmtree(VENDOR_DIRECTORY)
        raise SystemExit(f"admission map: {'; '.join(problems)} (removed); see {VENDOR_SUMS}")
    print(f"admission map: layout library in {VENDOR_DIRECTORY}, sha256 as in {VENDOR_SUMS}")


if __name__ == "__main__":
    fetch()
