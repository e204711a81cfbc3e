"""Latency, API calls, throughput and memory of the real server on the contract queries.

Needs the test control plane running (`make cluster-up` or `make demo`). Run by hand (or
`make bench`); it prints figures and asserts nothing:

    uv run python benchmarks/admission_path.py [-n 200] [--concurrency 8] [--requests 400]

It starts two servers on free loopback ports as the service's ServiceAccount
(.cluster/users/kueue-graphql-server.kubeconfig), one after the other:

- cold: per-identity caches off (TTL 0), so every request pays its TokenReview and
  SubjectAccessReviews; `n` sequential requests per query.
- warm: the defaults of `kueue-graphql serve` (TokenReview answers cached 30 s, access decisions
  10 s); the first request (cold, new connections) is reported apart, then `n` sequential
  requests, then throughput: `--requests` requests from `--concurrency` concurrent clients.

Queries: the README's admission path (`workloadFor`) as alice (ClusterQueue by name only, as
she may not read it) and as viewer (with the ClusterQueue details), and `diagnose` as both,
when schema/schema.graphql has it. The server's RSS comes from /proc/<pid>/status before the
first request and after the last. Every loop is bounded by count and by `--max-seconds`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".cluster"

ADMISSION_PATH = """
query AdmissionPath($ns: String!, $job: String!) {
  workloadFor(namespace: $ns, kind: "Job", name: $job) {
    name
    conditions { type status reason message }
    totalRequests { resource quantity amount }
    localQueue { name stopPolicy conditions { type status reason } }
    clusterQueue {
      name
      cohort { name parent { name } }
      resourceGroups {
        flavors { name resources { name nominalQuota borrowingLimit lendingLimit } }
      }
      flavorsUsage { name resources { name total borrowed } }
    }
    job { name pods { name phase node { name } conditions { type status reason message } } }
    events { reason message }
  }
}
"""
# alice may not read ClusterQueues: she selects the name only (it comes from her LocalQueue).
ADMISSION_PATH_TENANT = ADMISSION_PATH.replace(
    ADMISSION_PATH[ADMISSION_PATH.index("clusterQueue {") : ADMISSION_PATH.index("job {")],
    "clusterQueue { name }\n    ",
)

DIAGNOSE = """
query Why($ns: String!, $job: String!) {
  diagnose(namespace: $ns, kind: "Job", name: $job) {
    stage
    layer
    summary
    blockingObject { __typename ... on ClusterQueue { name } }
    reasons { code kueueReason message numbers { name quantity } }
    quota { visibility detail }
    queuePosition { visibility positionInLocalQueue }
    nextSteps
  }
}
"""


@dataclass(frozen=True)
class Case:
    label: str
    user: str
    query: str


def cases() -> list[Case]:
    found = [
        Case("admission path", "alice", ADMISSION_PATH_TENANT),
        Case("admission path", "viewer", ADMISSION_PATH),
    ]
    if "diagnose(" in (ROOT / "schema" / "schema.graphql").read_text():
        found += [Case("diagnose", "alice", DIAGNOSE), Case("diagnose", "viewer", DIAGNOSE)]
    return found


@dataclass
class Samples:
    seconds: list[float] = field(default_factory=list)
    api_calls: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, seconds: float, response: httpx.Response) -> None:
        self.seconds.append(seconds)
        body = response.json()
        self.api_calls.append(int((body.get("extensions") or {}).get("apiCalls", -1)))
        if response.status_code != 200 or body.get("errors"):
            error = (body.get("errors") or [{}])[0]
            code = (error.get("extensions") or {}).get("code")
            self.failures.append(f"HTTP {response.status_code} {code}: {error.get('message')}")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f}"


def calls(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def row(case: Case, mode: str, samples: Samples) -> str:
    s = samples.seconds
    line = f"{case.label:15} {case.user:7} {mode:7} {len(s):5} "
    line += f"{ms(percentile(s, 50))} {ms(percentile(s, 95))} {ms(max(s))}"
    line += f" {calls(samples.api_calls):>9}"
    if samples.failures:
        line += f"   {len(samples.failures)} failed, e.g. {samples.failures[0]}"
    return line


HEADER = f"{'query':15} {'user':7} {'mode':7} {'n':>5} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}"
HEADER += f" {'apiCalls':>9}"


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, in KiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (/proc/<pid>/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server(cache_ttl: str | None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [sys.executable, str(Path(__file__).with_name("server.py"))]
    command += [str(STATE / "users" / "kueue-graphql-server.kubeconfig"), str(port)]
    command += [cache_ttl] if cache_ttl is not None else []
    process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if process.poll() is not None:
                raise SystemExit(f"the server exited with {process.returncode}")
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit("the server did not become ready within 30 s")
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Client:
    def __init__(self, http: httpx.AsyncClient, job: str) -> None:
        self.http = http
        self.variables = {"ns": "team-a", "job": job}
        self.tokens = {
            u: (STATE / "users" / f"{u}.token").read_text().strip() for u in ("alice", "viewer")
        }

    async def timed(self, case: Case, samples: Samples) -> None:
        headers = {"Authorization": f"Bearer {self.tokens[case.user]}"}
        payload = {"query": case.query, "variables": self.variables}
        started = time.perf_counter()
        response = await self.http.post("/graphql", json=payload, headers=headers)
        samples.add(time.perf_counter() - started, response)

    async def sequential(self, case: Case, n: int, max_seconds: float) -> Samples:
        samples = Samples()
        deadline = time.monotonic() + max_seconds
        while len(samples.seconds) < n and time.monotonic() < deadline:
            await self.timed(case, samples)
        return samples

    async def concurrent(
        self, case: Case, total: int, concurrency: int, max_seconds: float
    ) -> tuple[Samples, float]:
        samples = Samples()
        deadline = time.monotonic() + max_seconds
        issued = 0

        async def worker() -> None:
            nonlocal issued
            while issued < total and time.monotonic() < deadline:
                issued += 1
                await self.timed(case, samples)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return samples, time.perf_counter() - started


# Server CPU per sequential warm admission-path request, by user (filled by the warm run).
warm_cpu_ms: dict[str, float] = {}


async def measure_server(mode: str, cache_ttl: str | None, args: argparse.Namespace) -> None:
    limits = httpx.Limits(max_connections=args.concurrency)
    with server(cache_ttl) as (url, process):
        print(f"\n{mode} server (pid {process.pid}, cache TTL {cache_ttl or 'default'})")
        print(HEADER)
        before = rss_kib(process.pid)
        async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:
            client = Client(http, args.job)
            for case in cases():
                if mode == "warm":
                    first = Samples()
                    await client.timed(case, first)
                    print(row(case, "first", first))
                cpu = cpu_seconds(process.pid)
                samples = await client.sequential(case, args.n, args.max_seconds)
                cpu = cpu_seconds(process.pid) - cpu
                per_request = cpu / len(samples.seconds) * 1000
                print(row(case, mode, samples) + f"   server CPU {per_request:.1f} ms/request")
                if mode == "warm" and case.label == "admission path":
                    warm_cpu_ms[case.user] = per_request
            if mode == "warm":
                for case in cases():
                    cpu = cpu_seconds(process.pid)
                    samples, elapsed = await client.concurrent(
                        case, args.requests, args.concurrency, args.max_seconds
                    )
                    cpu = cpu_seconds(process.pid) - cpu
                    throughput = f"{len(samples.seconds) / elapsed:3.0f}/s"
                    print(
                        row(case, f"x{args.concurrency} {throughput}", samples)
                        + f"   server CPU {cpu / elapsed:.0%} of a core,"
                        f" {cpu / len(samples.seconds) * 1000:.1f} ms/request"
                    )
        after = rss_kib(process.pid)
        print(
            f"server RSS: {before[0] / 1024:.1f} MiB before the first request, "
            f"{after[0] / 1024:.1f} MiB after the last (peak {after[1] / 1024:.1f} MiB)"
        )


async def measure(args: argparse.Namespace) -> None:
    print(
        f"kueue-graphql benchmark: job team-a/{args.job}, n={args.n}, throughput with "
        f"{args.concurrency} concurrent clients x {args.requests} requests, at most "
        f"{args.max_seconds:.0f} s per loop; latency seen by the client over loopback"
    )
    await measure_server("cold", "0", args)
    await measure_server("warm", None, args)
    baseline = args.baseline_cpu_ms
    for user, figure in warm_cpu_ms.items():
        print(
            f"warm admission path as {user}: server CPU {figure:.1f} ms/request sequential, "
            f"{figure / baseline - 1:+.0%} vs {baseline:g} ms before issue 7 (the issue's figure)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="sequential requests per query and mode")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400, help="requests per throughput run")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="cap of every loop")
    parser.add_argument("--job", default="too-big-3x1cpu", help="a Job in team-a")
    parser.add_argument(
        "--baseline-cpu-ms",
        type=float,
        default=13.5,
        help="server CPU per warm admission-path request to compare with (issue 7's figure)",
    )
    args = parser.parse_args()
    if not (STATE / "env").is_file():
        raise SystemExit("no control plane: start it with `make cluster-up` (or `make demo`)")
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
