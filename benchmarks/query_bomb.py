"""Query bombs against the real server: server CPU per refusal, apiCalls, and how long a
concurrent `/healthz` waits while the bombs arrive.

Needs the test control plane running (`make cluster-up`). Run by hand or `make bench-bomb`; it
prints figures and asserts nothing:

    uv run python benchmarks/query_bomb.py [--repeats 30] [--seconds 2] [--senders 2]

It starts `kueue-graphql serve` (its defaults, token-review mode, as the service's
ServiceAccount) as a subprocess on a free loopback port and sends issue 8's documents:

- the fragment fan-out (`fragment Fi on Viewer { ...Fi-1 ...Fi-1 ...Fi-1 ...Fi-1 }`) at 12, 20
  and 40 levels: 4^levels fields once expanded; 4^12 walks took 42.7 s of CPU before the fix;
- the same fan-out with two aliases in its innermost fragment (aliases expanded 2 x 4^12);
- a flat alias bomb (600 aliases of one field) and a field bomb (1,900 repeats of one field:
  quadratic work for graphql-core's OverlappingFieldsCanBeMerged), both inside the token limit;
- a 600-level selection nesting (the parser's recursion);
- as the ideal client: `{ __typename }`, which the server answers without any API call.

Each is sent with `Authorization: Bearer anything` (refused before the token is reviewed) and
with viewer's valid token. Every request carries a unique comment, so the parse and validation
caches never answer it (an attacker would vary the text too); `repeat` rows send one text again
and again (the cached refusal).

Printed per document and token: the answer (HTTP status, extensions.code, apiCalls), the
server's CPU per request (user + system time of the server process, /proc/<pid>/stat, over
`--repeats` sequential requests; the clock tick is 10 ms, hence the repeats), and the ratio to
the ideal client's. Then `/healthz` probed every 5 ms from a thread of this process while
`--senders` concurrent clients send one bomb after another for `--seconds`: the probe latency
p50 and max, against the same probes with no load and with the ideal client's load. Targets
(issue 8): < 100 ms CPU per refusal, no probe delayed more than 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import itertools
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".cluster"

sys.path.insert(0, str(ROOT))
from tests.unit.test_query_cost import fan_out  # noqa: E402 -- the document the tests send


def alias_fan_out(levels: int) -> str:
    """The fan-out with two aliased fields in its innermost fragment."""
    return fan_out(levels).replace(
        "fragment F0 on Viewer { username }", "fragment F0 on Viewer { a: username b: username }"
    )


def alias_bomb(count: int) -> str:
    return "{ viewer { " + " ".join(f"a{i}: username" for i in range(count)) + " } }"


def field_bomb(count: int) -> str:
    return "{ viewer { " + "username " * count + "} }"


def nesting_bomb(levels: int) -> str:
    return "{ " + "viewer { " * levels + "username" + " }" * levels + " }"


IDEAL = "{ __typename }"


@dataclass(frozen=True)
class Document:
    label: str
    text: str


def documents() -> list[Document]:
    return [
        Document("ideal {__typename}", IDEAL),
        *(Document(f"fan-out {n} levels", fan_out(n)) for n in (12, 20, 40)),
        Document("alias fan-out 12", alias_fan_out(12)),
        Document("600 aliases", alias_bomb(600)),
        Document("1,900 same fields", field_bomb(1900)),
        Document("600-level nesting", nesting_bomb(600)),
    ]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (/proc/<pid>/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def token(user: str) -> str:
    return (STATE / "users" / f"{user}.token").read_text().strip()


@contextmanager
def server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`kueue-graphql serve` with its defaults, as the service's ServiceAccount."""
    port = free_port()
    command = [
        str(Path(sys.executable).with_name("kueue-graphql")),
        "serve",
        "--kubeconfig",
        str(STATE / "users" / "kueue-graphql-server.kubeconfig"),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, cwd=ROOT)
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


_unique = itertools.count()


def unique(text: str) -> str:
    """The same document under a text the caches have not seen (a comment is not a token)."""
    return f"# {next(_unique)}\n{text}"


def answer(response: httpx.Response) -> str:
    try:
        body: dict[str, Any] = response.json()
    except ValueError:
        return f"HTTP {response.status_code} (not JSON)"
    errors = body.get("errors") or []
    code = (errors[0].get("extensions") or {}).get("code") if errors else "OK"
    calls = (body.get("extensions") or {}).get("apiCalls", "-")
    return f"{response.status_code} {code} apiCalls={calls}"


async def cpu_per_request(
    http: httpx.AsyncClient, pid: int, text: str, bearer: str, repeats: int, *, fresh: bool
) -> tuple[float, str]:
    """Server CPU seconds per request over `repeats` sequential requests, and the answers."""
    headers = {"Authorization": f"Bearer {bearer}"}
    seen: set[str] = set()
    await http.post("/graphql", json={"query": text}, headers=headers)  # connection, cache
    before = cpu_seconds(pid)
    for _ in range(repeats):
        response = await http.post(
            "/graphql", json={"query": unique(text) if fresh else text}, headers=headers
        )
        seen.add(answer(response))
    return (cpu_seconds(pid) - before) / repeats, " | ".join(sorted(seen))


class Prober(threading.Thread):
    """GET /healthz every 5 ms over one kept-alive connection; records each latency."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=10)
        self.latencies: list[float] = []
        self.stopping = threading.Event()
        self.failures = 0

    def run(self) -> None:
        next_probe = time.perf_counter()
        while not self.stopping.is_set():
            started = time.perf_counter()
            try:
                self.connection.request("GET", "/healthz")
                response = self.connection.getresponse()
                response.read()
                if response.status != 200:
                    self.failures += 1
            except (OSError, http.client.HTTPException):
                self.failures += 1
                self.connection.close()
            self.latencies.append(time.perf_counter() - started)
            next_probe += 0.005
            time.sleep(max(0.0, next_probe - time.perf_counter()))

    def stop(self) -> list[float]:
        self.stopping.set()
        self.join()
        self.connection.close()
        return self.latencies


async def probed(
    url: str, seconds: float, load: Callable[[], Awaitable[object]] | None = None, senders: int = 1
) -> tuple[list[float], int]:
    """Probe latencies over `seconds`, while `senders` concurrent loops call `load` until the
    time is up (or with no load), and how many loads were sent."""
    prober = Prober(url)
    prober.start()
    deadline = time.perf_counter() + seconds
    sent = 0
    if load is not None:

        async def sender() -> None:
            nonlocal sent
            while time.perf_counter() < deadline:
                await load()
                sent += 1

        await asyncio.gather(*(sender() for _ in range(senders)))
    else:
        await asyncio.sleep(seconds)
    return prober.stop(), sent


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f}"


async def measure(args: argparse.Namespace) -> None:
    valid = token("viewer")
    bearers = {"anything": "anything", "viewer": valid}
    with server() as (url, process):
        pid = process.pid
        print(
            f"kueue-graphql serve (pid {pid}), defaults; {args.repeats} sequential requests per "
            "row, each under a new text unless `repeat`; CPU = server user+system time"
        )
        print(f"{'document':20} {'token':9} {'text':6} {'CPU ms/req':>10} {'x ideal':>8}  answer")
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            ideal: dict[str, float] = {}
            worst = 0.0
            for document in documents():
                for name, bearer in bearers.items():
                    for fresh in (True, False):
                        cpu, seen = await cpu_per_request(
                            http, pid, document.text, bearer, args.repeats, fresh=fresh
                        )
                        key = f"{name}/{fresh}"
                        if document.text == IDEAL:
                            ideal[key] = cpu
                        elif fresh:
                            worst = max(worst, cpu)
                        ratio = cpu / ideal[key] if ideal.get(key) else float("nan")
                        print(
                            f"{document.label:20} {name:9} {'new' if fresh else 'repeat':6} "
                            f"{cpu * 1000:10.2f} {ratio:8.1f}  {seen}"
                        )
            print(f"\nworst CPU per refusal (new texts): {worst * 1000:.2f} ms (target < 100 ms)")

            print(
                f"\n/healthz every 5 ms for {args.seconds:g} s per row, while {args.senders} "
                "concurrent clients send the document again and again (new text each time)"
            )
            print(
                f"{'load':20} {'token':9} {'sent':>6} {'probes':>6} {'p50 ms':>7} {'max ms':>7}"
                f" {'max/idle max':>12}"
            )
            idle, _ = await probed(url, args.seconds)
            idle_max = max(idle)
            print(
                f"{'no load':20} {'-':9} {0:6} {len(idle):6} {ms(statistics.median(idle))} "
                f"{ms(idle_max)} {1.0:12.1f}"
            )
            worst_probe = 0.0
            for document in documents():
                for name, bearer in bearers.items():
                    if name == "viewer" and document.text != IDEAL and not args.both_tokens:
                        continue
                    headers = {"Authorization": f"Bearer {bearer}"}

                    async def send(text: str = document.text, headers: Any = headers) -> None:
                        await http.post("/graphql", json={"query": unique(text)}, headers=headers)

                    latencies, sent = await probed(url, args.seconds, send, args.senders)
                    top = max(latencies)
                    if document.text != IDEAL:
                        worst_probe = max(worst_probe, top)
                    print(
                        f"{document.label:20} {name:9} {sent:6} {len(latencies):6} "
                        f"{ms(statistics.median(latencies))} {ms(top)} {top / idle_max:12.1f}"
                    )
            print(
                f"\nlongest /healthz during the bombs: {worst_probe * 1000:.1f} ms "
                f"(no load: {idle_max * 1000:.1f} ms; target < 50 ms)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="requests per CPU row")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each probe row")
    parser.add_argument("--senders", type=int, default=2, help="concurrent bomb senders")
    parser.add_argument(
        "--both-tokens", action="store_true", help="probe rows with viewer's token as well"
    )
    args = parser.parse_args()
    if not (STATE / "env").is_file():
        raise SystemExit("no control plane: start it with `make cluster-up`")
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
