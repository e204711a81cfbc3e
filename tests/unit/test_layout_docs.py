"""README.md and docs/service.md name the layers as pyproject.toml's import-linter contract
lists them, and README's layout names every package of kueue_graphql/ (issue 20, item 6)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/service.md")


def contract_layers() -> str:
    """The layer contract as the docs write it: `cli -> http -> ...`, siblings joined by ` | `
    (independent) or ` : ` (not), as import-linter writes them."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    root = config["root_package"] + "."
    return " -> ".join(re.sub(r"\s+", " ", layer).replace(root, "") for layer in layers)


def packages() -> set[str]:
    return {p.parent.name for p in (REPO / "kueue_graphql").glob("*/__init__.py")}


def test_the_docs_layer_list_is_the_contracts() -> None:
    chain = contract_layers()
    for doc in DOCS:
        assert f"`{chain}`" in (REPO / doc).read_text(), (doc, chain)


def test_the_contract_covers_every_package() -> None:
    layered = set(re.split(r" -> | \| | : ", contract_layers()))
    assert layered == packages()


def test_readme_layout_names_every_package() -> None:
    text = (REPO / "README.md").read_text()
    (line,) = re.findall(
        r"^kueue_graphql/ +the service, in its layers: (.*?)\n(?! )", text, re.M | re.S
    )
    named = {re.sub(r" \(pure\)$", "", n.strip()) for n in " ".join(line.split()).split(",")}
    assert named == packages()
