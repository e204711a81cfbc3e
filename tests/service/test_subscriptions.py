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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from kueue_graphql.context import LiveLimits
from kueue_graphql.http import ReadMode
from kueue_graphql.observe.metrics import REGISTRY
from tests.cluster.driver import Cluster
from tests.kueue_objects import pending_workload
from tests.service.conftest import Server, server_in_mode
from tests.service.live_client import Subscriber, subscriber
from tests.teardown import remove, remove_pods
from tests.waiting import SETTLE_SECONDS, async_wait_until

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
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-live, namespace: team-b}
spec: {clusterQueue: cq-live-1cpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-live-other}
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
metadata: {name: lq-live-other, namespace: team-a}
spec: {clusterQueue: cq-live-other}
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
    ("workload", "live-mine", "-n", "team-a"),
    ("workload", "live-unrelated", "-n", "team-a"),
    ("workload", "live-behind", "-n", "team-a"),
    ("workload", "live-ahead", "-n", "team-b"),
    ("workload", "live-held", "-n", "team-a"),
    ("workload", "live-first", "-n", "team-b"),
    ("localqueue", "lq-live", "-n", "team-a"),
    ("localqueue", "lq-live", "-n", "team-b"),
    ("localqueue", "lq-live-other", "-n", "team-a"),
    ("clusterqueue", "cq-live-1cpu"),
    ("clusterqueue", "cq-live-other"),
    ("rolebinding", "live-watcher-tenant-reader", "-n", "team-a"),
    ("serviceaccount", "live-watcher", "-n", "team-a"),
)


def _remove_scenario(cluster: Cluster) -> None:
    """Every scenario object, waited until gone (the Jobs' Pods removed by force: there is no
    kubelet), so that neither the next test run nor the next module finds any of it."""
    for args in SCENARIO_OBJECTS:
        remove(cluster, *args)
        if args[0] == "job":
            remove_pods(cluster, "team-a", "-l", f"job-name={args[1]}")


@pytest.fixture(scope="module")
def scenario(cluster: Cluster, read_mode: ReadMode) -> Iterator[None]:
    # A fresh quota-held Job on its own 1-CPU ClusterQueue, whatever an earlier run left; made
    # again for each read mode (depending on `read_mode` does that), since the tests raise the
    # quota and delete the RoleBinding, and the order of the two rounds is pytest's to choose.
    _remove_scenario(cluster)
    _apply(cluster, SCENARIO)
    yield
    _remove_scenario(cluster)


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
    """The next message; every caller waits for one that must come, so `seconds` only says when
    to give up (SETTLE_SECONDS: 30 first diagnoses at once took over 30 s under contention)."""
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
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        pods = cluster.get_json("pods", "-n", namespace, "-l", f"job-name={job}")["items"]
        bound = [
            p
            for p in pods
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
        ]
        if bound:
            break
        assert time.monotonic() < deadline, "the Pod was never bound to a Node: " + "; ".join(
            f"{p['metadata']['name']}: {c.get('message', '')}"
            for p in pods
            for c in p.get("status", {}).get("conditions", [])
            if c.get("type") == "PodScheduled"
        )
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
        # Pushed once Kueue admits (how soon is `make bench-subs`' change -> push figure).
        admitted = await until_stage(sub, "ADMITTED_PODS_PENDING", SETTLE_SECONDS)
        workload = cluster.get_json("workloads", "-n", "team-a", user="alice")["items"]
        ours = [w for w in workload if w["metadata"]["name"] == admitted["workload"]["name"]]
        conditions = {c["type"]: c["status"] for c in ours[0]["status"]["conditions"]}
        assert conditions.get("Admitted") == "True", conditions

        set_pod_running(cluster, "team-a", "live-quota-held")
        await until_stage(sub, "RUNNING", SETTLE_SECONDS)


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
        message = await next_message(sub, SETTLE_SECONDS)
        assert message["type"] == "next", message
        assert message["payload"]["data"] is None
        assert [e["extensions"]["code"] for e in message["payload"]["errors"]] == ["FORBIDDEN"], (
            message
        )
        assert (await next_message(sub, SETTLE_SECONDS))["type"] == "complete"


def _pending_workload(namespace: str, name: str, queue: str, priority: int) -> str:
    """A Workload (no Job) that asks for more than its 1-CPU ClusterQueue has: pending."""
    return json.dumps(pending_workload(namespace, name, queue, priority))


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _recomputes(cause: str) -> float:
    return _metric("kueue_graphql_subscription_recomputes_total", field="diagnosis", cause=cause)


DIAGNOSIS_POSITION = """
subscription Live($ns: String!, $name: String!) {
  diagnosis(namespace: $ns, kind: "Workload", name: $name) {
    stage
    queuePosition { positionInClusterQueue }
  }
}
"""

WORKLOAD_STREAM = """
subscription W($ns: String!, $name: String!) {
  workload(namespace: $ns, name: $name) { type workload { name } }
}
"""


async def _until_position(sub: Subscriber, position: int | None) -> int:
    """Messages until one with `position` (None: any number); that position."""
    deadline = time.monotonic() + SETTLE_SECONDS
    seen: list[object] = []
    while True:
        try:
            message = await next_message(sub, max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            raise AssertionError(f"no position {position}; pushed: {seen}") from None
        assert message["type"] == "next", message
        assert "errors" not in message["payload"], message
        found = message["payload"]["data"]["diagnosis"]["queuePosition"]["positionInClusterQueue"]
        seen.append(found)
        if found == position or (position is None and isinstance(found, int)):
            return int(found)


@pytest.mark.both_read_modes
async def test_an_unrelated_workload_change_recomputes_nothing(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """A change of a Workload of the same namespace in another ClusterQueue wakes no diagnosis
    that does not depend on it; a change of its own Workload does (issue 26: every change of
    the namespace recomputed every diagnosis subscription of it). Counted, not timed: the
    unrelated change is known to have reached the server when a `workload` stream of it has
    pushed it, and the related change made after it is counted as exactly one recompute."""
    _apply(cluster, _pending_workload("team-a", "live-mine", "lq-live", 0))
    _apply(cluster, _pending_workload("team-a", "live-unrelated", "lq-live-other", 0))
    token = cluster.token("alice")
    async with (
        subscriber(live_server.url, token) as sub,
        subscriber(live_server.url, token) as probe,
    ):
        await probe.subscribe("1", WORKLOAD_STREAM, {"ns": "team-a", "name": "live-unrelated"})
        assert (await next_message(probe, SETTLE_SECONDS))["type"] == "next"
        await sub.subscribe(
            "1", DIAGNOSIS, {"ns": "team-a", "kind": "Workload", "name": "live-mine"}
        )
        first = await next_message(sub, SETTLE_SECONDS)
        assert "errors" not in first["payload"], first
        # Quiet: a re-check of each stream found nothing changed (the watches' first events,
        # in `impersonate` mode, are behind).
        await _quiet_rechecks(2)
        before = _recomputes("change")
        cluster.kubectl(
            "annotate", "workload", "live-unrelated", "-n", "team-a", "--overwrite", "probe=1"
        )
        await _pushed_update(probe)  # the unrelated change has reached the server
        await _recomputed_once(cluster, before, "live-mine")


async def _quiet_rechecks(count: int) -> None:
    """Until `count` more re-checks found nothing changed."""
    quiet = _metric("kueue_graphql_subscription_rechecks_total", outcome="unchanged")

    async def rechecked() -> bool:
        now = _metric("kueue_graphql_subscription_rechecks_total", outcome="unchanged")
        return now >= quiet + count

    await async_wait_until(f"{count} quiet re-checks", rechecked)


async def _pushed_update(probe: Subscriber) -> None:
    """The next UPDATED message of a `workload` stream: its change has reached the server."""
    while True:
        pushed = await next_message(probe, SETTLE_SECONDS)
        assert pushed["type"] == "next", pushed
        if pushed["payload"]["data"]["workload"]["type"] == "UPDATED":
            return


async def _recomputed_once(cluster: Cluster, before: float, name: str) -> None:
    """Annotates team-a's Workload `name` (a related change): counted as exactly one more
    diagnosis recompute than `before`."""
    cluster.kubectl("annotate", "workload", name, "-n", "team-a", "--overwrite", "probe=1")

    async def recomputed() -> bool:
        return _recomputes("change") >= before + 1

    await async_wait_until("the related change recomputed", recomputed)
    assert _recomputes("change") == before + 1


@pytest.mark.both_read_modes
async def test_a_position_moved_by_another_namespace_reaches_the_subscriber(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """alice's Workload is behind one of team-b (which she may not see) in the same
    ClusterQueue; when that one leaves, her position is pushed. In `cache` mode the change of
    the other namespace's Workload wakes the stream; in `impersonate` mode, whose watches see
    team-a only, the re-check reads the position again (within the re-check interval), unless
    Kueue rewrites her Workload's status meanwhile. The lesson of defb23d: a stream that
    recomputed nothing while quiet never saw this change."""
    _apply(cluster, _pending_workload("team-b", "live-ahead", "lq-live", 100))
    _apply(cluster, _pending_workload("team-a", "live-behind", "lq-live", 0))
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe("1", DIAGNOSIS_POSITION, {"ns": "team-a", "name": "live-behind"})
        # Behind live-ahead (and any other pending Workload of the ClusterQueue).
        behind = await _until_position(sub, None)
        assert behind >= 1, behind
        before = _recomputes("change") + _recomputes("inputs")
        cluster.kubectl("delete", "workload", "live-ahead", "-n", "team-b")
        await _until_position(sub, behind - 1)
        # Recomputed for a change or an input read again, not for the access re-check.
        assert _recomputes("change") + _recomputes("inputs") > before


@pytest.mark.both_read_modes
async def test_a_position_that_stays_where_it_was_recomputes_nothing(
    live_server: Server, cluster: Cluster, scenario: None, read_mode: ReadMode
) -> None:
    """alice's Workload is behind one of team-b in the same ClusterQueue. An annotation of that
    one leaves the pending order as it was; raising its priority moves its entry, but it stays
    ahead, so alice's position is what it was. Neither recomputes her diagnosis (issue 26:
    every change of a Workload of the ClusterQueue recomputed every diagnosis with a position
    in it): in `cache` mode the first wakes nothing, the second wakes the stream for its
    position only, which is read again (from the store) and found unchanged; in `impersonate`
    mode, whose watches see team-a only, neither wakes it. Counted, not timed: bob's `workload`
    stream of the team-b Workload shows each change has reached the server, and the related
    change made after them is counted as exactly one recompute."""
    _apply(cluster, _pending_workload("team-b", "live-first", "lq-live", 100))
    _apply(cluster, _pending_workload("team-a", "live-held", "lq-live", 0))
    async with (
        subscriber(live_server.url, cluster.token("alice")) as sub,
        subscriber(live_server.url, cluster.token("bob")) as probe,
    ):
        await probe.subscribe("1", WORKLOAD_STREAM, {"ns": "team-b", "name": "live-first"})
        assert (await next_message(probe, SETTLE_SECONDS))["type"] == "next"
        await sub.subscribe("1", DIAGNOSIS_POSITION, {"ns": "team-a", "name": "live-held"})
        behind = await _until_position(sub, None)
        assert behind >= 1, behind
        await _quiet_rechecks(2)
        before = _recomputes("change")
        unchanged = _metric("kueue_graphql_subscription_wakes_total", outcome="unchanged")
        cluster.kubectl(
            "annotate", "workload", "live-first", "-n", "team-b", "--overwrite", "probe=1"
        )
        await _pushed_update(probe)
        cluster.kubectl(
            "patch", "workload", "live-first", "-n", "team-b", "--type", "merge",
            "-p", '{"spec": {"priority": 200}}',
        )  # fmt: skip
        await _pushed_update(probe)
        if read_mode is ReadMode.CACHE:

            async def answered() -> bool:
                # Woken for the position and read it again (or, before the fix, recomputed).
                return (
                    _metric("kueue_graphql_subscription_wakes_total", outcome="unchanged")
                    > unchanged
                    or _recomputes("change") > before
                )

            await async_wait_until("the position read again", answered)
            assert _recomputes("change") == before
        await _recomputed_once(cluster, before, "live-held")


@pytest.mark.both_read_modes
async def test_rolebinding_removed_mid_stream_ends_it(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    _apply(cluster, JOB)
    token = cluster.service_account_token("team-a", "live-watcher")
    variables = {"ns": "team-a", "kind": "Job", "name": "live-quota-held"}
    async with subscriber(live_server.url, token) as sub:
        await sub.subscribe("1", DIAGNOSIS, variables)
        first = await next_message(sub, SETTLE_SECONDS)
        assert first["type"] == "next", first
        assert "errors" not in first["payload"], first
        cluster.kubectl("delete", "rolebinding", "live-watcher-tenant-reader", "-n", "team-a")
        revoked = time.monotonic()
        # Nothing the stream watches changes: only the re-check (every TTL_SECONDS here, then
        # the authorization cache's TTL) ends it, on an idle machine within ~2 x 3 s. The bound
        # leaves room for a loaded machine, yet is below the default re-check interval, which
        # the test server must not be using.
        bound = 0.8 * LiveLimits().recheck_seconds
        while True:
            try:
                message = await next_message(sub, max(0.1, bound - (time.monotonic() - revoked)))
            except TimeoutError:
                raise AssertionError(
                    f"the stream went on {bound:g} s after the revocation"
                ) from None
            if message["type"] == "next" and "errors" not in message["payload"]:
                continue  # a change pushed before the revocation was seen
            break
        elapsed = time.monotonic() - revoked
        codes = [e["extensions"]["code"] for e in message["payload"]["errors"]]
        assert codes == ["FORBIDDEN"], message
        print(f"ended {elapsed:.1f} s after the RoleBinding was deleted")


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
            first = await next_message(sub, SETTLE_SECONDS)
            assert first["type"] == "next", first
            assert "errors" not in first["payload"], first
        await sub.subscribe("4", DIAGNOSIS, variables)
        refused = await next_message(sub, SETTLE_SECONDS)
        assert refused["id"] == "4"
        assert [e["extensions"]["code"] for e in refused["payload"]["errors"]] == ["BAD_REQUEST"]
    # Closing the client freed its slots.
    await async_wait_until("the closed client's slots free", slots_free(live_server), interval=0.1)


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
                assert (await next_message(sub, SETTLE_SECONDS))["type"] == "next"
        assert live_server.app.state.services.live.total == 18
        # Each subscription holds at least its operation task and one watch task.
        assert len(asyncio.all_tasks() - before) >= 18 * 2

    def leftover() -> list[str]:
        # Tasks this test's subscriptions started that are still alive (tasks that ran
        # before it are not counted, whatever they do meanwhile).
        return sorted(str(t.get_coro()) for t in asyncio.all_tasks() - before if not t.done())

    async def none_left() -> bool:
        return not leftover()

    await async_wait_until(
        "the closed subscriptions' tasks done",
        none_left,
        interval=0.1,
        detail=lambda: "\n".join(leftover()),
    )
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


def slots_free(server: Server) -> Callable[[], Awaitable[bool]]:
    async def free() -> bool:
        return bool(server.app.state.services.live.total == 0)

    return free


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
                    assert (await next_message(sub, SETTLE_SECONDS))["type"] == "next"
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

        async def released() -> bool:
            in_use = _in_use_connections(watch_kube) - informer_watches
            return not leftover_tasks() and extra_fds() <= 0 and in_use <= 0

        await async_wait_until(
            "tasks, fds and watch connections of the closed subscriptions released",
            released,
            interval=0.1,
            detail=lambda: f"{extra_fds()} extra fds; tasks:\n" + "\n".join(leftover_tasks()),
        )
        gc.collect()
    never_awaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert not never_awaited, never_awaited
    assert not leftover_tasks(), "\n".join(leftover_tasks())
    assert _in_use_connections(watch_kube) == informer_watches
    assert extra_fds() <= 0, f"{extra_fds()} fds more than before the subscriptions opened"
    assert services.live.total == 0


def _workload_of(cluster: Cluster, namespace: str, job: str) -> str:
    deadline = time.monotonic() + SETTLE_SECONDS
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


# Made for one request or one subscription message, never kept by a server at rest: once the
# server is quiescent, none is left. (A pooled API connection opened under a subscription's
# context used to keep that context, its RequestReads, DataLoaders, cached answers and meter,
# alive for the connection's lifetime: the round-2 growth this test once saw.)
PER_REQUEST_TYPES = ("RequestContext", "ApiServerReader", "DataLoader", "ApiCallMeter")


def _per_request_objects() -> collections.Counter[str]:
    gc.collect()
    alive = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    return collections.Counter({name: alive[name] for name in PER_REQUEST_TYPES if alive[name]})


async def _quiescent(server: Server, round_tasks: set[asyncio.Task[Any]]) -> None:
    """Until the server is at rest after a round: no subscription open, no task the round
    started still running, no API connection in use (but the informers' watches). Work still
    in flight ends within the bound."""
    services = server.app.state.services
    informer_watches = 0 if services.cache is None else len(services.cache.reflectors)
    state: dict[str, Any] = {}

    async def at_rest() -> bool:
        state["open"] = services.live.total
        state["tasks"] = sorted(
            await_chain(t) for t in asyncio.all_tasks() - round_tasks if not t.done()
        )
        state["reads in use"] = _in_use_connections(services.kube)
        state["watches in use"] = _in_use_connections(services.watch_kube) - informer_watches
        in_use = state["reads in use"] > 0 or state["watches in use"] > 0
        return not (state["open"] or state["tasks"] or in_use)

    await async_wait_until("the server at rest after the round", at_rest, detail=lambda: f"{state}")


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
                    first = await next_message(sub, SETTLE_SECONDS)
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
                        pushed = await next_message(sub, SETTLE_SECONDS)
                        assert pushed["type"] == "next", pushed
            cluster.kubectl(
                "label", "job", "live-heap-held", "-n", "team-a", f"heap={flip}", "--overwrite"
            )
            await asyncio.sleep(1)
        # Counted only once the server is at rest: what is in flight is not a leak.
        await _quiescent(live_server, before)
        # Let the TokenReview / authorization cache entries of this round expire, so every
        # round ends with the same cache contents (re-filled by the next round). The timers of
        # the closed subscriptions' re-check waits (TTL_SECONDS) are past by then too.
        await asyncio.sleep(TTL_SECONDS + 0.5)
        # At rest, nothing of a request is left, though the pools keep their connections.
        left = _per_request_objects()
        assert not left, f"per-request objects outlived round {flip}: {left}"

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
