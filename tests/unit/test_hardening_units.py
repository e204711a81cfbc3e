"""Pure pieces of issue 8's hardening: the bearer header, the access-log redaction, groups."""

from __future__ import annotations

import logging

import pytest

from kueue_graphql.auth import bearer_token
from kueue_graphql.cli import _parser, main
from kueue_graphql.cli.serve import settings_from
from kueue_graphql.core.identity import Identity
from kueue_graphql.http.access_log import REDACTED, RedactQueryTokens, redact_path
from kueue_graphql.http.json_input import json_depth


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc.def-ghi_jkl~mno+p/q==", "abc.def-ghi_jkl~mno+p/q=="),
        ("bearer abc", "abc"),
        ("Bearer  abc", "abc"),
        ("Bearer abc junk", None),
        ("Bearer abc ", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic abc", None),
        ("Bearerabc", None),
        ("Bearer a,b", None),
        ("Bearer abc\tjunk", None),
        (None, None),
    ],
)
def test_bearer_header_must_be_exactly_one_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_access_log_redacts_credentials_in_the_query_string() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        (
            "127.0.0.1:1",
            "POST",
            "/graphql?access_token=s3cret&x=1&headers=%7B%22Authorization%22%3A%22Bearer%20t0k%22%7D",
            "1.1",
            200,
        ),
        None,
    )
    assert RedactQueryTokens().filter(record)
    line = record.getMessage()
    assert "s3cret" not in line
    assert "t0k" not in line
    assert f"access_token={REDACTED}" in line
    assert "x=1" in line


def test_bearer_values_are_redacted_whatever_the_name() -> None:
    assert "t0k" not in redact_path("/graphql?h=Bearer+t0k")
    assert redact_path("/graphql") == "/graphql"
    assert redact_path("/graphql?query=%7B%20viewer%20%7D") == "/graphql?query=%7B%20viewer%20%7D"


def test_empty_group_names_are_dropped() -> None:
    identity = Identity.from_user_info({"username": "alice", "groups": ["", "team-a"]})
    assert identity.groups == ("team-a",)


def test_json_depth() -> None:
    assert json_depth({}) == 1
    assert json_depth({"a": [{"b": 1}]}) == 3
    nested: object = 1
    for _ in range(5000):
        nested = [nested]
    assert json_depth(nested) == 5000


def test_token_cache_ttl_has_a_flag_and_an_upper_bound(capsys: pytest.CaptureFixture[str]) -> None:
    settings = settings_from(_parser().parse_args(["serve", "--token-cache-ttl", "5"]))
    assert settings.token_cache_ttl_seconds == 5
    assert settings_from(_parser().parse_args(["serve"])).token_cache_ttl_seconds == 30
    assert main(["serve", "--token-cache-ttl", "301"]) == 2
    assert "--token-cache-ttl" in capsys.readouterr().err
    assert main(["serve", "--authz-cache-ttl", "1", "--authz-deny-cache-ttl", "2"]) == 2
    # Exit 2 alone is also what a missing kubeconfig or a taken port gives.
    assert "--authz-deny-cache-ttl must be between 0 and --authz-cache-ttl" in (
        capsys.readouterr().err
    )
