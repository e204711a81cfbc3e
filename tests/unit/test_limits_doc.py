"""docs/service.md's Limits table names every limit setting and only flags `serve` has."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from kueue_graphql.cli import _parser
from kueue_graphql.http.settings import ServerSettings

DOC = Path(__file__).resolve().parents[2] / "docs" / "service.md"
# ServerSettings fields that configure the server but limit nothing.
NOT_LIMITS = {
    "kubeconfig",
    "kube_context",
    "in_cluster",
    "auth_mode",
    "allow_get_queries",
    "graphiql",
    "graphiql_assets",
    "admission_map",
    "cors_allow_origins",
    "token_audiences",
    "quota_disclosure",
    "read_mode",
    "cache_gc_freeze",
    "trusted_documents",
    "worker_kubeconfigs",
}
NESTED = ("query_limits", "request_limits", "live_limits")


def limits_section() -> str:
    text = DOC.read_text()
    start = text.index("\n## Limits\n")
    return text[start : text.index("\n## ", start + 1)]


def limit_settings() -> list[str]:
    names = []
    defaults = ServerSettings()
    for field in dataclasses.fields(ServerSettings):
        if field.name in NOT_LIMITS:
            continue
        if field.name in NESTED:
            nested = getattr(defaults, field.name)
            names += [f"{field.name}.{f.name}" for f in dataclasses.fields(nested)]
        else:
            names.append(field.name)
    return names


def test_every_limit_setting_is_in_the_table() -> None:
    section = limits_section()
    missing = [name for name in limit_settings() if f"`{name}`" not in section]
    assert not missing, f"docs/service.md, Limits, lacks {missing}"


def test_every_flag_in_the_table_exists() -> None:
    serve = _parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    known = {option for action in serve._actions for option in action.option_strings}
    flags = set(re.findall(r"`(--[a-z-]+)`", limits_section()))
    assert flags, "the table names its flags"
    assert flags <= known, flags - known
