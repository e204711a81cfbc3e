"""Strict settings (issue 20, item 5): every KUEUE_GRAPHQL_* value and every flag is checked at
startup against the settings model; a bad one is one line naming it and what it accepts, exit 2,
before anything else is tried (the kubeconfig here does not exist: any later check would refuse
with another line)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kueue_graphql.cli import _parser, main
from kueue_graphql.cli.settings import ENV_PREFIX, FALSE_WORDS, SERVE, TRUE_WORDS


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["serve", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        # Was a 0 s deadline for every request.
        ("REQUEST_TIMEOUT", "", "KUEUE_GRAPHQL_REQUEST_TIMEOUT='' is empty"),
        ("MAX_DEPTH", " ", "KUEUE_GRAPHQL_MAX_DEPTH=' ' is empty"),
        ("PORT", "80a", "KUEUE_GRAPHQL_PORT='80a' is not a whole number"),
        ("API_TIMEOUT", "ten", "KUEUE_GRAPHQL_API_TIMEOUT='ten' is not a number"),
        # Was silently false.
        ("ALLOW_GET_QUERIES", "ture", "KUEUE_GRAPHQL_ALLOW_GET_QUERIES='ture' is not a boolean"),
        ("TOKEN_CACHE_TTL", "301", "KUEUE_GRAPHQL_TOKEN_CACHE_TTL='301' is out of range"),
        ("MAX_PAGE_SIZE", "0", "KUEUE_GRAPHQL_MAX_PAGE_SIZE='0' is out of range"),
        ("REQUEST_TIMEOUT", "nan", "KUEUE_GRAPHQL_REQUEST_TIMEOUT='nan' is out of range"),
        ("LOG_FORMAT", "yaml", "KUEUE_GRAPHQL_LOG_FORMAT='yaml' is not a known value"),
    ],
)
def test_a_bad_environment_value_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    value: str,
    says: str,
) -> None:
    monkeypatch.setenv(ENV_PREFIX + name, value)
    line = refusal(capsys)
    assert line.startswith(f"kueue-graphql: {says}"), line
    assert "; accepted: " in line


def test_what_is_accepted_is_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUEUE_GRAPHQL_PORT", "70000")
    assert refusal(capsys).endswith("accepted: a whole number from 0 to 65535")
    monkeypatch.setenv("KUEUE_GRAPHQL_PORT", "8080")
    monkeypatch.setenv("KUEUE_GRAPHQL_IN_CLUSTER", "y")
    assert "accepted: one of true, 1, yes, on, false, 0, no, off" in refusal(capsys)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--request-timeout", ""], "argument --request-timeout: '' is empty"),
        (["--port", "80a"], "argument --port: '80a' is not a whole number"),
        (["--body-timeout", "1s"], "argument --body-timeout: '1s' is not a number"),
        (["--max-depth", "0"], "argument --max-depth: '0' is out of range"),
        (["--readyz-timeout", "3"], "argument --readyz-timeout: '3' is out of range"),
        (["--read-mode", "Cache"], "argument --read-mode: 'Cache' is not a known value"),
    ],
)
def test_a_bad_flag_value_is_one_line_naming_the_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    line = refusal(capsys, *argv)
    assert line.startswith(f"kueue-graphql serve: {says}"), line
    assert "; accepted: " in line


def test_a_misspelt_variable_names_the_closest_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUEUE_GRAPHQL_REQUEST_TIMOUT", "5")
    line = refusal(capsys)
    assert line.startswith("kueue-graphql: KUEUE_GRAPHQL_REQUEST_TIMOUT is not a setting"), line
    assert "did you mean KUEUE_GRAPHQL_REQUEST_TIMEOUT?" in line
    # Kubernetes' Service link variables get the remedy instead of a guess.
    monkeypatch.delenv("KUEUE_GRAPHQL_REQUEST_TIMOUT")
    monkeypatch.setenv("KUEUE_GRAPHQL_SERVICE_HOST", "10.0.0.1")
    assert "enableServiceLinks: false" in refusal(capsys)


@pytest.mark.parametrize("word", [*TRUE_WORDS, *FALSE_WORDS, "TRUE", "Off", "Yes"])
def test_boolean_words(monkeypatch: pytest.MonkeyPatch, word: str) -> None:
    monkeypatch.setenv("KUEUE_GRAPHQL_ALLOW_GET_QUERIES", word)
    expected = word.lower() in TRUE_WORDS
    assert _parser().parse_args(["serve"]).allow_get_queries is expected


def test_get_queries_are_on_by_default_and_can_be_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUEUE_GRAPHQL_ALLOW_GET_QUERIES", raising=False)
    assert _parser().parse_args(["serve"]).allow_get_queries is True
    assert _parser().parse_args(["serve", "--no-allow-get-queries"]).allow_get_queries is False
    # The old spelling stays accepted (the chart passed it).
    assert _parser().parse_args(["serve", "--allow-get-queries"]).allow_get_queries is True
    monkeypatch.setenv("KUEUE_GRAPHQL_ALLOW_GET_QUERIES", "false")
    assert _parser().parse_args(["serve"]).allow_get_queries is False
    assert _parser().parse_args(["serve", "--allow-get-queries"]).allow_get_queries is True


def test_every_default_is_accepted_by_its_own_setting() -> None:
    for setting in SERVE:
        if setting.default not in (None, ()) and not isinstance(setting.default, bool):
            assert setting.parse(str(setting.default), setting.flag) == setting.default


def test_a_token_from_the_environment_is_not_shown_in_help(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUEUE_GRAPHQL_TOKEN", "s3cret-token")
    for command in ("why", "fits"):
        assert main([command, "--help"]) == 0
        shown = capsys.readouterr().out
        assert "KUEUE_GRAPHQL_TOKEN" in shown
        assert "s3cret" not in shown
