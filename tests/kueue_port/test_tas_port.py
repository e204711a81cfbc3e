"""Kueue's TAS integration tests (tas_test.go, v0.17.0) ported as data: each case on the real
Kueue (does it do what the Go test expects?) and whatIf against it (asked before each Workload
is created: admitted or not, and the topologyAssignment). See tests/kueue_port/tas_port.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.kueue_port.kube import admin_client
from tests.kueue_port.tas_port import TasCase, TasOutcome, clean_up, load_tas_cases, run_tas_case
from tests.service.conftest import running_server

pytestmark = [pytest.mark.cluster, pytest.mark.changes_nodes]

CASES = load_tas_cases()
WHAT_IF = """
query Q($ns: String!, $lq: String!, $pods: [WhatIfPodSetInput!]!) {
  whatIf(namespace: $ns, localQueue: $lq, podSets: $pods) {
    verdict summary
    podSets { topology { verdict topologyAssignment { levels domains { values count } } } }
  }
}
"""


@pytest.fixture(scope="module")
async def outcomes(
    cluster: Cluster, request: pytest.FixtureRequest
) -> AsyncIterator[dict[str, Any]]:
    """Every selected case once, one after the other (their Nodes are cluster-wide), each
    cleaned up."""
    # This module's items only: other modules parametrize a "case" of their own (a str).
    selected = {
        item.callspec.params["case"].id
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.module is request.module
        and hasattr(item, "callspec")
        and "case" in item.callspec.params
    }
    kube = admin_client(cluster)
    found: dict[str, TasOutcome | str] = {}
    try:
        async with running_server(cluster.server_kubeconfig) as server:

            async def ask(ns: str, lq: str, pods: list[Any]) -> Any:
                body = await server.query(
                    WHAT_IF, {"ns": ns, "lq": lq, "pods": pods}, token=cluster.token("viewer")
                )
                assert "errors" not in body, body
                return body["data"]["whatIf"]

            for case in [c for c in CASES if c.id in selected]:
                await clean_up(kube, case)  # what an interrupted earlier run left
                try:
                    found[case.id] = await run_tas_case(kube, case, ask)
                except Exception as error:  # reported by the case's own tests
                    found[case.id] = f"{type(error).__name__}: {error}"
                finally:
                    left = await clean_up(kube, case)
                    assert not left, left
        yield found
    finally:
        kube.close()


def _outcome(outcomes: dict[str, Any], case: TasCase) -> TasOutcome:
    got = outcomes[case.id]
    assert not isinstance(got, str), f"{case.go_test}: the run failed: {got}"
    return got  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kueue_does_what_the_go_test_expects(outcomes: dict[str, Any], case: TasCase) -> None:
    if case.divergent:
        pytest.xfail(case.divergent)
    found = _outcome(outcomes, case)
    assert not found.kueue_unmet, f"{case.go_test}: {found.kueue_unmet}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_what_if_agrees_with_kueue(outcomes: dict[str, Any], case: TasCase) -> None:
    found = _outcome(outcomes, case)
    assert not found.whatif_unmet, f"{case.go_test}: {found.whatif_unmet} ({found.log})"


def test_at_least_fifteen_cases_are_ported() -> None:
    held = [c for c in CASES if not c.divergent]
    assert len(held) >= 15, [c.id for c in held]
    assert all(c.go_path and c.go_file.endswith("tas/tas_test.go") for c in CASES)
