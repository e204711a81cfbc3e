"""Files fetched from npm at build time and pinned by SHA-256: the committed sums files
('<hex>  <name>' lines, `sha256sum` format) and the check of a directory against one."""

from __future__ import annotations

import hashlib
from pathlib import Path


def expected_sums(sums: Path) -> dict[str, str]:
    """File name -> SHA-256 hex, from a sums file."""
    pairs = (line.split() for line in sums.read_text().splitlines() if line.strip())
    return {name: digest for digest, name in pairs}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mismatches(directory: Path, sums: Path) -> list[str]:
    """What in `directory` is missing or differs from `sums` (empty: all as pinned)."""
    problems = []
    for name, digest in expected_sums(sums).items():
        path = directory / name
        if not path.is_file():
            problems.append(f"{name} missing")
        elif sha256(path) != digest:
            problems.append(f"{name} differs from its SHA-256 in {sums.name}")
    return problems
