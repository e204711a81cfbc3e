"""The GraphQL over HTTP audit suite (npm graphql-http's `serverAudits`, pinned in
tests/node/package-lock.json) against the real server, as a real user: no MUST audit may fail
and no SHOULD audit may warn. Every audit's result is printed (`pytest -s` shows them)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import node_clients
from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = pytest.mark.cluster

# An audit graphql-http has had since its first release: the suite ran, not something else.
ACCEPTS_APPLICATION_JSON = "4655"


def failures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results that break the bar: a MUST that fails, a SHOULD that warns, anything that
    errs (an audit that threw). MAY audits only give notices; those are printed, not failed."""
    return [r for r in results if r["status"] in ("error", "warn")]


def printed(result: dict[str, Any]) -> str:
    line = f"{result['status']:<6} {result['id']}  {result['name']}"
    if result["status"] != "ok":
        line += (
            f"\n         reason: {result.get('reason')}\n         answer: "
            f"{result.get('httpStatus')} {result.get('contentType')} {result.get('body')}"
        )
    return line


async def test_graphql_over_http_audit(server: Server, cluster: Cluster) -> None:
    audit = await node_clients.run(
        "audit.mjs", {"KGQL_URL": f"{server.url}/graphql", "KGQL_TOKEN": cluster.token("viewer")}
    )
    assert audit.returncode == 0, audit.stderr
    results = node_clients.json_lines(audit.stdout)
    print(f"\ngraphql-http serverAudits against {server.url}/graphql: {len(results)} audits")
    for result in results:
        print(printed(result))
    ids = [result["id"] for result in results]
    assert len(set(ids)) == len(ids), "each audit is reported once"
    assert ACCEPTS_APPLICATION_JSON in ids
    bad = failures(results)
    assert not bad, "\n".join(printed(result) for result in bad)
