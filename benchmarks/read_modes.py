"""The two read modes side by side, on the test control plane as it is (no extra objects):

    uv run python benchmarks/read_modes.py [-n 100] [--max-seconds 60]

Starts `kueue-graphql serve` twice on free loopback ports, as `--read-mode impersonate` (the
service's ServiceAccount) and as `--read-mode cache` (ServiceAccount kueue-graphql-cache, once
/readyz says every informer synced), one after the other. For each query it sends one warm-up
request, then `n` sequential ones, and prints p50/p95 latency, the API calls per request
(`extensions.apiCalls`), how many of them read Kueue objects (counted by the server's own
metrics), the server's CPU per request, and the cache/impersonate ratio of the p50s. It asserts
nothing. (The 1k/10k scaling figures are `make bench-scale`'s.)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import httpx
from launch import free_port, launched

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".cluster"

QUERIES = {
    "admission path": (
        "viewer",
        """{ workloadFor(namespace: "team-a", kind: "Job", name: "healthy-running") {
          name conditions { type status reason }
          localQueue { name clusterQueue { name cohort { name } flavorsUsage { name } } }
          job { name pods { name phase } } events { reason } } }""",
    ),
    "pending in a CQ": (
        "viewer",
        """{ workloads(first: 20, clusterQueue: "cq-small-2cpu", status: PENDING) {
          totalCount nodes { name } } }""",
    ),
    "tenant lists": (
        "alice",
        """{ workloads(first: 20, namespace: "team-a") { totalCount nodes { name } }
          localQueues(first: 20, namespace: "team-a") { nodes { name } } }""",
    ),
}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks


KUEUE_RESOURCES = (
    "workloads",
    "localqueues",
    "clusterqueues",
    "cohorts",
    "resourceflavors",
    "admissionchecks",
    "workloadpriorityclasses",
    "topologies",
)


def kueue_reads(url: str) -> float:
    """API calls for Kueue objects so far (informers included), from the server's /metrics."""
    total = 0.0
    base, port = url.rsplit(":", 1)
    # /metrics listens on the next port (`--metrics-port` below).
    for line in httpx.get(f"{base}:{int(port) + 1}/metrics", timeout=5).text.splitlines():
        if line.startswith("kueue_graphql_api_calls_total{") and any(
            f'resource="{r}"' in line for r in KUEUE_RESOURCES
        ):
            total += float(line.rsplit(" ", 1)[1])
    return total


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def run_mode(mode: str, args: argparse.Namespace) -> dict[str, float]:
    kubeconfig = (
        STATE
        / "users"
        / (
            "kueue-graphql-cache-server.kubeconfig"
            if mode == "cache"
            else "kueue-graphql-server.kubeconfig"
        )
    )
    port = free_port()
    command = [sys.executable, "-m", "kueue_graphql.cli", "serve"]
    command += ["--kubeconfig", str(kubeconfig), "--port", str(port)]
    command += ["--metrics-port", str(port + 1), "--read-mode", mode, "--log-level", "warning"]
    p50s: dict[str, float] = {}
    what = f"the {mode} server"
    with launched(command, port, ready_seconds=60, what=what) as (url, process, _):
        print(f"\n--read-mode {mode} (pid {process.pid})")
        print(
            f"{'query':16} {'n':>4} {'p50 ms':>7} {'p95 ms':>7} {'calls':>6} "
            f"{'kueue':>6} {'CPU ms/req':>10}"
        )
        with httpx.Client(base_url=url, timeout=30) as http:
            for label, (user, query) in QUERIES.items():
                token = (STATE / "users" / f"{user}.token").read_text().strip()
                headers = {"Authorization": f"Bearer {token}"}
                http.post("/graphql", json={"query": query}, headers=headers)  # warm-up
                seconds: list[float] = []
                calls: list[int] = []
                reads_before, cpu_before = kueue_reads(url), cpu_seconds(process.pid)
                deadline = time.monotonic() + args.max_seconds
                while len(seconds) < args.n and time.monotonic() < deadline:
                    started = time.perf_counter()
                    body = http.post("/graphql", json={"query": query}, headers=headers).json()
                    seconds.append(time.perf_counter() - started)
                    if body.get("errors"):
                        raise SystemExit(f"{label}: {body['errors'][0]}")
                    calls.append(int(body["extensions"]["apiCalls"]))
                cpu = cpu_seconds(process.pid) - cpu_before
                kueue = (kueue_reads(url) - reads_before) / len(seconds)
                p50s[label] = percentile(seconds, 50)
                print(
                    f"{label:16} {len(seconds):4} {p50s[label] * 1000:7.1f} "
                    f"{percentile(seconds, 95) * 1000:7.1f} {sum(calls) / len(calls):6.1f} "
                    f"{kueue:6.1f} {cpu / len(seconds) * 1000:10.1f}"
                )
    return p50s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--max-seconds", type=float, default=60)
    args = parser.parse_args()
    impersonate = run_mode("impersonate", args)
    cache = run_mode("cache", args)
    print("\np50 cache / impersonate:")
    for label in QUERIES:
        print(f"  {label:16} {cache[label] / impersonate[label]:.2f}")


if __name__ == "__main__":
    main()
