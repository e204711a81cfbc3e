"""The answers README.md and docs/*.md print are the real ones.

Every ```graphql block followed by a ```json block (the answer the docs print for it) is sent to
the real server as the user its prose names, with the variables the prose gives, and the answer
must equal the printed one: names, structure and values. Only what differs from run to run is
masked on both sides: timestamps, UIDs, the random suffixes of generated names (the Workload
`job-too-big-3x1cpu-7e202`, the Pod `admitted-but-unschedulable-k7rz4`) and `apiCalls` counts.
A stale doc is fixed from the real answer, which a failure prints whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from graphql import OperationDefinitionNode, parse

from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.http import ReadMode
from tests.cluster.driver import Cluster
from tests.legit_queries import PrintedAnswer, docs_printed_answers
from tests.service.conftest import Server, server_in_mode
from tests.waiting import SETTLE_SECONDS, async_wait_until

pytestmark = pytest.mark.cluster


@dataclass(frozen=True)
class Asked:
    """How the prose around a block says it was asked."""

    user: str
    variables: dict[str, Any] = field(default_factory=dict)
    disclosure: QuotaDisclosure = QuotaDisclosure.NONE  # `serve --quota-disclosure`, "policy on"


TOO_BIG = {"ns": "team-a", "job": "too-big-3x1cpu"}

# By operation name (unique across the docs, tests/unit/test_docs_queries.py). Every server here
# is in the impersonate read mode, the default, which the docs' answers show (`unavailable` in
# AheadOfMe names what only the cache mode reads).
ASKED = {
    # README: "alice, a tenant of `team-a` ... asks" about too-big-3x1cpu.
    "WhyIsMyJobWaiting": Asked("alice", TOO_BIG),
    # why.md 1: 'Variables `{"ns": "team-a", "job": "too-big-3x1cpu"}`, sent with alice's token'.
    "TenantDiagnosis": Asked("alice", TOO_BIG),
    # why.md 2: "The same question as `viewer`".
    "OperatorQuotaLines": Asked("viewer", TOO_BIG),
    # why.md 3: "`admitted-but-unschedulable` ... as viewer".
    "SchedulerHandOver": Asked("viewer", {"ns": "team-a", "job": "admitted-but-unschedulable"}),
    # why.md, Before you submit: "as alice with the policy on".
    "LocalQueueHeadroom": Asked("alice", disclosure=QuotaDisclosure.QUOTA),
    # why.md, What is ahead of me: "As alice, policy on".
    "AheadOfMe": Asked("alice", disclosure=QuotaDisclosure.QUOTA),
}
# Printed answers this test does not compare, each with the reason (a setup the scenarios in
# tests/cluster/manifests do not have). None today.
NOT_COMPARED: dict[str, str] = {}

MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uid>"),
    # The last segment of a generated name: Kueue's 5 hex digits (job-<name>-7e202) or the 5
    # characters of Kubernetes' random alphabet, no vowels (<job>-k7rz4).
    (
        re.compile(r"(?<=[a-z0-9]-)(?:[0-9a-f]{5}|[bcdfghjklmnpqrstvwxz2456789]{5})\b(?!-)"),
        "<suffix>",
    ),
]


def masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(item) for item in value]
    if isinstance(value, str):
        for pattern, mask in MASKS:
            value = pattern.sub(mask, value)
    return value


def comparable(answer: dict[str, Any], printed: dict[str, Any]) -> dict[str, Any]:
    """`answer` masked, with `extensions` only where the docs print it (apiCalls as a count)."""
    kept = {key: item for key, item in answer.items() if key != "extensions" or key in printed}
    if isinstance(kept.get("extensions"), dict) and "apiCalls" in kept["extensions"]:
        kept["extensions"] = {**kept["extensions"], "apiCalls": "<count>"}
    return dict(masked(kept))


def operation(printed: PrintedAnswer) -> OperationDefinitionNode:
    (node,) = parse(printed.query).definitions
    assert isinstance(node, OperationDefinitionNode), printed.where
    return node


def name_of(printed: PrintedAnswer) -> str:
    node = operation(printed)
    assert node.name, f"{printed.where}: an anonymous operation"
    return node.name.value


PRINTED = docs_printed_answers()


def test_every_printed_answer_is_asked_as_its_prose_says() -> None:
    names = [name_of(printed) for printed in PRINTED]
    assert len(names) >= 6, "the README and docs/why.md print at least six answers"
    assert not set(ASKED) & set(NOT_COMPARED)
    assert set(names) == set(ASKED) | set(NOT_COMPARED), "a printed answer without an entry"
    for printed in PRINTED:
        asked = ASKED.get(name_of(printed))
        if asked is None:
            continue
        assert re.search(rf"\b{asked.user}\b", printed.prose), f"{printed.where}: who asks?"
        if asked.disclosure is not QuotaDisclosure.NONE:
            assert "policy on" in printed.prose, printed.where
        definitions = operation(printed).variable_definitions or ()
        declared = {d.variable.name.value for d in definitions}
        assert declared == set(asked.variables), printed.where


@pytest.fixture(scope="module")
async def servers(cluster: Cluster) -> AsyncIterator[dict[QuotaDisclosure, Server]]:
    async with (
        server_in_mode(cluster, ReadMode.IMPERSONATE) as plain,
        server_in_mode(
            cluster, ReadMode.IMPERSONATE, quota_disclosure=QuotaDisclosure.QUOTA
        ) as disclosing,
    ):
        yield {QuotaDisclosure.NONE: plain, QuotaDisclosure.QUOTA: disclosing}


@pytest.mark.parametrize(
    "printed",
    [p for p in PRINTED if name_of(p) in ASKED],
    ids=[f"{p.where}-{name_of(p)}" for p in PRINTED if name_of(p) in ASKED],
)
async def test_the_printed_answer_is_the_real_one(
    printed: PrintedAnswer, servers: dict[QuotaDisclosure, Server], cluster: Cluster
) -> None:
    asked = ASKED[name_of(printed)]
    shown = json.loads(printed.answer)
    expected = comparable(shown, shown)
    answers: list[dict[str, Any]] = []

    async def as_printed() -> bool:
        answer = await servers[asked.disclosure].query(
            printed.query, asked.variables, token=cluster.token(asked.user)
        )
        answers[:] = [answer]
        return comparable(answer, shown) == expected

    # The printed answers are the scenarios' settled state: a module before this one may have
    # just removed what it created, and Kueue takes a moment to release its quota.
    await async_wait_until(
        f"{printed.where} ({name_of(printed)}) answers as printed",
        as_printed,
        SETTLE_SECONDS,
        interval=1.0,
        detail=lambda: f"the doc is stale; the real answer, as {asked.user}:\n"
        + json.dumps(answers[0], indent=2),
    )
