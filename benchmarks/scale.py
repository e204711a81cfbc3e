"""How list queries and the admission path cost as pending Workloads grow (issue 7).

Needs the test control plane running (`make cluster-up`). Run by hand or `make bench-scale`;
it prints figures and asserts nothing:

    uv run python benchmarks/scale.py [--sizes 1000,10000] [--read-mode impersonate,cache] [-n 20]

For each size N it makes N pending Workloads in a namespace of its own (`bench-scale`, a
LocalQueue into a ClusterQueue with zero quota and StrictFIFO, so they stay pending and Kueue
retries only the head), prebuilt with `spec.priority` set (Kueue v0.17's visibility server
panics on a Workload without it). They are created concurrently (bounded) with the admin
token, and the next size only adds the difference. Then, per read mode, a fresh server
(`kueue-graphql serve`, as the service's ServiceAccount) answers each query `n` times as viewer
(a cluster-wide reader) after two warm-up requests, and it prints per query: p50/p95 latency,
API calls and bytes read from the API server per request (the server's
`kueue_graphql_api_response_bytes` metric: all kinds, and the Kueue kinds alone), server CPU per
request, the server's RSS, and the 10k/1k (largest/smallest size) ratio of the p50. An ideal raw
client (one `GET workloads?limit=21` as viewer, straight to the API server: the least any
reader could do for a page of 20) is measured in the same run for scale.

In `cache` mode it starts two servers side by side per size instead, the default (the cache
frozen out of the garbage collector once synced) and `--no-cache-gc-freeze`, and sends `n`
rounds, each with every query once to each server (the order alternating), so every query and
both servers see the same load; it prints p50/p95/max of both. A floor query, `{ __typename }`
(token check and parse, no read), is measured like the others: the 10k/1k ratios are printed
as measured and divided by the floor's own ratio (the machine's load between the two sizes).

Queue positions (issue 26): half of the N Workloads are in namespace `bench-scale-b`, whose
LocalQueue has the same name and ClusterQueue (Kueue's LocalQueue list of `bench-scale` then
lists them too, kueue#10575), and two probes sit in `bench-scale`: `probe-head` (priority 10,
position 0) and `probe-tail` (priority -10, behind all N). `diagnose` and `aheadOfMe` of each
are measured like the list queries, and each answer's position is printed (ABSENT would be a
bug). `--only-positions` measures just those and the floor (a shorter run on a shared machine).

`--together` (positions only) puts every size's queue in the cluster at once, each in its own
namespaces and ClusterQueue (`bench-scale-<N>`, `bench-scale-<N>-b`, `cq-bench-scale-<N>`),
and one server per read mode answers `n` rounds of every position query of every size, the
sizes' order alternating: the 10k/1k ratio is then measured under the same load, not across
minutes in which other work on the machine comes and goes.

It cleans up after itself (deletes the namespaces and the ClusterQueue), also on Ctrl-C.
`--read-mode cache` needs a build whose `serve` has `--read-mode`; otherwise it says so and
measures the modes it can.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from admission_path import (
    ADMISSION_PATH,
    ROOT,
    STATE,
    cpu_seconds,
    percentile,
    rss_kib,
)
from launch import free_port, launched


@dataclass(frozen=True)
class QueueSet:
    """Where one size's pending Workloads live: a ClusterQueue with zero quota, a LocalQueue in
    `namespace` (the probes too) and a same-named one in `other_namespace` (Kueue's list of
    `namespace`'s queue shows those too, kueue#10575)."""

    namespace: str
    other_namespace: str
    local_queue: str
    cluster_queue: str

    @property
    def namespaces(self) -> tuple[str, str]:
        return (self.namespace, self.other_namespace)

    def namespace_of(self, index: int) -> str:
        return self.namespaces[index % 2]

    @classmethod
    def of_size(cls, size: int) -> QueueSet:
        """The queue set of one size in `--together` runs, beside the others."""
        return cls(
            f"bench-scale-{size}",
            f"bench-scale-{size}-b",
            "lq-bench-scale",
            f"cq-bench-scale-{size}",
        )


DEFAULT_SET = QueueSet("bench-scale", "bench-scale-b", "lq-bench-scale", "cq-bench-scale")
NAMESPACE = DEFAULT_SET.namespace
OTHER_NAMESPACE = DEFAULT_SET.other_namespace
NAMESPACES = DEFAULT_SET.namespaces
LOCAL_QUEUE = DEFAULT_SET.local_queue
CLUSTER_QUEUE = DEFAULT_SET.cluster_queue
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
KUEUE_RESOURCES = {
    "workloads",
    "localqueues",
    "clusterqueues",
    "cohorts",
    "resourceflavors",
    "admissionchecks",
    "workloadpriorityclasses",
    "topologies",
    "localqueues/pendingworkloads",
}


def queues_manifest(q: QueueSet) -> str:
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {q.namespace}, labels: {{kueue-graphql.example/bench: scale}}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {q.cluster_queue}}}
spec:
  namespaceSelector: {{}}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: standard
      resources:
      - {{name: cpu, nominalQuota: "0"}}
      - {{name: memory, nominalQuota: "0"}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {q.local_queue}, namespace: {q.namespace}}}
spec: {{clusterQueue: {q.cluster_queue}}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: {q.other_namespace}, labels: {{kueue-graphql.example/bench: scale}}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {q.local_queue}, namespace: {q.other_namespace}}}
spec: {{clusterQueue: {q.cluster_queue}}}
"""


QUEUES = queues_manifest(DEFAULT_SET)
# The Workloads whose positions are measured: first and last of the ClusterQueue's queue.
PROBES = {"probe-head": 10, "probe-tail": -10}


def namespace_of(index: int) -> str:
    return DEFAULT_SET.namespace_of(index)


def workload(
    index: int, name: str | None = None, priority: int = 0, q: QueueSet = DEFAULT_SET
) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name or f"wl-{index:06d}",
            "namespace": q.namespace if name else q.namespace_of(index),
        },
        "spec": {
            "queueName": q.local_queue,
            # Kueue v0.17's visibility server dereferences spec.priority unchecked.
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "registry.invalid/kueue-graphql/sleep:never-pulled",
                                    "resources": {"requests": {"cpu": "1", "memory": "64Mi"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


PAGE = "nodes { namespace name } pageInfo { hasNextPage endCursor }"


@dataclass(frozen=True)
class Query:
    label: str
    text: str
    variables: dict[str, str] = field(default_factory=dict)


FLOOR = "floor: { __typename } (token, parse, no read)"
QUERIES = [
    Query(FLOOR, "{ __typename }"),
    Query(
        "workloads(first:20, clusterQueue:bench, PENDING)",
        f'{{ workloads(first: 20, clusterQueue: "{CLUSTER_QUEUE}", status: PENDING) '
        f"{{ {PAGE} }} }}",
    ),
    Query(
        "  ... with totalCount",
        f'{{ workloads(first: 20, clusterQueue: "{CLUSTER_QUEUE}", status: PENDING) '
        f"{{ totalCount {PAGE} }} }}",
    ),
    Query(
        "workloads(first:20, clusterQueue:small, PENDING)",
        f'{{ workloads(first: 20, clusterQueue: "cq-small-2cpu", status: PENDING) {{ {PAGE} }} }}',
    ),
    Query(
        "clusterQueue{workloads(first:20)}",
        f'{{ clusterQueue(name: "{CLUSTER_QUEUE}") {{ name workloads(first: 20) {{ {PAGE} }} }} }}',
    ),
    Query(
        "localQueue{workloads(first:20)}",
        f'{{ localQueue(namespace: "{NAMESPACE}", name: "{LOCAL_QUEUE}") '
        f"{{ name workloads(first: 20) {{ {PAGE} }} }} }}",
    ),
    Query("localQueues(first:20)", "{ localQueues(first: 20) { nodes { namespace name } } }"),
    Query("clusterQueues(first:20)", "{ clusterQueues(first: 20) { nodes { name } } }"),
    Query(
        "admission path (viewer)",
        ADMISSION_PATH,
        {"ns": "team-a", "job": "too-big-3x1cpu"},
    ),
]
DIAGNOSE_POSITION = (
    'query($ns: String!, $name: String!) { diagnose(namespace: $ns, kind: "Workload", '
    "name: $name) { stage summary queuePosition { visibility positionInClusterQueue "
    "positionInLocalQueue positionBeyond detail } } }"
)
AHEAD_OF_ME = (
    'query($ns: String!, $name: String!) { diagnose(namespace: $ns, kind: "Workload", '
    "name: $name) { queuePosition { visibility positionInClusterQueue positionBeyond } "
    "aheadOfMe { inLocalQueue inClusterQueue whyAheadInLocalQueue { higherPriority } "
    "startEstimate { explanation } } } }"
)


def position_queries(q: QueueSet) -> list[Query]:
    """`diagnose` and `aheadOfMe` of the two probes of one queue set."""
    return [
        Query(
            f"diagnose {probe} (position {'0' if priority > 0 else 'N'})",
            DIAGNOSE_POSITION,
            {"ns": q.namespace, "name": probe},
        )
        for probe, priority in PROBES.items()
    ] + [
        Query(f"aheadOfMe {probe}", AHEAD_OF_ME, {"ns": q.namespace, "name": probe})
        for probe in PROBES
    ]


POSITION_QUERIES = position_queries(DEFAULT_SET)
QUERIES += POSITION_QUERIES
IDEAL = "ideal raw client: GET workloads?limit=21"


@dataclass
class Figures:
    p50: float
    p95: float
    api_calls: str
    bytes_all: float
    bytes_kueue: float
    cpu_ms: float
    failures: int
    first_error: str = ""


def token(user: str) -> str:
    return (STATE / "users" / f"{user}.token").read_text().strip()


def kubectl(*args: str, stdin: str | None = None, check: bool = True) -> str:
    command = [str(STATE / "bin" / "kubectl"), "--kubeconfig", str(STATE / "kubeconfig"), *args]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=300)
    if check and done.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def api_env() -> tuple[str, Path]:
    env: dict[str, str] = {}
    for line in (STATE / "env").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            env[key.removeprefix("export ").strip()] = value.strip().strip("'\"")
    return env["KUBE_API_URL"], STATE / "pki" / "ca.crt"


# -- the Workloads ------------------------------------------------------------------------


def wait_for_namespace_gone(max_seconds: float, namespaces: tuple[str, ...] = NAMESPACES) -> None:
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline:
        if not any(
            kubectl("get", "namespace", ns, "--ignore-not-found", "-o", "name") for ns in namespaces
        ):
            return
        time.sleep(2)
    raise SystemExit(f"namespaces {namespaces} still terminating after {max_seconds:.0f} s")


def set_up_queues(q: QueueSet = DEFAULT_SET) -> None:
    phases = [
        kubectl("get", "namespace", ns, "--ignore-not-found", "-o", "jsonpath={.status.phase}")
        for ns in q.namespaces
    ]
    if "Terminating" in phases:
        print(f"waiting for the previous {q.namespace} namespace to go", flush=True)
        wait_for_namespace_gone(600, q.namespaces)
    kubectl("apply", "-f", "-", stdin=queues_manifest(q))


async def count_workloads(http: httpx.AsyncClient, q: QueueSet = DEFAULT_SET) -> int:
    """The numbered Workloads of both namespaces (the probes not counted)."""
    count = 0
    for namespace in q.namespaces:
        cont = ""
        while True:
            params = {"limit": "500", **({"continue": cont} if cont else {})}
            response = await http.get(f"{KUEUE}/namespaces/{namespace}/workloads", params=params)
            response.raise_for_status()
            body = response.json()
            count += sum(1 for i in body["items"] if i["metadata"]["name"] not in PROBES)
            cont = body["metadata"].get("continue") or ""
            if not cont:
                break
    return count


async def create_workloads(target: int, concurrency: int, q: QueueSet = DEFAULT_SET) -> None:
    url, ca = api_env()
    headers = {"Authorization": f"Bearer {token('admin')}"}
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, verify=str(ca), timeout=60, limits=limits
    ) as http:
        have = await count_workloads(http, q)
        for probe, priority in PROBES.items():
            response = await http.post(
                f"{KUEUE}/namespaces/{q.namespace}/workloads",
                json=workload(0, probe, priority, q),
            )
            if response.status_code not in (201, 409):
                raise SystemExit(f"probe {probe}: {response.status_code} {response.text[:200]}")
        if have >= target:
            print(f"{have} Workloads already in {', '.join(q.namespaces)}", flush=True)
            return
        todo = iter(range(have, target))
        done = failed = 0
        started = last_print = time.monotonic()
        errors: list[str] = []

        async def worker() -> None:
            nonlocal done, failed, last_print
            for index in todo:
                response = await http.post(
                    f"{KUEUE}/namespaces/{q.namespace_of(index)}/workloads",
                    json=workload(index, q=q),
                )
                if response.status_code in (201, 409):
                    done += 1
                else:
                    failed += 1
                    if len(errors) < 3:
                        errors.append(f"{response.status_code}: {response.text[:200]}")
                now = time.monotonic()
                if now - last_print >= 5:
                    last_print = now
                    rate = done / (now - started)
                    print(
                        f"  created {have + done}/{target} ({rate:.0f}/s), {failed} failed",
                        flush=True,
                    )

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
        print(
            f"created {done} Workloads in {elapsed:.1f} s ({done / elapsed:.0f}/s, "
            f"{concurrency} concurrent), {failed} failed {errors[:1]}",
            flush=True,
        )
        if failed:
            raise SystemExit(f"{failed} Workloads could not be created: {errors}")


def wait_until_kueue_counts(target: int, max_seconds: float, q: QueueSet = DEFAULT_SET) -> None:
    """Kueue has queued them all (ClusterQueue status.pendingWorkloads), so every read mode
    and the visibility API see the same cluster."""
    deadline = time.monotonic() + max_seconds
    pending = -1
    while time.monotonic() < deadline:
        status = kubectl(
            "get", "clusterqueue", q.cluster_queue, "-o", "jsonpath={.status.pendingWorkloads}"
        )
        pending = int(status or -1)
        if pending >= target + len(PROBES):
            return
        time.sleep(2)
    print(f"  (Kueue counts {pending} pending of {target} after {max_seconds:.0f} s; going on)")


def clean_up(sets: tuple[QueueSet, ...] = (DEFAULT_SET,)) -> None:
    namespaces = tuple(ns for q in sets for ns in q.namespaces)
    queues = [q.cluster_queue for q in sets]
    print(f"cleaning up: deleting namespaces {namespaces} and ClusterQueues {queues}")
    for namespace in namespaces:
        kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false", check=False)
    for queue in queues:
        kubectl("delete", "clusterqueue", queue, "--ignore-not-found", "--wait=false", check=False)
    try:
        wait_for_namespace_gone(600, namespaces)
        print(f"namespaces {', '.join(namespaces)} are gone")
    except SystemExit as error:
        print(error)


# -- the server ---------------------------------------------------------------------------


def serve_supports_read_mode() -> bool:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("kueue-graphql")), "serve", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    return "--read-mode" in done.stdout


@contextmanager
def server(
    read_mode: str, with_flag: bool, extra: tuple[str, ...] = ()
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [str(Path(sys.executable).with_name("kueue-graphql")), "serve"]
    # In cache mode the service reads the Kueue kinds as itself: the ServiceAccount that may
    # also list and watch them (tests/cluster/INTERFACE.md, cache_server_kubeconfig).
    identity = "kueue-graphql-cache-server" if read_mode == "cache" else "kueue-graphql-server"
    kubeconfig = STATE / "users" / f"{identity}.kubeconfig"
    if not kubeconfig.is_file():
        raise SystemExit(f"{kubeconfig} is missing: restart the control plane (make cluster-up)")
    command += ["--kubeconfig", str(kubeconfig)]
    # /metrics on the next port (bytes_read).
    command += ["--port", str(port), "--metrics-port", str(port + 1), "--log-level", "warning"]
    command += ["--read-mode", read_mode] if with_flag else []
    command += list(extra)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with launched(command, port, ready_seconds=300, cwd=ROOT, env=env) as (url, process, took):
        print(f"  server ready in {took:.1f} s (pid {process.pid})")
        yield url, process


METRIC = re.compile(r"^kueue_graphql_api_response_bytes_total\{(.*)\} (\S+)$")


def bytes_read(http: httpx.Client) -> tuple[float, float]:
    """(all kinds, Kueue kinds) read from the API server so far, by the server's metric."""
    total = kueue = 0.0
    api_port = http.base_url.port or 80
    metrics = http.base_url.copy_with(port=api_port + 1, path="/metrics")
    for line in http.get(metrics).text.splitlines():
        match = METRIC.match(line)
        if match is None:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        value = float(match.group(2))
        total += value
        if labels.get("resource") in KUEUE_RESOURCES:
            kueue += value
    return total, kueue


def measure_query(
    http: httpx.Client, pid: int, query: Query, n: int, max_seconds: float
) -> Figures:
    headers = {"Authorization": f"Bearer {token('viewer')}"}
    payload = {"query": query.text, "variables": query.variables}
    for _ in range(2):  # warm-up: connections, token and access-decision caches
        http.post("/graphql", json=payload, headers=headers)
    seconds: list[float] = []
    calls: list[int] = []
    failures: list[str] = []
    before_bytes, before_cpu = bytes_read(http), cpu_seconds(pid)
    deadline = time.monotonic() + max_seconds
    while len(seconds) < n and time.monotonic() < deadline:
        started = time.perf_counter()
        response = http.post("/graphql", json=payload, headers=headers)
        seconds.append(time.perf_counter() - started)
        body = response.json()
        calls.append(int((body.get("extensions") or {}).get("apiCalls", -1)))
        if response.status_code != 200 or body.get("errors"):
            error = (body.get("errors") or [{}])[0]
            code = (error.get("extensions") or {}).get("code")
            failures.append(f"{code}: {error.get('message')}")
    cpu = cpu_seconds(pid) - before_cpu
    after_bytes = bytes_read(http)
    count = len(seconds)
    return Figures(
        p50=percentile(seconds, 50),
        p95=percentile(seconds, 95),
        api_calls=str(min(calls)) if min(calls) == max(calls) else f"{min(calls)}-{max(calls)}",
        bytes_all=(after_bytes[0] - before_bytes[0]) / count,
        bytes_kueue=(after_bytes[1] - before_bytes[1]) / count,
        cpu_ms=cpu / count * 1000,
        failures=len(failures),
        first_error=failures[0] if failures else "",
    )


def measure_ideal(n: int) -> Figures:
    url, ca = api_env()
    headers = {"Authorization": f"Bearer {token('viewer')}"}
    seconds: list[float] = []
    size = 0
    with httpx.Client(base_url=url, headers=headers, verify=str(ca), timeout=60) as http:
        for i in range(n + 2):
            started = time.perf_counter()
            response = http.get(f"{KUEUE}/workloads", params={"limit": "21"})
            response.raise_for_status()
            response.json()
            if i >= 2:
                seconds.append(time.perf_counter() - started)
                size += len(response.content)
    return Figures(
        p50=percentile(seconds, 50),
        p95=percentile(seconds, 95),
        api_calls="1",
        bytes_all=size / len(seconds),
        bytes_kueue=size / len(seconds),
        cpu_ms=float("nan"),
        failures=0,
    )


def print_positions(http: httpx.Client, queries: list[Query] = POSITION_QUERIES) -> None:
    """What each position query answered (once more, as viewer): a pending probe must never be
    ABSENT."""
    headers = {"Authorization": f"Bearer {token('viewer')}"}
    for query in queries:
        body = http.post(
            "/graphql", json={"query": query.text, "variables": query.variables}, headers=headers
        ).json()
        d = (body.get("data") or {}).get("diagnose") or {}
        position = d.get("queuePosition") or {}
        ahead = d.get("aheadOfMe")
        said = (
            f"{position.get('visibility')} positionInClusterQueue="
            f"{position.get('positionInClusterQueue')} "
            f"positionBeyond={position.get('positionBeyond')}"
        )
        if ahead is not None:
            said += f" aheadOfMe.inClusterQueue={ahead.get('inClusterQueue')}"
        if body.get("errors"):
            said += f" errors: {body['errors'][0].get('message')}"
        flag = (
            "   <-- ABSENT for a pending Workload" if position.get("visibility") == "ABSENT" else ""
        )
        print(f"  answered {query.label:40} {said}{flag}")


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def kib(value: float) -> str:
    return f"{value / 1024:9.1f}"


HEADER = (
    f"{'query':48} {'p50 ms':>8} {'p95 ms':>8} {'calls':>6} {'KiB read':>9} {'Kueue KiB':>9}"
    f" {'CPU ms':>7}"
)


def row(label: str, f: Figures) -> str:
    line = (
        f"{label:48} {f.p50 * 1000:8.1f} {f.p95 * 1000:8.1f} {f.api_calls:>6} "
        f"{kib(f.bytes_all)} {kib(f.bytes_kueue)} {f.cpu_ms:7.1f}"
    )
    if f.failures:
        line += f"   {f.failures} failed, e.g. {f.first_error[:120]}"
    return line


@dataclass
class Sampled:
    seconds: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    cpu: float = 0.0


def figures_of(sampled: Sampled, bytes_all: float, bytes_kueue: float) -> Figures:
    count = len(sampled.seconds)
    calls = sampled.calls
    return Figures(
        p50=percentile(sampled.seconds, 50),
        p95=percentile(sampled.seconds, 95),
        api_calls=str(min(calls)) if min(calls) == max(calls) else f"{min(calls)}-{max(calls)}",
        bytes_all=bytes_all / count,
        bytes_kueue=bytes_kueue / count,
        cpu_ms=sampled.cpu / count * 1000,
        failures=len(sampled.failures),
        first_error=sampled.failures[0] if sampled.failures else "",
    )


def ask(http: httpx.Client, pid: int, query: Query, sampled: Sampled) -> None:
    headers = {"Authorization": f"Bearer {token('viewer')}"}
    payload = {"query": query.text, "variables": query.variables}
    cpu = cpu_seconds(pid)
    started = time.perf_counter()
    response = http.post("/graphql", json=payload, headers=headers)
    sampled.seconds.append(time.perf_counter() - started)
    sampled.cpu += cpu_seconds(pid) - cpu
    body = response.json()
    sampled.calls.append(int((body.get("extensions") or {}).get("apiCalls", -1)))
    if response.status_code != 200 or body.get("errors"):
        error = (body.get("errors") or [{}])[0]
        code = (error.get("extensions") or {}).get("code")
        sampled.failures.append(f"{code}: {error.get('message')}")


CACHE_VARIANTS = {"gc frozen after sync": (), "not frozen": ("--no-cache-gc-freeze",)}


def measure_cache(with_flag: bool, n: int) -> dict[str, Any]:
    """Cache mode: two servers side by side, the default (the cache frozen out of the garbage
    collector once synced) and `--no-cache-gc-freeze`; `n` rounds, each sending every query
    once to each server (the order alternating), so every query and both servers see the same
    load. CPU per request is the sum of /proc deltas around each request."""
    with ExitStack() as stack:
        targets = []
        for label, extra in CACHE_VARIANTS.items():
            url, process = stack.enter_context(server("cache", with_flag, extra))
            http = stack.enter_context(httpx.Client(base_url=url, timeout=120))
            targets.append((label, http, process))
        ready = {label: rss_kib(process.pid)[0] for label, _, process in targets}
        samples = {(label, q.label): Sampled() for label, _, _ in targets for q in QUERIES}
        for _, http, process in targets:  # warm-up
            for query in QUERIES:
                for _ in range(2):
                    ask(http, process.pid, query, Sampled())
        before = {label: bytes_read(http) for label, http, _ in targets}
        for index in range(n):
            order = targets if index % 2 == 0 else targets[::-1]
            for query in QUERIES:
                for label, http, process in order:
                    ask(http, process.pid, query, samples[(label, query.label)])
        after = {label: bytes_read(http) for label, http, _ in targets}
        results: dict[str, Any] = {}
        for label, _, process in targets:
            total = after[label][0] - before[label][0]
            kueue = after[label][1] - before[label][1]
            per_query = len(QUERIES)
            rss, peak = rss_kib(process.pid)
            results[label] = {
                q.label: figures_of(samples[(label, q.label)], total / per_query, kueue / per_query)
                for q in QUERIES
            }
            results[label]["rss"] = (ready[label], rss, peak)
            results[label]["kueue_bytes"] = kueue
        label = next(iter(CACHE_VARIANTS))
        print(HEADER)
        for query in QUERIES:
            print(row(query.label, results[label][query.label]), flush=True)
        print(
            f"  (KiB read: the whole run's bytes spread evenly over the queries; Kueue objects "
            f"read from the API server during the {n} rounds: {results[label]['kueue_bytes']:.0f}"
            " bytes)"
        )
        ideal = measure_ideal(n)
        results[label][IDEAL] = ideal
        print(row(IDEAL, ideal))
        print_positions(targets[0][1])
        for variant, by_query in results.items():
            rss_ready, rss, peak = by_query["rss"]
            print(
                f"  server RSS ({variant}) {rss_ready / 1024:.1f} MiB when ready, "
                f"{rss / 1024:.1f} MiB after the queries (peak {peak / 1024:.1f} MiB)"
            )
        other = list(CACHE_VARIANTS)[1]
        print(f"\n  {'p50 / p95 / max ms':48} {label:>24} {other:>24}")
        for query in QUERIES:
            cells = []
            for variant in (label, other):
                seconds = samples[(variant, query.label)].seconds
                cells.append(
                    f"{percentile(seconds, 50) * 1000:6.1f} {percentile(seconds, 95) * 1000:6.1f}"
                    f" {max(seconds) * 1000:6.1f}"
                )
            print(f"  {query.label:48} {cells[0]:>24} {cells[1]:>24}")
        return results[label] | {"variants": results}


def measure_mode(read_mode: str, with_flag: bool, n: int, max_seconds: float) -> dict[str, Any]:
    if read_mode == "cache":
        return measure_cache(with_flag, n)
    results: dict[str, Any] = {}
    with (
        server(read_mode, with_flag) as (url, process),
        httpx.Client(base_url=url, timeout=120) as http,
    ):
        rss_ready = rss_kib(process.pid)[0]
        print(HEADER)
        for query in QUERIES:
            figures = measure_query(http, process.pid, query, n, max_seconds)
            results[query.label] = figures
            print(row(query.label, figures), flush=True)
        ideal = measure_ideal(n)
        results[IDEAL] = ideal
        print(row(IDEAL, ideal))
        print_positions(http)
        rss, peak = rss_kib(process.pid)
        results["rss"] = (rss_ready, rss, peak)
        print(
            f"  server RSS {rss_ready / 1024:.1f} MiB when ready, {rss / 1024:.1f} MiB after "
            f"the queries (peak {peak / 1024:.1f} MiB)"
        )
    return results


def print_ratios(read_mode: str, small: int, large: int, figures: dict[int, Any]) -> None:
    a, b = figures[small], figures[large]
    print(f"\n{read_mode}: {large}/{small} ratios (p50 latency; bytes read; CPU per request)")
    floor = b[FLOOR].p50 / a[FLOOR].p50
    print(
        f"  (the floor query's own ratio, x{floor:.2f}, is the machine's load between the two "
        "sizes: the last column divides it out)"
    )
    for label in [q.label for q in QUERIES] + [IDEAL]:
        fa, fb = a[label], b[label]
        cpu = fb.cpu_ms / fa.cpu_ms if fa.cpu_ms == fa.cpu_ms and fa.cpu_ms > 0 else float("nan")
        read = f"x{fb.bytes_all / fa.bytes_all:6.2f}" if fa.bytes_all else f"{fb.bytes_all:7.0f}"
        ratio = fb.p50 / fa.p50
        print(
            f"  {label:48} p50 x{ratio:5.2f}   bytes {read}   CPU x{cpu:5.2f}"
            f"   p50 / floor's x{ratio / floor:5.2f}"
        )
    print(f"  {'server RSS after the queries':48} x{b['rss'][1] / a['rss'][1]:5.2f}")
    positions = [q.label for q in POSITION_QUERIES]
    lists = [
        q.label
        for q in QUERIES
        if q.label != FLOOR and not q.label.startswith("admission") and q.label not in positions
    ]
    if lists:
        worst = max(lists, key=lambda label: b[label].p50 / a[label].p50)
        print(
            f"  largest list-query p50 ratio: x{b[worst].p50 / a[worst].p50:.2f} ({worst.strip()}; "
            f"issue 7 asks <= 1.5 in cache mode); load average now {load_average()}"
        )
    worst = max(positions, key=lambda label: b[label].p50 / a[label].p50)
    print(
        f"  largest position-query p50 ratio: x{b[worst].p50 / a[worst].p50:.2f} ({worst}; "
        f"issue 26 asks <= 1.5 in cache mode); load average now {load_average()}"
    )


def measure_together(read_mode: str, with_flag: bool, sets: dict[int, QueueSet], n: int) -> None:
    """`--together`: every size's queue set is in the cluster at once, and one server answers
    `n` rounds, each asking every position query of every size once (the order of the sizes
    alternating), so both sizes see the same load: the ratio of their p50s is the cost of the
    queue's length alone."""
    queries = {
        size: [Query(FLOOR, "{ __typename }"), *position_queries(q)] for size, q in sets.items()
    }
    sizes = sorted(sets)
    samples = {(size, q.label): Sampled() for size in sizes for q in queries[size]}
    with (
        server(read_mode, with_flag) as (url, process),
        httpx.Client(base_url=url, timeout=120) as http,
    ):
        for size in sizes:  # warm-up
            for query in queries[size]:
                for _ in range(2):
                    ask(http, process.pid, query, Sampled())
        for index in range(n):
            order = sizes if index % 2 == 0 else sizes[::-1]
            for i in range(len(queries[sizes[0]])):
                for size in order:
                    query = queries[size][i]
                    ask(http, process.pid, query, samples[(size, query.label)])
        small, large = sizes[0], sizes[-1]
        print(
            f"{'query (p50 / p95 ms, CPU ms per request)':48} "
            + " ".join(f"{f'{size} pending':>24}" for size in sizes)
            + f" {'p50 ratio':>10}"
        )
        worst = ("", 0.0)
        for query in queries[small]:
            cells = []
            for size in sizes:
                got = samples[(size, query.label)]
                cells.append(
                    f"{percentile(got.seconds, 50) * 1000:6.1f} "
                    f"{percentile(got.seconds, 95) * 1000:6.1f} "
                    f"{got.cpu / max(1, len(got.seconds)) * 1000:6.1f}"
                )
                if got.failures:
                    cells[-1] += f" ({len(got.failures)} failed: {got.failures[0][:80]})"
            ratio = percentile(samples[(large, query.label)].seconds, 50) / percentile(
                samples[(small, query.label)].seconds, 50
            )
            if query.label != FLOOR and ratio > worst[1]:
                worst = (query.label, ratio)
            print(f"{query.label:48} " + " ".join(f"{c:>24}" for c in cells) + f" {ratio:9.2f}x")
        for size in sizes:
            print(f"  positions at {size}:")
            print_positions(http, position_queries(sets[size]))
        print(
            f"largest position-query p50 ratio {large}/{small}, same run: x{worst[1]:.2f} "
            f"({worst[0]}; issue 26 asks <= 1.5 in cache mode); load average {load_average()}"
        )


def run_together(args: argparse.Namespace, modes: list[str], has_flag: bool) -> None:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    sets = {size: QueueSet.of_size(size) for size in sizes}
    try:
        for size, q in sets.items():
            print(
                f"\n== {size} pending Workloads in {q.cluster_queue} (half of them in "
                f"{q.other_namespace}'s same-named LocalQueue) + 2 probes in {q.namespace} ==",
                flush=True,
            )
            set_up_queues(q)
            asyncio.run(create_workloads(size, args.concurrency, q))
            wait_until_kueue_counts(size, 300, q)
        for mode in modes:
            print(
                f"\n-- read mode {mode}, sizes {sizes} together (load average {load_average()}) --"
            )
            measure_together(mode, has_flag, sets, args.n)
    finally:
        clean_up(tuple(sets.values()))


def run(args: argparse.Namespace) -> None:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.only_positions:
        QUERIES[:] = [q for q in QUERIES if q.label == FLOOR] + POSITION_QUERIES
    modes = [m.strip() for m in args.read_mode.split(",") if m.strip()]
    has_flag = serve_supports_read_mode()
    if not has_flag and any(m != "impersonate" for m in modes):
        print(
            "this build's `serve` has no --read-mode (the cache read mode is not merged): "
            "measuring impersonate only"
        )
        modes = [m for m in modes if m == "impersonate"]
    print(
        f"kueue-graphql scale benchmark: sizes {sizes}, read modes {modes}, n={args.n} per "
        f"query (after 2 warm-up requests), as viewer, over loopback; server CPU from /proc"
    )
    if args.together:
        run_together(args, modes, has_flag)
        return
    set_up_queues()
    results: dict[str, dict[int, Any]] = {m: {} for m in modes}
    for size in sizes:
        print(
            f"\n== {size} pending Workloads in {CLUSTER_QUEUE} (half of them in "
            f"{OTHER_NAMESPACE}'s same-named LocalQueue) + 2 probes in {NAMESPACE} ==",
            flush=True,
        )
        asyncio.run(create_workloads(size, args.concurrency))
        wait_until_kueue_counts(size, 300)
        for mode in modes:
            print(
                f"\n-- read mode {mode}, {size} Workloads (load average {load_average()}) --",
                flush=True,
            )
            results[mode][size] = measure_mode(mode, has_flag, args.n, args.max_seconds)
    if len(sizes) > 1:
        for mode in modes:
            print_ratios(mode, sizes[0], sizes[-1], results[mode])
    if args.json:
        dumped = {
            mode: {
                str(size): {
                    k: v.__dict__ if isinstance(v, Figures) else v for k, v in figures.items()
                }
                for size, figures in by_size.items()
            }
            for mode, by_size in results.items()
        }
        Path(args.json).write_text(json.dumps(dumped, indent=1, default=lambda o: o.__dict__))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="pending Workloads, comma-separated")
    parser.add_argument(
        "--read-mode", default="impersonate,cache", help="read modes to measure, comma-separated"
    )
    parser.add_argument("-n", type=int, default=20, help="requests per query, size and mode")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent creates")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="cap per query loop")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument(
        "--only-positions",
        action="store_true",
        help="measure only the floor and the diagnose/aheadOfMe position queries",
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="the position queries only, with every size's queue in the cluster at once and "
        "their queries alternating (the ratio then does not depend on load drifting between "
        "sizes)",
    )
    args = parser.parse_args()
    if not (STATE / "env").is_file():
        raise SystemExit("no control plane: start it with `make cluster-up` (or `make demo`)")

    def interrupted(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    try:
        run(args)
    except KeyboardInterrupt:
        print("\ninterrupted", flush=True)
    finally:
        if not args.together:
            clean_up()


if __name__ == "__main__":
    main()
