"""Apollo Client 4's default InMemoryCache normalises kueue-graphql's entities by their global
`id` (tests/node/normalised.mjs, run against the real server as alice): two queries returning the
same Workload share one cache entry, and a `diagnosis` subscription's update over WebSocket
refreshes the diagnosis a watched query shows, with no refetch."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kueue_graphql.http import ReadMode
from tests import node_clients
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, server_in_mode
from tests.service.test_subscriptions import JOB as LIVE_JOB
from tests.service.test_subscriptions import SCENARIO as LIVE_SCENARIO
from tests.teardown import remove, remove_pods
from tests.waiting import SETTLE_SECONDS, async_wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

NAMESPACE = "team-a"
JOB = "apollo-quota-held"
# test_subscriptions' 1-CPU ClusterQueue, its LocalQueue in team-a and its quota-held Job
# (2 CPUs), under names of this module's own.
SCENARIO = "---".join([*LIVE_SCENARIO.split("---")[:2], LIVE_JOB])
for live, ours in (("cq-live-1cpu", "cq-apollo-1cpu"), ("lq-live", "lq-apollo")):
    SCENARIO = SCENARIO.replace(live, ours)
SCENARIO = SCENARIO.replace("live-quota-held", JOB)
OBJECTS = (
    ("job", JOB, "-n", NAMESPACE),
    ("localqueue", "lq-apollo", "-n", NAMESPACE),
    ("clusterqueue", "cq-apollo-1cpu"),
)
RAISE_QUOTA = [
    {
        "op": "replace",
        "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota",
        "value": "4",
    }
]


def _remove(cluster: Cluster) -> None:
    for args in OBJECTS:
        remove(cluster, *args)
    remove_pods(cluster, NAMESPACE, "-l", f"job-name={JOB}")


@pytest.fixture(scope="module")
def scenario(
    cluster: Cluster, read_mode: ReadMode, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    # Made again for each read mode: the test raises the quota.
    _remove(cluster)
    manifest = tmp_path_factory.mktemp("apollo") / "scenario.yaml"
    manifest.write_text(SCENARIO)
    cluster.kubectl("apply", "-f", str(manifest))
    yield
    _remove(cluster)


@pytest.fixture(scope="module")
async def server(cluster: Cluster, read_mode: ReadMode) -> AsyncIterator[Server]:
    async with server_in_mode(cluster, read_mode) as started:
        yield started


async def next_line(process: asyncio.subprocess.Process, deadline: float) -> dict[str, Any]:
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), deadline - time.monotonic())
    except TimeoutError:
        raise AssertionError("normalised.mjs printed nothing in time") from None
    if not line:
        assert process.stderr is not None
        raise AssertionError(f"normalised.mjs ended: {(await process.stderr.read()).decode()}")
    printed: dict[str, Any] = json.loads(line)
    assert printed["step"] != "error", printed
    return printed


async def test_the_default_cache_normalises_and_a_subscription_refreshes_it(
    server: Server, cluster: Cluster, scenario: None
) -> None:
    token = cluster.token("alice")
    stages: list[str] = []

    async def held() -> bool:
        answer = await server.query(
            'query Held($ns: String!, $job: String!) { diagnose(namespace: $ns, kind: "Job", '
            "name: $job) { id stage } }",
            {"ns": NAMESPACE, "job": JOB},
            token=token,
        )
        stages.append(answer["data"]["diagnose"]["stage"])
        return stages[-1] == "WAITING_FOR_QUOTA_RESERVATION"

    # Kueue makes the Job's Workload shortly after the scenario is applied (NO_WORKLOAD_YET
    # until then: the assertion here once named a stage that does not exist, "NO_WORKLOAD", and
    # failed when the query came first).
    await async_wait_until(
        "the Job held for quota", held, SETTLE_SECONDS, detail=lambda: f"stages {stages[-3:]}"
    )
    env = {
        "KGQL_URL": f"{server.url}/graphql",
        "KGQL_TOKEN": token,
        "KGQL_NAMESPACE": NAMESPACE,
        "KGQL_JOB": JOB,
        "KGQL_SECONDS": str(int(SETTLE_SECONDS * 3)),
    }
    deadline = time.monotonic() + SETTLE_SECONDS * 3 + 30
    async with node_clients.started("normalised.mjs", env) as process:
        shared = await next_line(process, deadline)
        assert shared["step"] == "shared", shared
        key = shared["key"]
        assert key.startswith("Workload:")
        # Both queries' Workload is the one cache entry, holding both queries' fields.
        assert shared["pageKey"] == key
        assert {"status", "priority", "name", "id"} <= set(shared["entry"])
        refs = [v for k, v in shared["rootRefs"].items() if k.startswith("workloadFor(")]
        assert refs == [{"__ref": key}]

        line = await next_line(process, deadline)
        while line["step"] != "subscribed":
            assert line["step"] == "watched", line
            line = await next_line(process, deadline)
        assert line["stage"] == "WAITING_FOR_QUOTA_RESERVATION", line
        cluster.kubectl(
            "patch", "clusterqueue", "cq-apollo-1cpu", "--type=json", "-p", json.dumps(RAISE_QUOTA)
        )
        while line["step"] != "refreshed":
            line = await next_line(process, deadline)
        # The watched query (one HTTP answer, then the cache only) showed the pushed stage.
        assert line["seen"][0] == "WAITING_FOR_QUOTA_RESERVATION"
        assert line["stage"] != "WAITING_FOR_QUOTA_RESERVATION"
        assert line["stage"] in line["pushed"]
        # One cache entry for the diagnosis, whether queried or pushed.
        assert len(line["diagnosisKeys"]) == 1, line
