"""What only the `cache` read mode does: its own identity's reads, freshness, convergence.

(Access in both modes is checked by the RBAC matrix, edges, paging, bad-input and tenant tests,
which run once per read mode.)
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kueue_graphql.http import ReadMode
from kueue_graphql.kube.client import ApiCall, KubeClient
from kueue_graphql.kube.reflector import GoneError, Reflector
from kueue_graphql.kube.resources import LOCAL_QUEUE
from kueue_graphql.kube.store import ALL
from kueue_graphql.kube.transport import build_api_client, close_api_client
from kueue_graphql.lookups.cache_indexes import kueue_store
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server, server_in_mode
from tests.waiting import SETTLE_SECONDS, async_wait_until

pytestmark = pytest.mark.cluster

LOCAL_QUEUES = """{ localQueues(first: 100, namespace: "team-a") {
  totalCount nodes { name raw } } }"""


@pytest.fixture(scope="module")
async def cache_server(cluster: Cluster) -> AsyncIterator[Server]:
    async with server_in_mode(cluster, ReadMode.CACHE) as started:
        yield started


def kubectl_queues(cluster: Cluster) -> dict[str, dict[str, str]]:
    """team-a's LocalQueues as kubectl shows them to alice: name -> labels."""
    shown = json.loads(
        cluster.kubectl("get", "localqueues", "-n", "team-a", "-o", "json", user="alice").stdout
    )
    return {q["metadata"]["name"]: q["metadata"].get("labels") or {} for q in shown["items"]}


def service_queues(body: dict[str, Any]) -> dict[str, dict[str, str]]:
    nodes = body["data"]["localQueues"]["nodes"]
    return {n["name"]: n["raw"]["metadata"].get("labels") or {} for n in nodes}


async def converged(server: Server, cluster: Cluster, seconds: float = SETTLE_SECONDS) -> float:
    """Seconds until the service shows alice what kubectl shows her (fails after `seconds`)."""
    started = time.monotonic()
    expected = kubectl_queues(cluster)
    answers: list[dict[str, Any]] = []

    async def shows_it() -> bool:
        answers[:] = [await server.query(LOCAL_QUEUES, token=cluster.token("alice"))]
        return "errors" not in answers[0] and service_queues(answers[0]) == expected

    await async_wait_until(
        "the service showing alice what kubectl shows her",
        shows_it,
        seconds,
        detail=lambda: f"{expected} != {answers}",
    )
    return time.monotonic() - started


async def test_the_impersonate_identity_cannot_fill_a_cache(cluster: Cluster) -> None:
    """The impersonate-mode ServiceAccount may read no Workload itself; a cache-mode server run
    under it stays not ready, says why, and answers UNAVAILABLE (never anyone's data)."""
    refused = cluster.kubectl(
        "get", "workloads", "-A", kubeconfig=cluster.server_kubeconfig, check=False
    )
    assert refused.returncode != 0
    assert "forbidden" in refused.stderr.lower()
    async with running_server(cluster.server_kubeconfig, read_mode=ReadMode.CACHE) as server:

        async def says_why() -> httpx.Response | None:
            ready = await server.http.get("/readyz")
            return ready if "workloads.kueue.x-k8s.io" in ready.text else None

        ready = await async_wait_until("/readyz naming the Workloads' cache", says_why)
        assert ready.status_code == 503
        assert "the cache of workloads.kueue.x-k8s.io is not synced yet" in ready.text
        body = await server.query(
            '{ workloads(first: 5, namespace: "team-a") { nodes { name } } }',
            token=cluster.token("alice"),
        )
        assert body["data"]["workloads"] is None
        assert {e["extensions"]["code"] for e in body["errors"]} == {"UNAVAILABLE"}


async def test_admission_path_reads_no_kueue_object_from_the_api_server(
    cache_server: Server, cluster: Cluster
) -> None:
    query = """{ workloadFor(namespace: "team-a", kind: "Job", name: "healthy-running") {
      name localQueue { name clusterQueue { name cohort { name } } } }
      job(namespace: "team-a", name: "healthy-running") { name pods { name } } }"""
    calls: list[ApiCall] = []
    cache_server.kube.observers.append(calls.append)
    try:
        body = await cache_server.query(query, token=cluster.token("viewer"))
    finally:
        cache_server.kube.observers.remove(calls.append)
    assert "errors" not in body, body["errors"]
    assert body["data"]["workloadFor"]["localQueue"]["clusterQueue"]["name"] == "cq-team-a"
    kueue_reads = [c.describe() for c in calls if c.path.startswith("/apis/kueue.x-k8s.io/")]
    assert kueue_reads == []
    # The Job and its Pods are still read as the caller.
    assert {c.as_user for c in calls if c.path.startswith(("/apis/batch/", "/api/v1/"))} == {
        "viewer"
    }
    cache = body["extensions"]["cache"]
    assert {"Workload", "LocalQueue", "ClusterQueue"} <= set(cache["kinds"])
    assert int(cache["resourceVersion"]) > 0


async def test_a_query_without_kueue_objects_has_no_cache_extension(
    cache_server: Server, cluster: Cluster
) -> None:
    body = await cache_server.query(
        '{ jobs(first: 5, namespace: "team-a") { nodes { name } } }', token=cluster.token("alice")
    )
    assert "errors" not in body
    assert "cache" not in body["extensions"]


async def test_changes_reach_the_cache(cache_server: Server, cluster: Cluster) -> None:
    """A change (label), a new object and a deleted one: the cache shows what kubectl shows
    within 10 s, and its resourceVersion is at least the changed object's."""
    mark = uuid.uuid4().hex[:12]
    cluster.kubectl(
        "label",
        "localqueue",
        "lq-team-a",
        "-n",
        "team-a",
        f"kueue-graphql.example/mark={mark}",
        "--overwrite",
    )
    probe = f"lq-cache-probe-{mark[:6]}"
    created = cluster.kubectl(
        "apply",
        "-f",
        str(_write_local_queue(cluster, probe)),
    )
    assert created.returncode == 0
    try:
        await converged(cache_server, cluster)
        changed = json.loads(
            cluster.kubectl("get", "localqueue", probe, "-n", "team-a", "-o", "json").stdout
        )
        body = await cache_server.query(LOCAL_QUEUES, token=cluster.token("alice"))
        cache_version = int(body["extensions"]["cache"]["kinds"]["LocalQueue"]["resourceVersion"])
        assert cache_version >= int(changed["metadata"]["resourceVersion"])
    finally:
        cluster.kubectl("delete", "localqueue", probe, "-n", "team-a", "--wait=false", check=False)
        cluster.kubectl(
            "label",
            "localqueue",
            "lq-team-a",
            "-n",
            "team-a",
            "kueue-graphql.example/mark-",
            check=False,
        )
    await converged(cache_server, cluster)


def cache_metrics(text: str) -> dict[str, dict[str, float]]:
    """/metrics' kueue_graphql_cache_* samples: name -> resource -> value."""
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("kueue_graphql_cache_"):
                out.setdefault(sample.name, {})[sample.labels["resource"]] = sample.value
    return out


async def test_metrics_report_every_informer(cache_server: Server, cluster: Cluster) -> None:
    """/metrics says, per cached kind: objects (what kubectl counts), synced, the age of the
    last word from the API server, the resourceVersion, lists, watches, events, failures;
    a change shows as an event and a newer resourceVersion."""
    resources = {"workloads", "localqueues", "clusterqueues", "cohorts", "resourceflavors"}
    resources |= {"admissionchecks", "workloadpriorityclasses", "topologies"}

    async def every_watch_open() -> dict[str, dict[str, float]] | None:
        # Each watch opens right after its list.
        metrics = cache_metrics((await cache_server.metrics.get("/metrics")).text)
        watches = metrics.get("kueue_graphql_cache_watches_total", {})
        return metrics if set(watches) == resources and min(watches.values()) >= 1 else None

    metrics = await async_wait_until("a watch of every cached kind", every_watch_open)
    assert set(metrics["kueue_graphql_cache_objects"]) == resources
    assert set(metrics["kueue_graphql_cache_synced"].values()) == {1.0}
    for kind in ("workloads", "localqueues", "clusterqueues"):
        shown = json.loads(cluster.kubectl("get", kind, "-A", "-o", "json").stdout)["items"]
        assert metrics["kueue_graphql_cache_objects"][kind] == len(shown), kind
    for name in ("lists", "watches"):
        assert min(metrics[f"kueue_graphql_cache_{name}_total"].values()) >= 1, name
    assert set(metrics["kueue_graphql_cache_failures_total"].values()) == {0.0}
    assert set(metrics["kueue_graphql_cache_watch_gone_total"].values()) == {0.0}
    assert 0 <= max(metrics["kueue_graphql_cache_last_event_age_seconds"].values()) < 120
    version = metrics["kueue_graphql_cache_resource_version"]["localqueues"]
    events = metrics["kueue_graphql_cache_watch_events_total"]["localqueues"]
    mark = uuid.uuid4().hex[:12]
    labelled_at = time.monotonic()
    cluster.kubectl(
        "label", "localqueue", "lq-team-a", "-n", "team-a",
        f"kueue-graphql.example/mark={mark}", "--overwrite",
    )  # fmt: skip
    # (kubectl label -o json prints the object with its version before the change)
    changed = cluster.kubectl("get", "localqueue", "lq-team-a", "-n", "team-a", "-o", "json")
    written = int(json.loads(changed.stdout)["metadata"]["resourceVersion"])
    try:

        async def seen() -> dict[str, dict[str, float]] | None:
            after = cache_metrics((await cache_server.metrics.get("/metrics")).text)
            version_now = after["kueue_graphql_cache_resource_version"]["localqueues"]
            return after if version_now >= written else None

        after = await async_wait_until("the cache at the label's resourceVersion", seen)
        assert after["kueue_graphql_cache_resource_version"]["localqueues"] >= written > version
        assert after["kueue_graphql_cache_watch_events_total"]["localqueues"] > events
        # The last event is the label's (or later): no older than the time since labelling.
        age = after["kueue_graphql_cache_last_event_age_seconds"]["localqueues"]
        assert age <= time.monotonic() - labelled_at, age
    finally:
        cluster.kubectl(
            "label", "localqueue", "lq-team-a", "-n", "team-a", "kueue-graphql.example/mark-",
            check=False,
        )  # fmt: skip


def _write_local_queue(cluster: Cluster, name: str) -> Any:
    path = cluster.state_dir / f"{name}.yaml"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": "team-a"},
                "spec": {"clusterQueue": "cq-team-a"},
            }
        )
    )
    return path


FROZEN_SECONDS = 8


@pytest.mark.disrupts_cluster
async def test_the_cache_converges_after_the_api_server_stops_and_resumes(
    cache_server: Server, cluster: Cluster
) -> None:
    """SIGSTOP the kube-apiserver (FROZEN_SECONDS): answers meanwhile are the last good state or
    UNAVAILABLE, nothing else; after SIGCONT, changes made then show within 10 s."""
    await converged(cache_server, cluster)
    before = kubectl_queues(cluster)
    token = cluster.token("alice")
    # Warm: the token review and access decisions are cached, so some answers need no API call.
    await cache_server.query(LOCAL_QUEUES, token=token)
    outcomes: list[str] = []
    # The freeze lasts FROZEN_SECONDS by construction (a request still out then is abandoned),
    # not by an assertion on elapsed time: on a loaded machine one answer may be slow.
    stopped_at = time.monotonic()
    with cluster.api_server_frozen():
        while (left := FROZEN_SECONDS - (time.monotonic() - stopped_at)) > 0:
            try:
                body = await asyncio.wait_for(
                    cache_server.query(LOCAL_QUEUES, token=token), timeout=left
                )
            except TimeoutError:
                break
            if body.get("errors"):
                codes = {e["extensions"]["code"] for e in body["errors"]}
                assert codes == {"UNAVAILABLE"}, body
                outcomes.append("UNAVAILABLE")
            else:
                # The last good state: exactly what was there before the stop.
                assert service_queues(body) == before
                outcomes.append("last-good")
            await asyncio.sleep(0.5)
    assert outcomes
    mark = uuid.uuid4().hex[:12]
    cluster.kubectl(
        "label",
        "localqueue",
        "lq-small",
        "-n",
        "team-a",
        f"kueue-graphql.example/mark={mark}",
        "--overwrite",
    )
    try:
        seconds = await converged(cache_server, cluster)
        print(
            f"during the stop: {outcomes.count('last-good')} last-good answers, "
            f"{outcomes.count('UNAVAILABLE')} UNAVAILABLE; converged {seconds:.2f} s after resume"
        )
    finally:
        cluster.kubectl(
            "label",
            "localqueue",
            "lq-small",
            "-n",
            "team-a",
            "kueue-graphql.example/mark-",
            check=False,
        )
    await converged(cache_server, cluster)


async def test_a_watch_from_a_version_too_old_is_gone_and_the_informer_lists_again(
    cluster: Cluster,
) -> None:
    """410 Gone from the real API server (a watch from resourceVersion 1, long compacted out
    of its watch cache) makes the informer list again; the store keeps serving throughout."""
    api_client = await build_api_client(str(cluster.cache_server_kubeconfig), None, False)
    client = KubeClient(api_client)
    store = kueue_store(LOCAL_QUEUE)
    informer = Reflector(client, LOCAL_QUEUE, store)
    try:
        assert await informer._list()
        listed = store.count(ALL)
        assert listed == len(
            json.loads(cluster.kubectl("get", "localqueues", "-A", "-o", "json").stdout)["items"]
        )
        informer._resource_version = "1"
        with pytest.raises(GoneError):
            await informer._watch()
        # The loop: Gone -> list again (a second complete list), then watch from its version.
        informer._resource_version = "1"
        informer.start()

        async def listed_again() -> bool:
            assert store.count(ALL) == listed  # the previous complete state meanwhile
            return informer.status.lists >= 2 and informer.status.watches >= 1

        await async_wait_until(
            "the informer listing again, then watching", listed_again, interval=0.1
        )
        assert informer.status.lists >= 2
        assert informer.status.gone >= 1
        assert informer.problem() is None
        assert int(store.resource_version) > 1
    finally:
        await informer.stop()
        await close_api_client(api_client)
