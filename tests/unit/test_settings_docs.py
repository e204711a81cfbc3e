"""The docs and --help derive from the settings model (issue 20, items 5-6): docs/service.md's
settings table is the model's, every subcommand is summarised in `kueue-graphql --help`, and
every subcommand's --help documents each of its flags (a setting's with its variable)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from kueue_graphql.cli import _parser
from kueue_graphql.cli.arguments import COMMANDS
from kueue_graphql.cli.settings import SETTINGS, settings_table

REPO = Path(__file__).resolve().parents[2]
GENERATED = re.compile(
    r"<!-- settings table: generated from .*? -->\n(.*?)<!-- end of settings table -->", re.S
)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_docs_settings_table_is_the_models() -> None:
    (table,) = GENERATED.findall((REPO / "docs" / "service.md").read_text())
    assert table == settings_table(), "regenerate it: see the comment above the table"


def test_every_variable_the_docs_name_is_a_setting() -> None:
    known = {setting.env for setting in SETTINGS}
    for doc in ("README.md", "docs/service.md", "charts/kueue-graphql/README.md"):
        named = set(re.findall(r"KUEUE_GRAPHQL_[A-Z0-9_]*[A-Z0-9]", (REPO / doc).read_text()))
        assert named <= known, (doc, named - known)


def test_top_level_help_summarises_every_subcommand() -> None:
    text = flat(_parser().format_help())
    assert set(subcommands()) == set(COMMANDS)
    for name, summary in COMMANDS.items():
        assert f"{name} {flat(summary)}" in text, name


def test_every_subcommand_help_is_complete() -> None:
    for name, parser in subcommands().items():
        assert parser.description, name
        text = flat(parser.format_help())
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            for option in action.option_strings:
                assert option in text, (name, option)
    for setting in SETTINGS:
        documented = [
            parser for parser in subcommands().values() if setting.env in flat(parser.format_help())
        ]
        assert documented, setting.flag
