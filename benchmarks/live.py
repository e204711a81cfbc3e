"""Many live diagnoses under a stream of related and unrelated Workload changes (issue 26).

Needs the test control plane running (`make cluster-up`). Run by hand (`make bench-live`); it
prints figures and asserts nothing:

    uv run python benchmarks/live.py [--subscriptions 100] [--read-mode cache] [--rate 10]

Sets up `--queues` 1-CPU ClusterQueues with a LocalQueue in team-a and team-b each, `--watched`
pending Workloads (2 CPUs: held for quota) per (namespace, queue) but the last queue's, which
gets the "unrelated" Workloads nobody subscribes to. Starts the server (`benchmarks/server.py`),
opens `--subscriptions` `diagnosis` subscriptions (alice for team-a, bob for team-b, 20 per
connection) spread over the subscribed Workloads, waits for every first message, then measures
three bounded phases of `--seconds` each:

- idle: no change at all;
- unrelated: `--rate` annotation patches a second on the unrelated Workloads (same namespaces,
  another ClusterQueue): nothing should be pushed;
- related: `--related-rate` flips a second of a subscribed Workload's `spec.active`
  (DEACTIVATED <-> WAITING_FOR_QUOTA_RESERVATION: every subscriber of it must get a push).

Printed per phase: server CPU (cores), CPU per change, messages and bytes pushed, recomputes
(from /metrics), and for the related phase change -> push p50/p95 (from just before the PATCH
is sent to each message's arrival). Then server RSS and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import ssl
import sys
import time
from typing import Any

import aiohttp
from admission_path import ROOT, STATE, cpu_seconds, load_average, metrics_url, percentile, rss_kib
from admission_path import server as launched_server

sys.path.insert(0, str(ROOT))
from tests.service.live_client import Subscriber, subscriber

QUERY = """
subscription($ns: String!, $name: String!) {
  diagnosis(namespace: $ns, kind: "Workload", name: $name) { stage reasons { code } }
}
"""
NAMESPACES = {"team-a": "alice", "team-b": "bob"}
PER_CONNECTION = 20
PREFIX = "bench-live"


def token(user: str) -> str:
    return (STATE / "users" / f"{user}.token").read_text().strip()


def api_url() -> str:
    for line in (STATE / "env").read_text().splitlines():
        if line.startswith("KUBE_API_URL="):
            return line.split("=", 1)[1].strip()
    raise SystemExit("no KUBE_API_URL in .cluster/env")


def workload(namespace: str, name: str, queue: str) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "registry.invalid/kueue-graphql/sleep:never-pulled",
        "resources": {"requests": {"cpu": "2"}},
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "labels": {PREFIX: "yes"}},
        "spec": {
            "queueName": queue,
            "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [container]}}}
            ],
        },
    }  # fmt: skip


def objects(
    queues: int, unrelated: int, watched: int
) -> tuple[list[Any], list[tuple[str, str]], list[Any]]:
    """The setup, the subscribed (namespace, Workload) and the unrelated Workloads."""
    setup: list[Any] = []
    subscribed: list[tuple[str, str]] = []
    others: list[Any] = []
    for q in range(queues):
        cq = f"{PREFIX}-cq-{q}"
        setup.append({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": cq, "labels": {PREFIX: "yes"}},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["cpu"], "flavors": [{"name": "standard", "resources": [
                    {"name": "cpu", "nominalQuota": "1"}]}]}]},
        })  # fmt: skip
        for ns in NAMESPACES:
            lq = f"{PREFIX}-lq-{q}"
            setup.append({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": ns, "labels": {PREFIX: "yes"}},
                "spec": {"clusterQueue": cq},
            })  # fmt: skip
            if q < queues - 1:
                for w in range(watched):
                    name = f"{PREFIX}-wl-{q}-{w}"
                    others.append(workload(ns, name, lq))
                    subscribed.append((ns, name))
            else:
                for u in range(unrelated):
                    others.append(workload(ns, f"{PREFIX}-unrelated-{u}", lq))
    return setup, subscribed, others


class Api:
    """The admin's PATCHes, straight to the API server (no kubectl process per change)."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.base = api_url()
        self.headers = {"Authorization": f"Bearer {token('admin')}"}

    async def apply(self, obj: dict[str, Any]) -> None:
        kind = obj["kind"]
        plural = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues"}.get(
            kind, "workloads"
        )
        ns = obj["metadata"].get("namespace")
        path = "/apis/kueue.x-k8s.io/v1beta2" + (f"/namespaces/{ns}" if ns else "")
        url = f"{self.base}{path}/{plural}/{obj['metadata']['name']}"
        async with self.http.patch(
            url + "?fieldManager=bench-live&force=true",
            data=json.dumps(obj),
            headers={**self.headers, "Content-Type": "application/apply-patch+yaml"},
        ) as response:
            if response.status >= 300:
                raise SystemExit(f"apply {kind} failed: {response.status} {await response.text()}")

    async def patch(self, ns: str, name: str, body: dict[str, Any]) -> None:
        url = f"{self.base}/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads/{name}"
        async with self.http.patch(
            url,
            data=json.dumps(body),
            headers={**self.headers, "Content-Type": "application/merge-patch+json"},
        ) as response:
            await response.read()

    async def delete_all(self) -> None:
        base = f"{self.base}/apis/kueue.x-k8s.io/v1beta2"
        for path in (
            [f"/namespaces/{ns}/workloads" for ns in NAMESPACES]
            + [f"/namespaces/{ns}/localqueues" for ns in NAMESPACES]
            + ["/clusterqueues"]
        ):
            async with self.http.delete(
                f"{base}{path}?labelSelector={PREFIX}%3Dyes", headers=self.headers
            ) as response:
                await response.read()


class Received:
    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.arrivals: list[tuple[float, str]] = []  # (time, Workload)
        self.expected = 0
        self.all_first = asyncio.Event()
        self.errors = 0  # messages with errors (e.g. UNAVAILABLE: the stream ends)


async def read_all(sub: Subscriber, names: dict[str, str], got: Received) -> None:
    while True:
        raw = await sub.socket.recv()
        now = time.perf_counter()
        message = json.loads(raw)
        if message.get("type") == "ping":
            await sub.socket.send(json.dumps({"type": "pong"}))
            continue
        if message.get("type") != "next":
            continue
        got.messages += 1
        got.bytes += len(raw)
        if message.get("payload", {}).get("errors"):
            got.errors += 1
        got.arrivals.append((now, names[message["id"]]))
        if got.messages >= got.expected:
            got.all_first.set()


def recomputes(text: str) -> dict[str, float]:
    """Recomputes so far, by cause (change, access, inputs)."""
    by_cause: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("kueue_graphql_subscription_recomputes_total{"):
            cause = line.split('cause="', 1)[1].split('"', 1)[0]
            by_cause[cause] = by_cause.get(cause, 0.0) + float(line.split()[-1])
    return by_cause


async def metrics_text(http: aiohttp.ClientSession, url: str) -> str:
    async with http.get(f"{metrics_url(url)}/metrics") as response:
        return await response.text()


async def phase(
    name: str,
    pid: int,
    url: str,
    http: aiohttp.ClientSession,
    got: Received,
    seconds: float,
    change: Any,
    rate: float,
) -> tuple[list[float], int]:
    """Runs `change` `rate` times a second for `seconds` (bounded); prints the figures."""
    messages, sent_bytes = got.messages, got.bytes
    before = recomputes(await metrics_text(http, url))
    cpu = cpu_seconds(pid)
    started = time.monotonic()
    changes: list[float] = []
    while time.monotonic() - started < seconds:
        if rate > 0:
            changes.append(time.perf_counter())
            await change(len(changes))
            await asyncio.sleep(max(0.0, len(changes) / rate - (time.monotonic() - started)))
        else:
            await asyncio.sleep(0.5)
    await asyncio.sleep(2)  # the last changes' pushes
    elapsed = time.monotonic() - started
    used = cpu_seconds(pid) - cpu
    after = recomputes(await metrics_text(http, url))
    again = ", ".join(
        f"{cause} {after[cause] - before.get(cause, 0.0):.0f}" for cause in sorted(after)
    )
    per_change = f", {1000 * used / len(changes):.1f} ms CPU/change" if changes else ""
    print(
        f"{name:10s} {len(changes)} changes in {seconds:g} s: server {used / elapsed:.3f} cores"
        f"{per_change}, {got.messages - messages} messages / {got.bytes - sent_bytes} bytes "
        f"pushed, recomputes: {again or 'none'}"
    )
    return changes, messages


async def run(args: argparse.Namespace) -> None:
    setup, subscribed, others = objects(args.queues, args.unrelated, args.watched)
    unrelated = [
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in others
        if "unrelated" in o["metadata"]["name"]
    ]
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=insecure)) as http:
        api = Api(http)
        await api.delete_all()
        for obj in setup + others:
            await api.apply(obj)
        await asyncio.sleep(3)  # Kueue queues them
        # Two users open all N: the per-identity cap (100 by default) is raised to N.
        os.environ["KGQL_BENCH_SUBSCRIPTIONS"] = str(args.subscriptions)
        with launched_server(None, args.read_mode) as (url, process):
            pid = process.pid
            got = Received()
            readers: list[asyncio.Task[None]] = []
            async with contextlib.AsyncExitStack() as stack:
                per_workload: dict[tuple[str, str], int] = {}
                open_in: dict[str, tuple[Subscriber, dict[str, str]]] = {}
                opened = time.monotonic()
                wave = args.wave or args.subscriptions
                for i in range(args.subscriptions):
                    ns, name = subscribed[i % len(subscribed)]
                    per_workload[(ns, name)] = per_workload.get((ns, name), 0) + 1
                    current = open_in.get(ns)
                    if current is None or len(current[1]) >= PER_CONNECTION:
                        user = NAMESPACES[ns]
                        sub = await stack.enter_async_context(subscriber(url, token(user)))
                        current = open_in[ns] = (sub, {})
                        readers.append(asyncio.create_task(read_all(sub, current[1], got)))
                    sub, names = current
                    op = str(len(names) + 1)
                    names[op] = name
                    await sub.subscribe(op, QUERY, {"ns": ns, "name": name})
                    if (i + 1) % wave == 0 or i + 1 == args.subscriptions:
                        # This wave's first messages (bounded) before the next wave opens.
                        got.expected = i + 1
                        got.all_first.clear()
                        if got.messages < got.expected:
                            with contextlib.suppress(TimeoutError):
                                await asyncio.wait_for(got.all_first.wait(), 60 + 0.3 * wave)
                print(
                    f"{args.subscriptions} subscriptions ({args.read_mode}) on "
                    f"{len(subscribed)} Workloads, {args.queues - 1} ClusterQueues; first "
                    f"messages {got.messages} ({got.errors} with errors) in "
                    f"{time.monotonic() - opened:.1f} s"
                    + (f" ({wave} at a time)" if args.wave else "")
                    + f"; RSS {rss_kib(pid)[0] / 1024:.0f} MiB"
                )
                await asyncio.sleep(args.recheck_settle)

                async def nothing(_: int) -> None:
                    return None

                async def annotate(n: int) -> None:
                    ns, name = unrelated[n % len(unrelated)]
                    await api.patch(ns, name, {"metadata": {"annotations": {"bench": str(n)}}})

                flips: list[tuple[str, str]] = []

                async def flip(n: int) -> None:
                    ns, name = subscribed[n % len(subscribed)]
                    flips.append((ns, name))
                    active = (n // len(subscribed)) % 2 == 1
                    await api.patch(ns, name, {"spec": {"active": active}})

                await phase("idle", pid, url, http, got, args.seconds, nothing, 0)
                await phase("unrelated", pid, url, http, got, args.seconds, annotate, args.rate)
                first = len(got.arrivals)
                changes, _ = await phase(
                    "related", pid, url, http, got, args.seconds, flip, args.related_rate
                )
                latencies: list[float] = []
                for sent, (ns, name) in zip(changes, flips, strict=True):
                    later = sorted(t for t, n in got.arrivals[first:] if n == name and t >= sent)
                    latencies += [t - sent for t in later[: per_workload[(ns, name)]]]
                if latencies:
                    print(
                        f"related change -> push: p50 {1000 * percentile(latencies, 50):.0f} ms, "
                        f"p95 {1000 * percentile(latencies, 95):.0f} ms ({len(latencies)} pushes)"
                    )
                rss, _ = rss_kib(pid)
                print(f"server RSS {rss / 1024:.0f} MiB; load average {load_average()}")
                for reader in readers:
                    reader.cancel()
                await asyncio.gather(*readers, return_exceptions=True)
        await api.delete_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=100)
    parser.add_argument("--read-mode", choices=["impersonate", "cache"], default="cache")
    parser.add_argument("--queues", type=int, default=5, help="ClusterQueues (the last unrelated)")
    parser.add_argument("--unrelated", type=int, default=4, help="unrelated Workloads a namespace")
    parser.add_argument(
        "--watched",
        type=int,
        default=1,
        help="subscribed Workloads per namespace and ClusterQueue (subscriptions are spread "
        "over them round-robin: more of them means fewer subscribers per related change)",
    )
    parser.add_argument("--rate", type=float, default=10.0, help="unrelated changes a second")
    parser.add_argument("--related-rate", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=20.0, help="each phase")
    parser.add_argument(
        "--wave",
        type=int,
        default=0,
        help="open this many subscriptions at a time, each wave after the last one's first "
        "messages (0: all at once, a burst of N first answers)",
    )
    parser.add_argument(
        "--recheck-settle", type=float, default=5.0, help="quiet before measuring (first events)"
    )
    args = parser.parse_args()
    if not 1 <= args.rate <= 20 or not 0.1 <= args.related_rate <= 20:
        raise SystemExit("--rate and --related-rate: 1-20 changes a second")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
