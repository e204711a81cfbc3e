"""No reason code spelled as a bare string: every string constant in the package that equals a
`Code` value lives in kueue/vocabulary.py, so a code is renamed or grepped in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import kueue_graphql
from kueue_graphql.kueue.vocabulary import Code

PACKAGE = Path(kueue_graphql.__file__).parent
VOCABULARY = PACKAGE / "kueue" / "vocabulary.py"
CODE_VALUES = frozenset(code.value for code in Code)


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the Constant nodes that are docstrings (first statement of a module, class or
    function, or a bare string statement, which Python discards)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                ids.add(id(statement.value))
    return ids


def code_literals(source: str) -> list[tuple[int, str]]:
    """(line, value) of every string constant equal to a `Code` value, docstrings aside."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in CODE_VALUES
        and id(node) not in skipped
    ]


def test_the_scan_sees_literals_and_skips_docstrings() -> None:
    source = (
        '"""Preempted, in a module docstring."""\n'
        "def f(reason: str) -> bool:\n"
        '    """Preempted"""\n'
        '    return reason == "Preempted" or reason in {"Pending": 1}\n'
    )
    assert code_literals(source) == [(4, "Preempted")]


def test_no_bare_code_literal_outside_the_vocabulary() -> None:
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p != VOCABULARY)
    assert len(modules) > 50, "the package's modules were not found"
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {value!r}"
        for path in modules
        for line, value in code_literals(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "\n".join(found)
