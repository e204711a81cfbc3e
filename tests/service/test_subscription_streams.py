"""The object and set subscriptions (workload, workloadFor, workloads, clusterQueue) and the
slow-consumer bound, against the real control plane, over a real WebSocket, as several users."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from kueue_graphql.context import LiveLimits
from kueue_graphql.http import ReadMode
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, server_in_mode
from tests.service.live_client import PROTOCOL, Subscriber, subscriber
from tests.teardown import remove, remove_pods
from tests.waiting import SETTLE_SECONDS, async_wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

TTL_SECONDS = 3.0
SEND_QUEUE = 2

SCENARIO = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-stream}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: standard
      resources:
      - {name: cpu, nominalQuota: "2"}
      - {name: memory, nominalQuota: 4Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-stream, namespace: team-a}
spec: {clusterQueue: cq-stream}
"""


def workload_manifest(name: str, cpu: str = "100m") -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: team-a}}
spec:
  queueName: lq-stream
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: registry.invalid/kueue-graphql/sleep:never-pulled
          resources:
            requests: {{cpu: "{cpu}", memory: "64Mi"}}
"""


JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: stream-job
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: lq-stream}
spec:
  suspend: true
  parallelism: 1
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/kueue-graphql/sleep:never-pulled
        resources:
          requests: {cpu: "100m", memory: "64Mi"}
"""

WORKLOAD_EVENTS = """
subscription($ns: String!, $name: String!) {
  workload(namespace: $ns, name: $name) { type name workload { name labels } }
}
"""
WORKLOAD_FOR = """
subscription($ns: String!, $name: String!) {
  workloadFor(namespace: $ns, kind: "Job", name: $name) { type name workload { name } }
}
"""
WORKLOADS = """
subscription($ns: String, $lq: String) {
  workloads(namespace: $ns, localQueue: $lq) {
    initial count changes { type name workload { name status } }
  }
}
"""
CLUSTER_QUEUE = """
subscription($name: String!) {
  clusterQueue(name: $name) { name reservingWorkloads admittedWorkloads }
}
"""


def apply(cluster: Cluster, manifest: str) -> None:
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


def delete(cluster: Cluster, *args: str) -> None:
    cluster.kubectl("delete", *args, "--ignore-not-found", "--wait=false", check=False)


def force_delete_pods(cluster: Cluster) -> None:
    # No kubelet: a deleted Pod stays Terminating (holding its Node's CPU) until removed by force.
    cluster.kubectl(
        "delete",
        "pods",
        "-n",
        "team-a",
        "-l",
        "job-name=stream-job",
        "--force",
        "--grace-period=0",
        "--ignore-not-found",
        check=False,
    )


STREAM_WORKLOADS = ("wl-stream-a", "wl-stream-b", "wl-stream-big", "wl-stream-cq")


@pytest.fixture(scope="module")
def scenario(cluster: Cluster) -> Iterator[None]:
    for name in STREAM_WORKLOADS:
        cluster.kubectl("delete", "workload", name, "-n", "team-a", "--ignore-not-found")
    cluster.kubectl("delete", "job", "stream-job", "-n", "team-a", "--ignore-not-found")
    apply(cluster, SCENARIO)
    yield
    # Each waited until gone: the next module sees team-a and the Nodes as before this one.
    for name in STREAM_WORKLOADS:
        remove(cluster, "workload", name, "-n", "team-a")
    remove(cluster, "job", "stream-job", "-n", "team-a")
    remove_pods(cluster, "team-a", "-l", "job-name=stream-job")
    remove(cluster, "localqueue", "lq-stream", "-n", "team-a")
    remove(cluster, "clusterqueue", "cq-stream")


@pytest.fixture(scope="module")
async def live_server(cluster: Cluster, read_mode: ReadMode) -> AsyncIterator[Server]:
    # Both read modes: cache mode wakes on the informers (CacheChanges), over WebSocket and HTTP.
    async with server_in_mode(
        cluster,
        read_mode,
        token_cache_ttl_seconds=TTL_SECONDS,
        authz_cache_ttl_seconds=TTL_SECONDS,
        # The overflow is what ends a slow consumer's stream here: neither the send timeout
        # nor uvicorn's keep-alive may close the connection first on a loaded machine.
        live_limits=LiveLimits(
            recheck_seconds=TTL_SECONDS, send_queue=SEND_QUEUE, send_timeout_seconds=3600
        ),
        ws_ping_interval_seconds=None,
    ) as started:
        yield started


async def next_message(sub: Subscriber, seconds: float = 15) -> dict[str, Any]:
    return await asyncio.wait_for(sub.receive(), seconds)


async def next_data(sub: Subscriber, field: str, seconds: float = 15) -> dict[str, Any]:
    message = await next_message(sub, seconds)
    assert message["type"] == "next", message
    assert "errors" not in message["payload"], message
    data: dict[str, Any] = message["payload"]["data"][field]
    return data


async def until(sub: Subscriber, field: str, wanted: Any, seconds: float = 15) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    seen: list[Any] = []
    while True:
        try:
            data = await next_data(sub, field, max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            raise AssertionError(f"nothing matching within {seconds} s; pushed: {seen}") from None
        seen.append(data)
        if wanted(data):
            return data


async def test_workload_pushes_each_change_then_deleted(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    apply(cluster, workload_manifest("wl-stream-a"))
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe("1", WORKLOAD_EVENTS, {"ns": "team-a", "name": "wl-stream-a"})
        first = await next_data(sub, "workload")
        assert first["type"] == "INITIAL"
        assert first["workload"]["name"] == "wl-stream-a"
        cluster.kubectl("label", "workload", "wl-stream-a", "-n", "team-a", "stream=changed")
        changed = await until(
            sub, "workload", lambda d: (d["workload"]["labels"] or {}).get("stream") == "changed"
        )
        assert changed["type"] == "UPDATED"
        cluster.kubectl("delete", "workload", "wl-stream-a", "-n", "team-a")
        deleted = await until(sub, "workload", lambda d: d["type"] == "DELETED")
        assert deleted["workload"] is None
        assert (await next_message(sub))["type"] == "complete"


async def test_workload_for_follows_the_jobs_workload(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe("1", WORKLOAD_FOR, {"ns": "team-a", "name": "stream-job"})
        first = await next_data(sub, "workloadFor")
        assert first == {"type": "INITIAL", "name": None, "workload": None}
        apply(cluster, JOB)
        created = await until(sub, "workloadFor", lambda d: d["workload"] is not None)
        assert created["type"] == "UPDATED"
        name = created["workload"]["name"]
        owned = cluster.get_json("workload", name, "-n", "team-a", user="alice")
        assert owned["metadata"]["ownerReferences"][0]["name"] == "stream-job"
        cluster.kubectl("delete", "job", "stream-job", "-n", "team-a", "--cascade=background")
        force_delete_pods(cluster)
        deleted = await until(sub, "workloadFor", lambda d: d["type"] == "DELETED", 30)
        assert deleted["workload"] is None


async def test_workloads_added_modified_removed(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    variables = {"ns": "team-a", "lq": "lq-stream"}
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe("1", WORKLOADS, variables)
        first = await next_data(sub, "workloads")
        listed = cluster.get_json("workloads", "-n", "team-a", user="alice")["items"]
        in_queue = [w for w in listed if w["spec"].get("queueName") == "lq-stream"]
        assert first == {"initial": True, "count": len(in_queue), "changes": []}
        apply(cluster, workload_manifest("wl-stream-b"))

        def change(kind: str) -> Any:
            return lambda d: any(
                c["type"] == kind and c["name"] == "wl-stream-b" for c in d["changes"]
            )

        added = await until(sub, "workloads", change("ADDED"))
        assert added["count"] == len(in_queue) + 1
        cluster.kubectl("label", "workload", "wl-stream-b", "-n", "team-a", "stream=changed")
        await until(sub, "workloads", change("MODIFIED"))
        cluster.kubectl("delete", "workload", "wl-stream-b", "-n", "team-a")
        removed = await until(sub, "workloads", change("REMOVED"))
        assert removed["count"] == len(in_queue)
        gone = [c for c in removed["changes"] if c["name"] == "wl-stream-b"]
        assert gone[0]["workload"] is None


async def test_cluster_queue_pushes_usage_changes(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    # Earlier tests' Workloads are gone; Kueue's counts follow a moment later.
    deadline = time.monotonic() + SETTLE_SECONDS
    while cluster.get_json("clusterqueue", "cq-stream")["status"].get("admittedWorkloads"):
        assert time.monotonic() < deadline, "cq-stream still counts admitted Workloads"
        await asyncio.sleep(0.5)
    async with subscriber(live_server.url, cluster.token("viewer")) as sub:
        await sub.subscribe("1", CLUSTER_QUEUE, {"name": "cq-stream"})
        first = await next_data(sub, "clusterQueue")
        assert not first["admittedWorkloads"], first
        apply(cluster, workload_manifest("wl-stream-cq"))
        more = await until(sub, "clusterQueue", lambda d: d["admittedWorkloads"] == 1, 30)
        queried = cluster.get_json("clusterqueue", "cq-stream", user="viewer")
        assert queried["status"]["admittedWorkloads"] == more["admittedWorkloads"]
        cluster.kubectl("delete", "workload", "wl-stream-cq", "-n", "team-a")
        await until(sub, "clusterQueue", lambda d: not d["admittedWorkloads"], 30)


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (WORKLOAD_EVENTS, {"ns": "team-b", "name": None}),
        (WORKLOADS, {"ns": "team-b", "lq": None}),
        (CLUSTER_QUEUE, {"name": "cq-stream"}),
    ],
    ids=["workload", "workloads", "clusterQueue"],
)
async def test_tenant_gets_forbidden_and_nothing_else(
    live_server: Server, cluster: Cluster, scenario: None, query: str, variables: dict[str, Any]
) -> None:
    if "name" in variables and variables["name"] is None:
        items = cluster.get_json("workloads", "-n", "team-b")["items"]
        variables = {**variables, "name": items[0]["metadata"]["name"]}
    # kubectl as alice is refused the same reads.
    assert cluster.kubectl("get", "workloads", "-n", "team-b", user="alice", check=False).returncode
    assert cluster.kubectl("get", "clusterqueues", user="alice", check=False).returncode
    services = live_server.app.state.services
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe("1", query, variables)
        message = await next_message(sub)
        assert message["type"] == "next", message
        assert message["payload"]["data"] is None
        codes = [e["extensions"]["code"] for e in message["payload"]["errors"]]
        assert codes == ["FORBIDDEN"], message
        assert (await next_message(sub))["type"] == "complete"
        # Nothing more is pushed, and no slot (nor watch) is held for it.
        with pytest.raises(TimeoutError):
            await next_message(sub, 2 * TTL_SECONDS)
        assert services.live.total == 0


def _metric(text: str, name: str, label: str) -> float:
    for line in text.splitlines():
        if line.startswith(name) and label in line:
            return float(line.split()[-1])
    return 0.0


class StallingClient:
    """graphql-transport-ws over a plain socket (websockets' sans-I/O protocol), reading only
    when told: between reads nothing at all is read from the socket, as a client that stops
    reading (a libraries' own client keeps reading into its buffers)."""

    def __init__(self, url: str) -> None:
        self.protocol = ClientProtocol(
            parse_uri(url.replace("http://", "ws://") + "/graphql"),
            subprotocols=[Subprotocol(PROTOCOL)],
            max_size=None,
        )
        host, port = url.removeprefix("http://").split(":")
        self.sock = socket.socket()
        # A small receive window, so the server's side fills after a few messages.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((host, int(port)))
        self.sock.setblocking(False)
        self.messages: list[dict[str, Any]] = []

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        for data in self.protocol.data_to_send():
            if data:
                await loop.sock_sendall(self.sock, data)

    async def open(self, token: str) -> None:
        self.protocol.send_request(self.protocol.connect())
        await self._flush()
        loop = asyncio.get_running_loop()
        while self.protocol.state is State.CONNECTING:
            data = await asyncio.wait_for(loop.sock_recv(self.sock, 2**16), 10)
            assert data, "the server closed the connection during the handshake"
            self.protocol.receive_data(data)
            self.protocol.events_received()
        assert self.protocol.handshake_exc is None, self.protocol.handshake_exc
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
        await self.send(init)
        assert (await self.receive())["type"] == "connection_ack"

    async def send(self, message: dict[str, Any]) -> None:
        self.protocol.send_text(json.dumps(message).encode())
        await self._flush()

    async def receive(self, seconds: float = 30) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        while not self.messages:
            data = await asyncio.wait_for(loop.sock_recv(self.sock, 2**16), seconds)
            assert data, "the server closed the connection"
            self.protocol.receive_data(data)
            for event in self.protocol.events_received():
                if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                    self.messages.append(json.loads(event.data))
            await self._flush()  # pongs
        message = self.messages.pop(0)
        if message["type"] == "ping":
            await self.send({"type": "pong"})
            return await self.receive(seconds)
        return message

    async def close_code(self, seconds: float = 60) -> tuple[int, str]:
        """Reads (and drops) everything until the server's close frame: its code and reason."""
        loop = asyncio.get_running_loop()
        while self.protocol.close_rcvd is None:
            data = await asyncio.wait_for(loop.sock_recv(self.sock, 2**16), seconds)
            assert data, "the server dropped the connection without a close frame"
            self.protocol.receive_data(data)
            self.protocol.events_received()
        return self.protocol.close_rcvd.code, self.protocol.close_rcvd.reason

    def close(self) -> None:
        self.sock.close()


async def change_until_closed(cluster: Cluster, services: Any, most: int) -> int:
    """Changes wl-stream-big (a ~240 KB annotation each time, pushed in full) until no
    subscription is open or `most` changes were made; how many were made."""
    patches = 0
    with tempfile.NamedTemporaryFile("w", suffix=".json") as patch:
        while services.live.total and patches < most:
            patches += 1
            body = {"metadata": {"annotations": {"big": f"{patches:04d}" + "x" * 240_000}}}
            patch.seek(0)
            patch.truncate()
            patch.write(json.dumps(body))
            patch.flush()
            cluster.kubectl(
                "patch",
                "workload",
                "wl-stream-big",
                "-n",
                "team-a",
                "--type=merge",
                "--patch-file",
                patch.name,
            )
            await asyncio.sleep(0.1)
    return patches


async def test_slow_consumer_ends_with_slow_consumer(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """A client that stops reading: its messages (each ~240 KB) fill the socket, then the send
    queue; the next one ends the stream (watches closed, slot freed). When the client reads
    again it gets what was already on the wire, then SLOW_CONSUMER, then complete."""
    apply(cluster, workload_manifest("wl-stream-big"))
    query = """
    subscription($ns: String!, $name: String!) {
      workload(namespace: $ns, name: $name) { type workload { annotations } }
    }"""
    services = live_server.app.state.services
    metrics_before = (await live_server.metrics.get("/metrics")).text
    ended_before = _metric(metrics_before, "kueue_graphql_subscriptions_ended_total", "SLOW")
    client = StallingClient(live_server.url)
    try:
        await client.open(cluster.token("alice"))
        await client.send(
            {
                "id": "1",
                "type": "subscribe",
                "payload": {"query": query, "variables": {"ns": "team-a", "name": "wl-stream-big"}},
            }
        )
        first = await client.receive()
        assert first["payload"]["data"]["workload"]["type"] == "INITIAL", first
        # The client stops reading; the Workload changes, each change pushed in full.
        patches = await change_until_closed(cluster, services, 60)
        assert services.live.total == 0, f"still open after {patches} changes"
        # The client reads again: what was on the wire, then the error, then complete.
        read = 0
        while True:
            message = await client.receive()
            if message["type"] == "next" and "errors" not in message["payload"]:
                read += 1
                continue
            break
        codes = [e["extensions"]["code"] for e in message["payload"]["errors"]]
        assert codes == ["SLOW_CONSUMER"], message
        assert (await client.receive())["type"] == "complete"
        # Fewer than were computed reached the client: the rest was dropped, not buffered.
        assert read < patches, (read, patches)
        print(f"slow consumer: ended after {patches} changes; {read} had reached the socket")
    finally:
        client.close()
        # Admitted in cq-stream: left behind, it would count in the other read mode's round of
        # this module (one shared scenario when the module runs alone).
        delete(cluster, "workload", "wl-stream-big", "-n", "team-a")
    metrics_after = (await live_server.metrics.get("/metrics")).text
    ended_after = _metric(metrics_after, "kueue_graphql_subscriptions_ended_total", "SLOW")
    assert ended_after == ended_before + 1


async def test_stalled_consumer_is_closed_with_slow_consumer_before_keep_alive(
    cluster: Cluster, read_mode: ReadMode, scenario: None
) -> None:
    """Issue 22 N6: a client that stops reading while its send queue never fills (one big
    message per change) was cut by uvicorn's keep-alive (1011, an abnormal close), its tasks
    waiting on the socket for ever. Now, once the socket's buffers are full and sends have
    waited --subscription-send-timeout, the connection is closed with 4008 SLOW_CONSUMER and
    the subscription ends. The test waits for that condition (bounded), not for a duration."""
    apply(cluster, workload_manifest("wl-stream-big"))
    query = """
    subscription($ns: String!, $name: String!) {
      workload(namespace: $ns, name: $name) { type workload { annotations } }
    }"""
    limits = LiveLimits(send_queue=1000, send_timeout_seconds=2.0)
    async with server_in_mode(cluster, read_mode, live_limits=limits) as stalled_server:
        services = stalled_server.app.state.services
        client = StallingClient(stalled_server.url)
        try:
            await client.open(cluster.token("alice"))
            variables = {"ns": "team-a", "name": "wl-stream-big"}
            await client.send(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": query, "variables": variables},
                }
            )
            first = await client.receive()
            assert first["payload"]["data"]["workload"]["type"] == "INITIAL", first
            # The client stops reading; each change is pushed in full (~240 KB) until the
            # socket's buffers fill and the server gives up on the client.
            patches = await change_until_closed(cluster, services, 80)
            assert services.live.total == 0, f"still open after {patches} changes"
            # Reading again: what was on the wire, then the close with the documented code.
            code, reason = await client.close_code()
            assert code == 4008, (code, reason)
            assert reason.startswith("SLOW_CONSUMER"), reason
            print(f"stalled consumer: closed 4008 after {patches} changes")
        finally:
            client.close()
            delete(cluster, "workload", "wl-stream-big", "-n", "team-a")


MULTIPART_ACCEPT = 'multipart/mixed;subscriptionSpec="1.0", application/json'


class MultipartParts:
    """The JSON parts of a multipart subscription response (heartbeats `{}` skipped)."""

    def __init__(self, response: httpx.Response) -> None:
        self.chunks = response.aiter_bytes()
        self.buffer = b""
        self.ended = False

    async def next(self, seconds: float = 15) -> dict[str, Any] | None:
        """The next part's JSON; None at the end of the stream."""
        while True:
            start = self.buffer.find(b"--graphql")
            if start >= 0:
                rest = self.buffer[start + len(b"--graphql") :]
                if rest.startswith(b"--"):
                    self.ended = True
                    return None
                end = rest.find(b"\r\n--graphql")
                if end >= 0:
                    part, self.buffer = rest[:end], rest[end + 2 :]
                    if b"\r\n\r\n" not in part:
                        continue  # the closing delimiter's own line
                    body = part.split(b"\r\n\r\n", 1)[1]
                    parsed: dict[str, Any] = json.loads(body)
                    if parsed:
                        return parsed
                    continue
            try:
                chunk = await asyncio.wait_for(anext(self.chunks), seconds)
            except StopAsyncIteration:
                return None
            self.buffer += chunk


async def follow_label_change(
    response: httpx.Response, services: Any, cluster: Cluster, name: str, value: str
) -> None:
    """A multipart stream of `workload(team-a, name)`: INITIAL first with one subscription
    open, then, after the label `stream=value` is set, the part that shows it."""
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("multipart/mixed")
    parts = MultipartParts(response)
    first = await parts.next()
    assert first is not None
    assert first["payload"]["data"]["workload"]["type"] == "INITIAL", first
    assert services.live.total == 1
    cluster.kubectl("label", "workload", name, "-n", "team-a", f"stream={value}")
    while True:
        part = await parts.next()
        assert part is not None
        workload = part["payload"]["data"]["workload"]["workload"]
        if (workload["labels"] or {}).get("stream") == value:
            break


async def all_closed(services: Any) -> None:
    """Every subscription slot is free again."""

    async def free() -> bool:
        return bool(services.live.total == 0)

    await async_wait_until("every subscription slot free", free, interval=0.1)


async def test_http_multipart_subscription(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    apply(cluster, workload_manifest("wl-stream-a"))
    services = live_server.app.state.services
    headers = {"Authorization": f"Bearer {cluster.token('alice')}", "Accept": MULTIPART_ACCEPT}
    body = {"query": WORKLOAD_EVENTS, "variables": {"ns": "team-a", "name": "wl-stream-a"}}
    async with live_server.http.stream("POST", "/graphql", json=body, headers=headers) as response:
        await follow_label_change(response, services, cluster, "wl-stream-a", "http")
    # The client went away: the subscription, its watch and its slot are gone.
    await all_closed(services)
    cluster.kubectl("delete", "workload", "wl-stream-a", "-n", "team-a")


async def test_http_multipart_subscription_forbidden_and_refusals(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    bob_workload = cluster.get_json("workloads", "-n", "team-b")["items"][0]["metadata"]["name"]
    body = {"query": WORKLOAD_EVENTS, "variables": {"ns": "team-b", "name": bob_workload}}
    headers = {"Authorization": f"Bearer {cluster.token('alice')}", "Accept": MULTIPART_ACCEPT}
    async with live_server.http.stream("POST", "/graphql", json=body, headers=headers) as response:
        assert response.status_code == 200
        parts = MultipartParts(response)
        part = await parts.next()
        assert part is not None
        assert part["payload"]["data"] is None
        codes = [e["extensions"]["code"] for e in part["payload"]["errors"]]
        assert codes == ["FORBIDDEN"], part
        assert await parts.next() is None
        assert parts.ended
    # Without the multipart Accept: BAD_REQUEST saying how.
    plain = await live_server.post(WORKLOAD_EVENTS, body["variables"], token=cluster.token("alice"))
    error = plain.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert "multipart/mixed" in error["message"]
    # Without a token: 401 before anything runs, as for a query.
    refused = await live_server.http.post(
        "/graphql", json=body, headers={"Accept": MULTIPART_ACCEPT}
    )
    assert refused.status_code == 401
    assert refused.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_subscription_metrics_without_user_labels(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    apply(cluster, workload_manifest("wl-stream-a"))

    async def metrics() -> str:
        return (await live_server.metrics.get("/metrics")).text

    before = await metrics()
    async with subscriber(live_server.url, cluster.token("alice")) as sub:
        await sub.subscribe("1", WORKLOAD_EVENTS, {"ns": "team-a", "name": "wl-stream-a"})
        assert (await next_data(sub, "workload"))["type"] == "INITIAL"
        during = await metrics()
        assert _metric(during, "kueue_graphql_subscriptions_open ", "") == 1

    async def none_open() -> str | None:
        scraped = await metrics()
        return scraped if _metric(scraped, "kueue_graphql_subscriptions_open ", "") == 0 else None

    after = await async_wait_until("subscriptions_open back to 0", none_open, interval=0.1)
    pushed = "kueue_graphql_subscription_messages_total"
    assert (
        _metric(after, pushed, 'field="workload"')
        == _metric(before, pushed, 'field="workload"') + 1
    )
    ended = "kueue_graphql_subscriptions_ended_total"
    assert _metric(after, ended, 'reason="closed"') == _metric(before, ended, 'reason="closed"') + 1
    assert _metric(after, "kueue_graphql_asyncio_tasks ", "") > 0
    lines = [line for line in after.splitlines() if "subscription" in line]
    assert not [line for line in lines if "alice" in line or "team-a" in line or "wl-" in line]
    cluster.kubectl("delete", "workload", "wl-stream-a", "-n", "team-a")


def _token_reviews(metrics: str) -> float:
    """TokenReviews sent (accepted or rejected; cache hits are not reviews) and API calls on
    tokenreviews, summed over labels."""
    total = 0.0
    for line in metrics.splitlines():
        reviewed = line.startswith("kueue_graphql_token_reviews_total") and "cache_hit" not in line
        called = line.startswith("kueue_graphql_api_calls_total") and "tokenreviews" in line
        if reviewed or called:
            total += float(line.split()[-1])
    return total


async def test_http_multipart_rejected_token_is_401_like_a_query(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """A token TokenReview rejects: the same 401 (status, challenge, body) as a query gets,
    before any stream starts; a malformed Authorization header: 401 without a TokenReview."""
    apply(cluster, workload_manifest("wl-stream-a"))
    variables = {"ns": "team-a", "name": "wl-stream-a"}
    bogus = "definitely-not-a-valid-token-0123456789"
    query = await live_server.post("{ viewer { username } }", token=bogus)
    assert query.status_code == 401
    headers = {"Authorization": f"Bearer {bogus}", "Accept": MULTIPART_ACCEPT}
    body = {"query": WORKLOAD_EVENTS, "variables": variables}
    refused = await live_server.http.post("/graphql", json=body, headers=headers)
    assert refused.status_code == 401, refused.text
    assert refused.headers["content-type"].startswith("application/json")
    assert refused.headers["www-authenticate"] == query.headers["www-authenticate"]
    assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert refused.json() == query.json()
    (error,) = refused.json()["errors"]
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    assert bogus not in refused.text
    assert live_server.app.state.services.live.total == 0

    before = _token_reviews((await live_server.metrics.get("/metrics")).text)
    for authorization in ("Basic YTpi", "Bearer", f"Bearer {bogus} {bogus}", "Token abc"):
        malformed = await live_server.http.post(
            "/graphql",
            json=body,
            headers={"Authorization": authorization, "Accept": MULTIPART_ACCEPT},
        )
        assert malformed.status_code == 401, (authorization, malformed.text)
        assert malformed.headers["www-authenticate"] == 'Bearer error="invalid_request"'
        codes = [e["extensions"]["code"] for e in malformed.json()["errors"]]
        assert codes == ["UNAUTHENTICATED"]
    after = _token_reviews((await live_server.metrics.get("/metrics")).text)
    assert after == before, "a malformed Authorization header cost a TokenReview"

    # A valid token still streams (the first message is what the head waited for).
    headers = {"Authorization": f"Bearer {cluster.token('alice')}", "Accept": MULTIPART_ACCEPT}
    async with live_server.http.stream("POST", "/graphql", json=body, headers=headers) as response:
        assert response.status_code == 200
        first = await MultipartParts(response).next()
        assert first is not None
        assert first["payload"]["data"]["workload"]["type"] == "INITIAL", first
    cluster.kubectl("delete", "workload", "wl-stream-a", "-n", "team-a")


async def test_http_multipart_subscription_over_get(
    live_server: Server, cluster: Cluster, scenario: None
) -> None:
    """A subscription is never served over GET (its document and variables would sit in URLs,
    and it runs as long as it is open), even with queries over GET on (the default): 405
    BAD_REQUEST before any token check or API call."""
    apply(cluster, workload_manifest("wl-stream-b"))
    params = {
        "query": WORKLOAD_EVENTS,
        "variables": json.dumps({"ns": "team-a", "name": "wl-stream-b"}),
    }
    alice = {"Authorization": f"Bearer {cluster.token('alice')}", "Accept": MULTIPART_ACCEPT}
    for headers in (alice, {"Accept": MULTIPART_ACCEPT}):
        refused = await live_server.http.get("/graphql", params=params, headers=headers)
        assert refused.status_code == 405, refused.text
        assert refused.headers["allow"] == "POST"
        (error,) = refused.json()["errors"]
        assert error["extensions"]["code"] == "BAD_REQUEST"
        assert "subscriptions over GET are not served" in error["message"]
    assert live_server.app.state.services.live.total == 0
    cluster.kubectl("delete", "workload", "wl-stream-b", "-n", "team-a")
