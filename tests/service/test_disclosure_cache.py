"""In the `cache` read mode the quota disclosure policy reads ClusterQueues and ResourceFlavors
from the cache's stores: the same whatIf answer as in `impersonate` mode, without the
service-identity API reads (`extensions.apiCalls` counts every API call of the request)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.cli.render import WHAT_IF_QUERY
from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.http import ReadMode
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server, server_in_mode

pytestmark = pytest.mark.cluster

ASK = {
    "namespace": "team-a",
    "localQueue": "lq-small",
    "podSets": [{"count": 3, "requests": [{"resource": "cpu", "quantity": "1"}]}],
}


@pytest.fixture(scope="module")
async def cached(cluster: Cluster) -> AsyncIterator[Server]:
    async with server_in_mode(
        cluster, ReadMode.CACHE, quota_disclosure=QuotaDisclosure.QUOTA
    ) as started:
        yield started


@pytest.fixture(scope="module")
async def direct(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA) as s:
        yield s


async def _ask(server: Server, cluster: Cluster) -> dict[str, Any]:
    # Twice: the second answer is the steady state (per-caller authorization results cached).
    await server.query(WHAT_IF_QUERY, ASK, token=cluster.token("alice"))
    body = await server.query(WHAT_IF_QUERY, ASK, token=cluster.token("alice"))
    assert "errors" not in body, body
    return body


async def test_cache_mode_disclosure_reads_the_cache(
    cached: Server, direct: Server, cluster: Cluster
) -> None:
    # alice may not read the ClusterQueue herself: the figures come from the policy.
    refused = cluster.kubectl("get", "clusterqueue", "cq-small-2cpu", user="alice", check=False)
    assert refused.returncode != 0
    from_cache = await _ask(cached, cluster)
    from_api = await _ask(direct, cluster)
    assert from_cache["data"] == from_api["data"]
    assert from_cache["data"]["whatIf"]["numbersFrom"] == "DISCLOSURE_POLICY"
    assert from_cache["data"]["whatIf"]["verdict"] == "NEVER_FITS"
    # No GET clusterqueues/cq-small-2cpu nor LIST resourceflavors as the service.
    print("apiCalls cache", from_cache["extensions"]["apiCalls"], "impersonate",
          from_api["extensions"]["apiCalls"])  # fmt: skip
    assert from_cache["extensions"]["apiCalls"] <= from_api["extensions"]["apiCalls"] - 2
