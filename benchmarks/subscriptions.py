"""Live answers under load: N diagnosis subscriptions held while the verdict keeps changing.

Needs the test control plane running (`make cluster-up`). Run by hand; it prints figures and
asserts nothing:

    uv run python benchmarks/subscriptions.py [--subscriptions 200] [--seconds 60] [--every 3]

It starts the server (`benchmarks/server.py`, defaults of `kueue-graphql serve`) as a separate
process, opens `--subscriptions` `diagnosis` subscriptions over graphql-transport-ws (the
`websockets` client; half as alice, half as grace, 20 per connection, the default caps), all on
one quota-held Job, then every `--every` seconds flips its Workload's `spec.active` as admin
(DEACTIVATED <-> WAITING_FOR_QUOTA_RESERVATION: a verdict change every subscriber must get).

Printed: change -> push latency p50/p95 (from just before the admin's PATCH is sent to each
message's arrival, so it includes the PATCH itself), server RSS per open subscription, server
CPU per pushed message beside the CPU of one `diagnose` query (what a polling client pays per
answer, measured in the same run), and the server's fds / asyncio tasks (from /metrics) /
threads / RSS / connections to the API server before opening and after closing, for each of
`--rounds` open-hold-close cycles (bounded: the second round ends where the first did). After
each round, the server's heap figures (benchmarks/heap.py: gc-tracked objects, allocated
blocks, malloc in use / free, and the types that grew), so a leak of Python objects can be told
from memory the allocator keeps; `--trim` adds RSS after glibc's malloc_trim(0).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from admission_path import ROOT, STATE, cpu_seconds, metrics_url, percentile, rss_kib, server

sys.path.insert(0, str(ROOT))
from tests.service.live_client import Subscriber, subscriber

QUERY = """
subscription($ns: String!, $name: String!) {
  diagnosis(namespace: $ns, kind: "Job", name: $name) { stage reasons { code } }
}
"""
JOB = "bench-live-held"
MANIFEST = f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {JOB}
  namespace: team-a
  labels: {{kueue.x-k8s.io/queue-name: lq-small}}
spec:
  parallelism: 1
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/kueue-graphql/sleep:never-pulled
        resources:
          requests: {{cpu: "3", memory: "256Mi"}}
"""
PER_CONNECTION = 20


def kubectl(*args: str, stdin: str | None = None) -> str:
    command = [str(STATE / "bin" / "kubectl"), "--kubeconfig", str(STATE / "kubeconfig"), *args]
    done = subprocess.run(command, input=stdin, text=True, capture_output=True, check=True)
    return done.stdout


def token(user: str) -> str:
    return (STATE / "users" / f"{user}.token").read_text().strip()


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def api_connections(pid: int) -> dict[str, int]:
    """The server's TCP connections by state, to the API server's port (from `ss`)."""
    port = os.environ.get("KUBE_API_PORT") or api_port()
    out = subprocess.run(
        ["ss", "-tanpH"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    counts: dict[str, int] = {}
    for line in out:
        if f"pid={pid}," not in line:
            continue
        fields = line.split()
        if fields[4].rsplit(":", 1)[-1] == port:
            counts[fields[0]] = counts.get(fields[0], 0) + 1
    return counts


def api_port() -> str:
    for line in (STATE / "env").read_text().splitlines():
        if line.startswith("KUBE_API_URL="):
            return line.rsplit(":", 1)[-1].strip("/")
    return ""


def tasks(url: str) -> int:
    import httpx

    for line in httpx.get(f"{metrics_url(url)}/metrics", timeout=5).text.splitlines():
        if line.startswith("kueue_graphql_asyncio_tasks "):
            return int(float(line.split()[1]))
    return -1


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def workload_name() -> str:
    for _ in range(100):
        items = json.loads(kubectl("get", "workloads", "-n", "team-a", "-o", "json"))["items"]
        for item in items:
            owners = item["metadata"].get("ownerReferences") or []
            if any(o.get("name") == JOB for o in owners):
                return str(item["metadata"]["name"])
        time.sleep(0.2)
    raise SystemExit("the Job's Workload never appeared")


async def run(args: argparse.Namespace) -> None:
    kubectl("apply", "-f", "-", stdin=MANIFEST)
    workload = workload_name()
    kubectl(
        "patch",
        "workload",
        workload,
        "-n",
        "team-a",
        "--type=merge",
        "-p",
        '{"spec":{"active":true}}',
    )
    report_path = Path(tempfile.mkdtemp()) / "heap.json"
    os.environ["KGQL_BENCH_HEAP_REPORT"] = str(report_path)
    if args.trim:
        os.environ["KGQL_BENCH_TRIM"] = "1"
    if args.tracemalloc:
        os.environ["PYTHONTRACEMALLOC"] = "1"
    if args.malloc_arena_max:
        os.environ["MALLOC_ARENA_MAX"] = str(args.malloc_arena_max)
    with server(None) as (url, process):
        pid = process.pid
        before = snapshot(url, pid)
        print(f"server before open: {before}")
        heaps = [await heap_report(pid, report_path)]
        print(f"heap before open: {heap_line(heaps[0])}")
        for round_number in range(1, args.rounds + 1):
            await one_round(args, url, pid, workload, before)
            # Idle keep-alive connections of the read pool close 15-30 s after their last use
            # (aiohttp's keepalive_timeout, checked every 15 s): wait for them, at most 45 s.
            settle = time.monotonic() + 45
            while time.monotonic() < settle:
                after = snapshot(url, pid)
                if after["fds"] <= before["fds"] and after["tasks"] <= before["tasks"]:
                    break
                await asyncio.sleep(1)
            after = snapshot(url, pid)
            print(f"server after close (round {round_number}): {after}")
            heaps.append(await heap_report(pid, report_path))
            print(f"heap after close (round {round_number}): {heap_line(heaps[-1])}")
            print(f"  grown since the previous report: {type_growth(heaps[-2], heaps[-1])}")
            for line in heaps[-1].get("traced_growth", [])[:10]:
                print(f"  traced {line}")
            if args.dump_tasks and after["tasks"] > before["tasks"]:
                os.kill(pid, signal.SIGUSR1)  # the server prints its tasks' stacks
                await asyncio.sleep(2)
    kubectl("delete", "job", JOB, "-n", "team-a", "--ignore-not-found")


async def heap_report(pid: int, path: Path) -> dict[str, Any]:
    """The server's heap figures (benchmarks/heap.py, on SIGUSR2, after a full collection)."""
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    for _ in range(300):
        await asyncio.sleep(0.1)
        with contextlib.suppress(FileNotFoundError, ValueError):
            figures: dict[str, Any] = json.loads(path.read_text())
            return figures
    raise SystemExit("the server wrote no heap report within 30 s")


def heap_line(figures: dict[str, Any]) -> str:
    shown = [
        f"{key} {figures[key]}"
        for key in (
            "gc_objects",
            "allocated_blocks",
            "malloc_in_use_kib",
            "malloc_free_kib",
            "rss_kib",
            "rss_after_trim_kib",
            "traced_kib",
        )
        if key in figures
    ]
    return ", ".join(shown)


def type_growth(before: dict[str, Any], after: dict[str, Any], top: int = 8) -> str:
    old, new = before["top_types"], after["top_types"]
    grown = sorted(((new[t] - old.get(t, 0), t) for t in new), reverse=True)[:top]
    return ", ".join(f"{name} {diff:+d}" for diff, name in grown if diff) or "nothing"


def snapshot(url: str, pid: int) -> dict[str, object]:
    return {
        "fds": fds(pid),
        "tasks": tasks(url),
        "threads": threads(pid),
        "rss_kib": rss_kib(pid)[0],
        "api_connections": api_connections(pid),
    }


async def one_round(
    args: argparse.Namespace, url: str, pid: int, workload: str, before: dict[str, object]
) -> None:
    latencies: list[float] = []
    received = 0
    ended: list[str] = []  # subscriptions that ended with an error (e.g. UNAVAILABLE under load)
    changed_at: list[float] = []
    connections = (args.subscriptions + PER_CONNECTION - 1) // PER_CONNECTION

    async def hold(index: int, ready: asyncio.Event, stop: asyncio.Event) -> None:
        nonlocal received
        user = "alice" if index % 2 == 0 else "grace"
        count = min(PER_CONNECTION, args.subscriptions - index * PER_CONNECTION)
        async with subscriber(url, token(user)) as sub:
            for op in range(count):
                await sub.subscribe(str(op), QUERY, {"ns": "team-a", "name": JOB})
            for _ in range(count):  # the first answers
                if not await expect_next(sub):
                    ended.append(user)
            ready.set()
            while not stop.is_set():
                try:
                    pushed = await asyncio.wait_for(expect_next(sub), 1)
                except TimeoutError:
                    continue
                if not pushed:
                    ended.append(user)
                    continue
                received += 1
                if changed_at:
                    latencies.append(time.monotonic() - changed_at[-1])

    round_start_rss = rss_kib(pid)[0]
    stop = asyncio.Event()
    readies = [asyncio.Event() for _ in range(connections)]
    started = time.monotonic()
    holders = [asyncio.create_task(hold(i, readies[i], stop)) for i in range(connections)]
    await asyncio.gather(*(r.wait() for r in readies))
    print(f"{args.subscriptions} subscriptions open in {time.monotonic() - started:.1f} s")
    await asyncio.sleep(2)
    open_rss = rss_kib(pid)[0]
    open_tasks = tasks(url)
    cpu_start = cpu_seconds(pid)
    received = 0
    active = True
    end = time.monotonic() + args.seconds
    changes = 0
    while time.monotonic() < end:
        active = not active
        changed_at.append(time.monotonic())
        await asyncio.to_thread(
            kubectl,
            "patch",
            "workload",
            workload,
            "-n",
            "team-a",
            "--type=merge",
            "-p",
            json.dumps({"spec": {"active": active}}),
        )
        changes += 1
        await asyncio.sleep(args.every)
    cpu = cpu_seconds(pid) - cpu_start
    stop.set()
    await asyncio.gather(*holders)
    print(
        f"changes: {changes}, pushed messages received: {received} "
        f"(at most {changes * args.subscriptions}: a flip and its flip-back within one "
        f"recompute push nothing); subscriptions ended by an error: {len(ended)}"
    )
    if latencies:
        print(
            f"change -> push: p50 {percentile(latencies, 50) * 1000:.0f} ms, "
            f"p95 {percentile(latencies, 95) * 1000:.0f} ms (coalescing adds 250 ms)"
        )
    per_subscription = (open_rss - round_start_rss) / args.subscriptions
    print(
        f"while open: server RSS per open subscription {per_subscription:.0f} KiB, "
        f"tasks {open_tasks}"
    )
    if received:
        per_push = cpu / received * 1000
        per_query = await cpu_per_query(url, pid)
        print(
            f"server CPU per pushed message: {per_push:.2f} ms; per `diagnose` query of the "
            f"same Job over HTTP (a polling client's cost per answer): {per_query:.2f} ms "
            f"(ratio {per_push / per_query:.2f})"
        )


async def cpu_per_query(url: str, pid: int, count: int = 50) -> float:
    """Server CPU (ms) per `diagnose` query of the benchmark's Job, as alice, one at a time."""
    import httpx

    query = QUERY.replace("subscription", "query").replace("diagnosis(", "diagnose(")
    headers = {"Authorization": f"Bearer {token('alice')}"}
    body = {"query": query, "variables": {"ns": "team-a", "name": JOB}}
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        await http.post("/graphql", json=body, headers=headers)
        start = cpu_seconds(pid)
        for _ in range(count):
            response = await http.post("/graphql", json=body, headers=headers)
            assert "errors" not in response.json(), response.text
        return (cpu_seconds(pid) - start) / count * 1000


async def expect_next(sub: Subscriber) -> bool:
    """True for a pushed answer; False for an error that ended a subscription (its
    `complete` is skipped)."""
    while True:
        message = await sub.receive()
        if message["type"] == "complete":
            continue
        if message["type"] == "next" and "errors" not in message["payload"]:
            return True
        codes = [e.get("extensions", {}).get("code") for e in message["payload"]["errors"]]
        print(f"a subscription ended with {codes}", file=sys.stderr)
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--every", type=float, default=3)
    parser.add_argument("--dump-tasks", action="store_true", help="print leftover tasks")
    parser.add_argument(
        "--rounds", type=int, default=2, help="open/hold/close cycles (bounded: no growth)"
    )
    parser.add_argument(
        "--trim",
        action="store_true",
        help="call glibc's malloc_trim(0) in each heap report and print RSS after it",
    )
    parser.add_argument(
        "--tracemalloc", action="store_true", help="trace allocations (slow): print what grew"
    )
    parser.add_argument(
        "--malloc-arena-max", type=int, default=0, help="MALLOC_ARENA_MAX for the server"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
