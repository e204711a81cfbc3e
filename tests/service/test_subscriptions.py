"""Subscriptions over graphql-transport-ws against the real control plane, as several users."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kueue_graphql.context import LiveLimits
from kueue_graphql.http import ReadMode
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, server_in_mode
from tests.service.live_client import Subscriber, subscriber

pytestmark = pytest.mark.cluster

# Short re-check interval, as a test server is allowed: revocation must show within it.
TTL_SECONDS = 3.0

DIAGNOSIS = """
subscription Live($ns: String!, $kind: String!, $name: String!) {
  diagnosis(namespace: $ns, kind: $kind, name: $name) {
    stage layer summary
    reasons { code }
    quota { verdict }
    workload { name }
  }
}
"""

SCENARIO = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-live-1cpu}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: standard
      resources:
      - {name: cpu, nominalQuota: "1"}
      - {name: memory, nominalQuota: 4Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-live, namespace: team-a}
spec: {clusterQueue: cq-live-1cpu}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: live-watcher, namespace: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: live-watcher-tenant-reader, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kueue-graphql-tenant-reader}
subjects:
- {kind: ServiceAccount, name: live-watcher, namespace: team-a}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: live-quota-held
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: lq-live}
spec:
  parallelism: 1
  completions: 1
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/kueue-graphql/sleep:never-pulled
        command: [sleep, "3600"]
        resources:
          requests: {cpu: "2", memory: "256Mi"}
          limits: {cpu: "2", memory: "256Mi"}
"""


def _apply(cluster: Cluster, manifest: str) -> None:
    subprocess.run(
        [
            str(cluster.kubectl_bin),
            "--kubeconfig",
            str(cluster.admin_kubeconfig),
            "apply",
            "-f",
            "-",
        ],
        input=manifest,
        text=True,
        check=True,
        capture_output=True,
    )


# Held for quota whatever the other tests raise the quota to: flipped by the heap test.
HEAP_JOB = JOB.replace("live-quota-held", "live-heap-held").replace('"2"', '"16"')

SCENARIO_OBJECTS = (
    ("job", "live-quota-held", "-n", "team-a"),
    ("job", "live-heap-held", "-n", "team-a"),
    ("localqueue", "lq-live", "-n", "team-a"),
    ("clusterqueue", "cq-live-1cpu"),
    ("rolebinding", "live-watcher-tenant-reader", "-n", "team-a"),
    ("serviceaccount", "live-watcher", "-n", "team-a"),
)


def _delete_scenario(cluster: Cluster, *, wait: bool) -> None:
    # No kubelet: a deleted Pod stays Terminating until it is removed by force.
    cluster.kubectl(
        "delete",
        "pods",
        "-n",
        "team-a",
        "-l",
        "job-name in (live-quota-held, live-heap-held)",
        "--force",
        "--grace-period=0",
        "--ignore-not-found",
        check=False,
    )
    for args in SCENARIO_OBJECTS:
        cluster.kubectl(
            "delete",
            *args,
            "--ignore-not-found",
            f"--wait={str(wait).lower()}",
            "--cascade=foreground" if wait else "--cascade=background",
            check=False,
        )


@pytest.fixture(scope="module")
def scenario(cluster: Cluster) -> Iterator[None]:
    # A fresh quota-held Job on its own 1-CPU ClusterQueue, whatever an earlier run left.
    _delete_scenario(cluster, wait=True)
    _apply(cluster, SCENARIO)
    yield
    _delete_scenario(cluster, wait=False)


@pytest.fixture(scope="module")
async def live_server(cluster: Cluster, read_mode: ReadMode) -> AsyncIterator[Server]:
    # The tests marked both_read_modes run in each mode (cache: woken by the informers); the
    # others in the default one (KGQL_TEST_READ_MODE).
    async with server_in_mode(
        cluster,
        read_mode,
        token_cache_ttl_seconds=TTL_SECONDS,
        authz_cache_ttl_seconds=TTL_SECONDS,
        live_limits=LiveLimits(recheck_seconds=TTL_SECONDS, per_connection=3, send_queue=2),
    ) as started:
        yield started


async def next_message(sub: Subscriber, seconds: float) -> dict[str, Any]:
    return await asyncio.wait_for(sub.receive(), seconds)


async def until_stage(sub: Subscriber, stage: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    seen: list[str] = []
    while True:
        try:
            message = await next_message(sub, max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            raise AssertionError(f"no {stage} within {seconds} s; pushed: {seen}") from None
        assert message["type"] == "next", message
        assert "errors" not in message["payload"], message
        diagnosis = message["payload"]["data"]["diagnosis"]
        seen.append(f"{diagnosis['stage']}: {diagnosis['summary']}")
        if diagnosis["stage"] == stage:
            return diagnosis


def set_pod_running(cluster: Cluster, namespace: str, job: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        pods = cluster.get_json("pods", "-n", namespace, "-l", f"job-name={job}")["items"]
        bound = [
            p
            for p in pods
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
        ]
        if bound:
            break
        assert time.monotonic() < deadline, "the Pod was never bound to a Node"
        time.sleep(0.5)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for pod in bound:
        container = pod["spec"]["containers"][0]
        status = {
            "status": {
                "phase": "Running",
                "startTime": now,
                "conditions": [
                    {"type": t, "status": "True", "lastTransitionTime": now}
                    for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
                ],
                "containerStatuses": [
                    {
                        "name": container["name"],
                        "image": container["image"],
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "started": True,
                        "state": {"running": {"startedAt": now}},
                    }
                ],
            }
        }
        cluster.kubectl(
            "patch",
            "pod",
            pod["metadata"]["name"],
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(status),
        )


@pytest.mark.both_read_modes
async def test_quota_raise_pushes_admitted_then_running(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    _apply(cluster, JOB)
    variables = {"ns": "team-a", "kind": "Job", "name": "live-quota-held"}
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe("1", DIAGNOSIS, variables)
        held = await until_stage(sub, "WAITING_FOR_QUOTA_RESERVATION", 30)
        # The same verdict a query gives alice.
        queried = await live_server.query(
            'query($ns: String!, $name: String!) { diagnose(namespace: $ns, kind: "Job", '
            "name: $name) { stage quota { verdict } } }",
            {"ns": "team-a", "name": "live-quota-held"},
            token=cluster.token("alice"),
        )
        assert queried["data"]["diagnose"]["stage"] == held["stage"]
        assert held["quota"]["verdict"] == queried["data"]["diagnose"]["quota"]["verdict"]

        cluster.kubectl(
            "patch",
            "clusterqueue",
            "cq-live-1cpu",
            "--type=json",
            "-p",
            json.dumps(
                [
                    {
                        "op": "replace",
                        "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota",
                        "value": "4",
                    }
                ]
            ),
        )
        changed = time.monotonic()
        admitted = await until_stage(sub, "ADMITTED_PODS_PENDING", 10)
        assert time.monotonic() - changed < 10
        workload = cluster.get_json("workloads", "-n", "team-a", user="alice")["items"]
        ours = [w for w in workload if w["metadata"]["name"] == admitted["workload"]["name"]]
        conditions = {c["type"]: c["status"] for c in ours[0]["status"]["conditions"]}
        assert conditions.get("Admitted") == "True", conditions

        set_pod_running(cluster, "team-a", "live-quota-held")
        changed = time.monotonic()
        await until_stage(sub, "RUNNING", 10)
        assert time.monotonic() - changed < 10


@pytest.mark.both_read_modes
async def test_another_namespace_is_forbidden_and_nothing_else(
    live_server: Server, cluster: Cluster
) -> None:
    bob_workload = cluster.get_json("workloads", "-n", "team-b")["items"][0]["metadata"]["name"]
    assert cluster.kubectl("get", "workloads", "-n", "team-b", user="alice", check=False).returncode
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe(
            "1", DIAGNOSIS, {"ns": "team-b", "kind": "Workload", "name": bob_workload}
        )
        message = await next_message(sub, 10)
        assert message["type"] == "next", message
        assert message["payload"]["data"] is None
        assert [e["extensions"]["code"] for e in message["payload"]["errors"]] == ["FORBIDDEN"], (
            message
        )
        assert (await next_message(sub, 10))["type"] == "complete"


@pytest.mark.both_read_modes
async def test_rolebinding_removed_mid_stream_ends_it(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    _apply(cluster, JOB)
    token = cluster.service_account_token("team-a", "live-watcher")
    variables = {"ns": "team-a", "kind": "Job", "name": "live-quota-held"}
    async with subscriber(live_server.url, token) as sub:
        await sub.subscribe("1", DIAGNOSIS, variables)
        first = await next_message(sub, 30)
        assert first["type"] == "next", first
        assert "errors" not in first["payload"], first
        cluster.kubectl("delete", "rolebinding", "live-watcher-tenant-reader", "-n", "team-a")
        revoked = time.monotonic()
        while True:
            message = await next_message(sub, 3 * TTL_SECONDS + 5)
            if message["type"] == "next" and "errors" not in message["payload"]:
                continue  # a change pushed before the revocation was seen
            break
        elapsed = time.monotonic() - revoked
        codes = [e["extensions"]["code"] for e in message["payload"]["errors"]]
        assert codes == ["FORBIDDEN"], message
        # Re-check interval + authorization cache TTL, plus a recompute.
        assert elapsed < 2 * TTL_SECONDS + 3, elapsed


async def test_connection_without_valid_token_is_refused(live_server: Server) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    url = live_server.url.replace("http://", "ws://") + "/graphql"
    async with connect(url, subprotocols=["graphql-transport-ws"]) as socket:  # type: ignore[list-item]
        await socket.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": "Bearer nope"}})
        )
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 4403


async def test_per_connection_cap(live_server: Server, cluster: Cluster, scenario: None) -> None:
    _apply(cluster, JOB)
    variables = {"ns": "team-a", "kind": "Job", "name": "live-quota-held"}
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        for op in ("1", "2", "3"):
            await sub.subscribe(op, DIAGNOSIS, variables)
            first = await next_message(sub, 30)
            assert first["type"] == "next", first
            assert "errors" not in first["payload"], first
        await sub.subscribe("4", DIAGNOSIS, variables)
        refused = await next_message(sub, 30)
        assert refused["id"] == "4"
        assert [e["extensions"]["code"] for e in refused["payload"]["errors"]] == ["BAD_REQUEST"]
    # Closing the client freed its slots.
    await asyncio.sleep(0.5)
    assert live_server.app.state.services.live.total == 0


async def test_tasks_freed_when_clients_close(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """A bounded, short version of benchmarks/subscriptions.py: the server runs in this
    process, so its tasks are counted directly."""
    _apply(cluster, JOB)
    variables = {"ns": "team-a", "kind": "Job", "name": "live-quota-held"}
    await asyncio.sleep(0.5)
    before = asyncio.all_tasks()
    async with contextlib.AsyncExitStack() as stack:
        subs = [
            await stack.enter_async_context(subscriber(live_server.url, cluster.token("alice")))
            for _ in range(6)
        ]
        for sub in subs:
            for op in ("1", "2", "3"):
                await sub.subscribe(op, DIAGNOSIS, variables)
        for sub in subs:
            for _ in range(3):
                assert (await next_message(sub, 30))["type"] == "next"
        assert live_server.app.state.services.live.total == 18
        # Each subscription holds at least its operation task and one watch task.
        assert len(asyncio.all_tasks() - before) >= 18 * 2

    def leftover() -> list[str]:
        # Tasks this test's subscriptions started that are still alive (tasks that ran
        # before it are not counted, whatever they do meanwhile).
        return sorted(str(t.get_coro()) for t in asyncio.all_tasks() - before if not t.done())

    for _ in range(150):
        if not leftover():
            break
        await asyncio.sleep(0.1)
    assert not leftover(), leftover()
    assert live_server.app.state.services.live.total == 0


def await_chain(task: asyncio.Task[Any]) -> str:
    """Where a task waits: its coroutine and every coroutine it awaits, innermost last."""
    steps = []
    awaited: Any = task.get_coro()
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
        if frame is not None:
            steps.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
    return " > ".join(steps) or str(task.get_coro())


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _pooled_connections(kube: Any) -> int:
    """Idle keep-alive connections a client's pool holds (sockets it may reuse, up to its
    bound): not a leak, so they are subtracted from the process' fd count."""
    connector = kube.api_client.rest_client.pool_manager.connector
    return sum(len(held) for held in connector._conns.values())


def _in_use_connections(kube: Any) -> int:
    connector = kube.api_client.rest_client.pool_manager.connector
    return len(connector._acquired)


async def test_fds_and_tasks_return_to_baseline_after_many_close(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """Subscriptions closed at every point of their life (mid-first-diagnosis, while waiting
    for a change, while a burst of changes is being recomputed) free everything they held:
    tasks, watch connections (fds), and leave no coroutine that was never awaited."""
    _apply(cluster, JOB)
    variables = {"ns": "team-a", "kind": "Job", "name": "live-quota-held"}
    services = live_server.app.state.services
    watch_kube = services.watch_kube

    async def one_round(connections: int) -> None:
        async with contextlib.AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(subscriber(live_server.url, cluster.token("alice")))
                for _ in range(connections)
            ]
            for sub in subs:
                for op in ("1", "2", "3"):
                    await sub.subscribe(op, DIAGNOSIS, variables)
            # Half the connections close within the first diagnosis, at staggered moments, so
            # their subscriptions are cancelled at every await of it.
            for index, sub in enumerate(subs[: connections // 2]):
                await asyncio.sleep(0.02 * index)
                await sub.socket.close()
            for sub in subs[connections // 2 :]:
                for _ in range(3):
                    assert (await next_message(sub, 30))["type"] == "next"
            # Events flowing while the rest close.
            for active in ("false", "true"):
                cluster.kubectl(
                    "patch",
                    "job",
                    "live-quota-held",
                    "-n",
                    "team-a",
                    "--type=merge",
                    "-p",
                    f'{{"metadata":{{"labels":{{"bench-flip":"{active}"}}}}}}',
                )
            await asyncio.sleep(0.3)

    await one_round(2)  # warm-up: pools, caches and lazily created objects exist after it
    await asyncio.sleep(1)
    gc.collect()
    before_tasks = asyncio.all_tasks()
    before_fds = _open_fds() - _pooled_connections(services.kube) - _pooled_connections(watch_kube)
    # Cache read mode: the informers' watches (one per Kueue kind) stay open on this client.
    informer_watches = _in_use_connections(watch_kube)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await one_round(20)

        def leftover_tasks() -> list[str]:
            return sorted(
                await_chain(t) for t in asyncio.all_tasks() - before_tasks if not t.done()
            )

        def extra_fds() -> int:
            now = _open_fds() - _pooled_connections(services.kube)
            return now - _pooled_connections(watch_kube) - before_fds

        for _ in range(150):
            in_use = _in_use_connections(watch_kube) - informer_watches
            if not leftover_tasks() and extra_fds() <= 0 and in_use <= 0:
                break
            await asyncio.sleep(0.1)
        gc.collect()
    never_awaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert not never_awaited, never_awaited
    assert not leftover_tasks(), "\n".join(leftover_tasks())
    assert _in_use_connections(watch_kube) == informer_watches
    assert extra_fds() <= 0, f"{extra_fds()} fds more than before the subscriptions opened"
    assert services.live.total == 0


def _workload_of(cluster: Cluster, namespace: str, job: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for item in cluster.get_json("workloads", "-n", namespace)["items"]:
            owners = item["metadata"].get("ownerReferences") or []
            if any(owner.get("name") == job for owner in owners):
                return str(item["metadata"]["name"])
        time.sleep(0.3)
    raise AssertionError(f"Kueue made no Workload for Job {job}")


def _python_heap() -> tuple[int, int, collections.Counter[str]]:
    """(objects the garbage collector tracks, frozen ones included; blocks Python's allocator
    holds; tracked objects by type) after full collections: what a leak of Python objects
    grows, unlike RSS, which also counts memory the allocators keep after use."""
    gc.collect()
    gc.collect()
    objects = gc.get_objects()
    types = collections.Counter(type(o).__qualname__ for o in objects)
    return len(objects) + gc.get_freeze_count(), sys.getallocatedblocks(), types


def _grown(before: collections.Counter[str], after: collections.Counter[str]) -> str:
    diff = after.copy()
    diff.subtract(before)
    return ", ".join(f"{name} {count:+d}" for name, count in diff.most_common(12) if count > 0)


# Per subscription of a round: a leak of what one subscription holds (its context, loaders,
# watch task, send queue) is hundreds of objects each, far above this.
HEAP_TOLERANCE_PER_SUBSCRIPTION = 5
# Whatever a round may leave that is not per subscription (cache entries replaced, interned
# strings, a freelist).
HEAP_TOLERANCE_FIXED = 3000


async def test_python_heap_flat_over_rounds_of_open_and_close(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """The memory part of "no task, fd or memory growth after they close": rounds of
    subscriptions opened, pushed to and closed leave no Python objects behind (after a warm-up
    round: pools, caches and lazily built objects exist after it). RSS is not asserted: the
    allocators keep freed memory (docs/service.md, Benchmarks; `make bench-subs` prints both)."""
    _apply(cluster, HEAP_JOB)
    variables = {"ns": "team-a", "kind": "Job", "name": "live-heap-held"}
    services = live_server.app.state.services
    connections, per_connection = 10, 3
    subscriptions = connections * per_connection
    workload = _workload_of(cluster, "team-a", "live-heap-held")

    async def one_round(flip: int) -> None:
        before = asyncio.all_tasks()
        async with contextlib.AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(
                    subscriber(live_server.url, cluster.token("alice" if i % 2 else "grace"))
                )
                for i in range(connections)
            ]
            for sub in subs:
                for op in range(per_connection):
                    await sub.subscribe(str(op), DIAGNOSIS, variables)
            for sub in subs:
                for _ in range(per_connection):
                    first = await next_message(sub, 30)
                    assert first["type"] == "next", first
                    assert "errors" not in first["payload"], first
            assert services.live.total == subscriptions
            # Events flowing and pushed: the Workload deactivated and back (two verdict
            # changes every subscriber gets), and a label (a recompute that pushes nothing).
            for active in ("false", "true"):
                cluster.kubectl(
                    "patch",
                    "workload",
                    workload,
                    "-n",
                    "team-a",
                    "--type=merge",
                    "-p",
                    f'{{"spec":{{"active":{active}}}}}',
                )
                for sub in subs:
                    for _ in range(per_connection):
                        pushed = await next_message(sub, 30)
                        assert pushed["type"] == "next", pushed
            cluster.kubectl(
                "label", "job", "live-heap-held", "-n", "team-a", f"heap={flip}", "--overwrite"
            )
            await asyncio.sleep(1)
        for _ in range(150):
            if services.live.total == 0 and not [
                t for t in asyncio.all_tasks() - before if not t.done()
            ]:
                break
            await asyncio.sleep(0.1)
        assert services.live.total == 0
        # Let the TokenReview / authorization cache entries of this round expire, so every
        # round ends with the same cache contents (re-filled by the next round).
        await asyncio.sleep(TTL_SECONDS + 0.5)

    async def settled() -> tuple[int, int, collections.Counter[str]]:
        # A closed connection's objects go once its socket's closing handshake is done, a
        # moment after its tasks: measured again until the count stops falling (a leak
        # never falls).
        current = _python_heap()
        for _ in range(20):
            await asyncio.sleep(0.5)
            again = _python_heap()
            if again[0] >= current[0] - HEAP_TOLERANCE_PER_SUBSCRIPTION:
                return again
            current = again
        return current

    await one_round(0)  # warm-up
    figures = [await settled()]
    for flip in (1, 2):
        await one_round(flip)
        figures.append(await settled())
    counts = [(objects, blocks) for objects, blocks, _ in figures]
    growth = f"{counts}; grown in round 1: {_grown(figures[0][2], figures[1][2])}; in round 2: "
    growth += _grown(figures[1][2], figures[2][2])
    print(f"python heap (objects, blocks) after warm-up, round 1, round 2: {growth}")
    tolerance = HEAP_TOLERANCE_FIXED + HEAP_TOLERANCE_PER_SUBSCRIPTION * subscriptions
    (objects_0, _), (objects_1, _), (objects_2, _) = counts
    assert objects_2 - objects_1 <= tolerance, growth
    # The first rounds may still fill what is bounded (the read pool's keep-alive connections,
    # the authorization cache): twice the tolerance since the warm-up.
    assert objects_2 - objects_0 <= 2 * tolerance, growth
