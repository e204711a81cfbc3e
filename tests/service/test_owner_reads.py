"""The reads next to an owner's Workload (`workloadFor { events job { pods } }`).

In the `cache` read mode the Workload is found by the owner's kind and name, so the Workload's
Events and the Job's Pods are listed beside the Job's own read instead of after it. These tests
hold that to the same answers as the `impersonate` mode, for every user, and to the Pods of
this Job only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kueue_graphql.http import ReadMode
from kueue_graphql.kube.client import ApiCall
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, server_in_mode
from tests.service.test_rbac_matches_kubectl import USERS

pytestmark = pytest.mark.cluster

OWNER_READS = """query($job: String!) {
  workloadFor(namespace: "team-a", kind: "Job", name: $job) {
    name
    localQueue { name }
    events { reason message involvedObject { kind name } }
    job { name uid pods { name phase } }
  }
}"""

JOBS = ["healthy-running", "too-big-3x1cpu", "no-such-job"]


@pytest.fixture(scope="module")
async def servers(cluster: Cluster) -> AsyncIterator[dict[ReadMode, Server]]:
    async with (
        server_in_mode(cluster, ReadMode.IMPERSONATE) as impersonate,
        server_in_mode(cluster, ReadMode.CACHE) as cache,
    ):
        yield {ReadMode.IMPERSONATE: impersonate, ReadMode.CACHE: cache}


def answer(body: dict[str, Any]) -> tuple[Any, list[tuple[tuple[Any, ...], str, str]]]:
    """The data and every error's (path, code, message), in a stable order."""
    errors = sorted(
        (tuple(e.get("path") or ()), e["extensions"]["code"], e["message"])
        for e in body.get("errors") or []
    )
    return body.get("data"), errors


@pytest.mark.parametrize("user", USERS)
async def test_every_user_gets_the_same_answer_in_both_read_modes(
    servers: dict[ReadMode, Server], cluster: Cluster, user: str
) -> None:
    """Users who may not get the Job, list Pods or list Events (dave, carol, nobody ...) get
    exactly the errors and data of the impersonated reads; so does everyone else."""
    for job in JOBS:
        answers = {
            mode: answer(await server.query(OWNER_READS, {"job": job}, token=cluster.token(user)))
            for mode, server in servers.items()
        }
        assert answers[ReadMode.CACHE] == answers[ReadMode.IMPERSONATE], (user, job)


async def test_pods_and_events_are_listed_while_the_job_is_read(
    servers: dict[ReadMode, Server], cluster: Cluster
) -> None:
    """Cache mode: the Pods and Events lists are sent before the Job's answer is in. The Job's
    answer is held back until both are sent (at most 5 s): were they sent only after it, as the
    Job's uid would require, the order below would show it."""
    server = servers[ReadMode.CACHE]
    kube = server.kube
    exchange = kube._exchange
    order: list[str] = []
    both_sent = asyncio.Event()
    job_path = "/apis/batch/v1/namespaces/team-a/jobs/healthy-running"

    async def held(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        kind = path.rsplit("/", 1)[-1]
        if kind in ("pods", "events"):
            order.append(f"{kind} sent")
            if {"pods sent", "events sent"} <= set(order):
                both_sent.set()
        response = await exchange(method, path, *args, **kwargs)
        if path == job_path:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await both_sent.wait()
            order.append("job answered")
        return response

    kube._exchange = held  # type: ignore[method-assign]
    try:
        body = await server.query(
            OWNER_READS, {"job": "healthy-running"}, token=cluster.token("viewer")
        )
    finally:
        del kube._exchange
    assert "errors" not in body, body["errors"]
    assert body["data"]["workloadFor"]["job"]["pods"], "healthy-running has a Pod"
    # The Workload's Events as kubectl lists them for viewer (none once the control plane's
    # 1 h event TTL has passed: the order below holds either way).
    workload = body["data"]["workloadFor"]
    selector = f"involvedObject.kind=Workload,involvedObject.name={workload['name']}"
    listed = cluster.get_json(
        "events", "-n", "team-a", "--field-selector", selector, user="viewer"
    )["items"]
    assert sorted(e["reason"] for e in workload["events"]) == sorted(e["reason"] for e in listed), (
        workload["events"],
        listed,
    )
    assert order == ["pods sent", "events sent", "job answered"] or order == [
        "events sent",
        "pods sent",
        "job answered",
    ], order


@pytest.fixture
def older_pod(cluster: Cluster) -> Any:
    """A Pod labelled as healthy-running's, with another Job's uid: what an older Job of the
    same name leaves behind when it is deleted without its Pods (`--cascade=orphan`). It stays
    Pending (no node matches it)."""
    name = f"healthy-running-older-{uuid.uuid4().hex[:6]}"
    other_uid = str(uuid.uuid4())
    labels = {
        "batch.kubernetes.io/job-name": "healthy-running",
        "job-name": "healthy-running",
        "batch.kubernetes.io/controller-uid": other_uid,
        "controller-uid": other_uid,
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "labels": labels},
        "spec": {
            "nodeSelector": {"kueue-graphql.example/no-such-node": "true"},
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    path = cluster.state_dir / f"{name}.json"
    path.write_text(json.dumps(pod))
    cluster.kubectl("apply", "-f", str(path))
    try:
        yield name
    finally:
        cluster.kubectl("delete", "pod", name, "-n", "team-a", "--wait=false", check=False)


@pytest.mark.parametrize("mode", list(ReadMode))
async def test_a_pod_of_an_older_job_of_the_same_name_is_not_shown(
    servers: dict[ReadMode, Server], cluster: Cluster, older_pod: str, mode: ReadMode
) -> None:
    labelled = cluster.get_json("pods", "-n", "team-a", "-l", "job-name=healthy-running")
    assert older_pod in {p["metadata"]["name"] for p in labelled["items"]}
    body = await servers[mode].query(
        OWNER_READS, {"job": "healthy-running"}, token=cluster.token("viewer")
    )
    assert "errors" not in body, body["errors"]
    job = body["data"]["workloadFor"]["job"]
    shown = {p["name"] for p in job["pods"]}
    expected = {
        p["metadata"]["name"]
        for p in labelled["items"]
        if p["metadata"]["labels"].get("batch.kubernetes.io/controller-uid") == job["uid"]
    }
    assert older_pod not in shown
    assert shown
    assert shown == expected


async def test_cache_mode_reads_as_the_caller_from_the_api_servers_watch_cache(
    servers: dict[ReadMode, Server], cluster: Cluster
) -> None:
    """Cache mode: the Job, Pods and Events read as the caller carry resourceVersion=0 (served
    from the API server's watch cache, as fresh as the informers); impersonate mode's reads are
    quorum reads, with no resourceVersion. Both answers are the same."""
    sent: dict[ReadMode, list[ApiCall]] = {}
    bodies = {}
    for mode, server in servers.items():
        calls: list[ApiCall] = []
        server.kube.observers.append(calls.append)
        try:
            bodies[mode] = await server.query(
                OWNER_READS, {"job": "healthy-running"}, token=cluster.token("viewer")
            )
        finally:
            server.kube.observers.remove(calls.append)
        sent[mode] = [c for c in calls if c.as_user == "viewer"]
    assert answer(bodies[ReadMode.CACHE]) == answer(bodies[ReadMode.IMPERSONATE])

    def reads(mode: ReadMode) -> dict[str, str | None]:
        """resourceVersion sent, by the plural read (a get's path ends with the object's name)."""
        found: dict[str, str | None] = {}
        for call in sent[mode]:
            segments = call.path.split("/")
            plural = segments[-2] if segments[-1] == "healthy-running" else segments[-1]
            found[plural] = dict(call.query).get("resourceVersion")
        return found

    assert reads(ReadMode.CACHE) == {"jobs": "0", "pods": "0", "events": "0"}
    impersonated = reads(ReadMode.IMPERSONATE)
    assert {"jobs", "pods", "events"} <= set(impersonated), impersonated
    assert set(impersonated.values()) == {None}, impersonated
