"""Server CPU per warm admission-path request: this tree against a baseline commit, same run.

Needs the test control plane running (`make cluster-up`). Run by hand or `make bench-cpu`;
it prints figures and asserts nothing:

    uv run python benchmarks/cpu_vs_baseline.py [--baseline-ref f28c6d6] [--rounds 10]
        [--batch 40] [--users alice,viewer]

Issue 7 asks for impersonate mode's server CPU per warm admission-path query to be at least
40% below "today's", the code when the issue was filed: commit f28c6d6 (the last commit before
the issue's work; the CPU levers of its item 5 - limiter rules built once, `trust_env` off,
uvloop/httptools - came after it). Figures from separate runs on this shared 2-core machine
differ by more than that between rounds, so both servers are measured in the same run:

- the baseline is checked out into a temporary git worktree (`git worktree add --detach`,
  under the system temp directory, reused across runs) with its own locked environment
  (`uv sync --frozen` there);
- both `kueue-graphql serve` processes (the baseline's and this tree's, each with the defaults
  of its own `serve`, impersonate mode) run side by side as the service's ServiceAccount against
  the same control plane;
- after a warm-up (20 requests per user and server: connections, TokenReview and access-decision
  caches, parse caches), each round sends `--batch` sequential requests per user to one server,
  then to the other (the order alternates every round), and reads that server's user+system CPU
  from /proc/<pid>/stat before and after its batch;
- it prints per round and in total the CPU per request, the p50 latency, and the reduction
  (1 - this tree / baseline), and the load average at the start and the end.

The query is `make bench`'s admission path (`workloadFor` on team-a's too-big-3x1cpu Job: the
Workload, its LocalQueue, ClusterQueue and Cohort, the Job's Pods and the Events); alice, who may
not read the ClusterQueue, selects its name only. Both servers must answer without errors; the
data of their answers is compared once and any difference is printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from admission_path import (
    ADMISSION_PATH,
    ADMISSION_PATH_TENANT,
    ROOT,
    STATE,
    cpu_seconds,
    percentile,
    token,
)
from launch import free_port, launched

QUERIES = {"alice": ADMISSION_PATH_TENANT, "viewer": ADMISSION_PATH}
VARIABLES = {"ns": "team-a", "job": "too-big-3x1cpu"}
KUBECONFIG = STATE / "users" / "kueue-graphql-server.kubeconfig"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def baseline_tree(ref: str) -> tuple[Path, str]:
    """A worktree of `ref` with its own locked environment (made once, then reused)."""
    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}")
    tree = Path(tempfile.gettempdir()) / f"kueue-graphql-baseline-{commit[:12]}"
    if not (tree / ".git").exists():
        print(f"checking out {ref} ({commit[:12]}) into {tree}", flush=True)
        git("worktree", "add", "--detach", str(tree), commit)
    executable = tree / ".venv" / "bin" / "kueue-graphql"
    if not executable.is_file():
        print(f"uv sync --frozen in {tree}", flush=True)
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        subprocess.run(["uv", "sync", "--frozen", "--quiet"], cwd=tree, env=env, check=True)
    return tree, commit


@contextmanager
def server(label: str, tree: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [str(tree / ".venv" / "bin" / "kueue-graphql"), "serve"]
    command += ["--kubeconfig", str(KUBECONFIG), "--port", str(port), "--log-level", "warning"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUEUE_GRAPHQL_")}
    env.pop("VIRTUAL_ENV", None)
    what = f"the {label} server"
    with launched(command, port, ready_seconds=120, cwd=tree, env=env, what=what) as started:
        url, process, _ = started
        print(f"  {label} server ready (pid {process.pid}, {tree})", flush=True)
        yield url, process


@dataclass
class Tally:
    cpu: float = 0.0
    requests: int = 0
    seconds: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.requests * 1000 if self.requests else float("nan")


class Target:
    def __init__(self, label: str, url: str, pid: int, users: list[str]) -> None:
        self.label = label
        self.pid = pid
        self.http = httpx.Client(base_url=url, timeout=60)
        self.headers = {u: {"Authorization": f"Bearer {token(u)}"} for u in users}
        self.users = users

    def ask(self, user: str, tally: Tally | None = None) -> dict[str, Any]:
        payload = {"query": QUERIES[user], "variables": VARIABLES}
        started = time.perf_counter()
        response = self.http.post("/graphql", json=payload, headers=self.headers[user])
        elapsed = time.perf_counter() - started
        body: dict[str, Any] = response.json()
        if tally is not None:
            tally.seconds.append(elapsed)
            if response.status_code != 200 or body.get("errors"):
                error = (body.get("errors") or [{}])[0]
                code = (error.get("extensions") or {}).get("code")
                tally.failures.append(f"{user}: {code}: {error.get('message')}")
        return body

    def batch(self, size: int) -> Tally:
        tally = Tally()
        before = cpu_seconds(self.pid)
        for _ in range(size):
            for user in self.users:
                self.ask(user, tally)
        tally.cpu = cpu_seconds(self.pid) - before
        tally.requests = size * len(self.users)
        return tally


def merge(into: Tally, part: Tally) -> None:
    into.cpu += part.cpu
    into.requests += part.requests
    into.seconds += part.seconds
    into.failures += part.failures


def compare_answers(baseline: Target, ours: Target) -> None:
    for user in baseline.users:
        a, b = baseline.ask(user), ours.ask(user)
        for label, body in ((baseline.label, a), (ours.label, b)):
            if body.get("errors"):
                raise SystemExit(f"{label} answered {user} with errors: {body['errors'][:1]}")
        same = a.get("data") == b.get("data")
        print(f"  {user}: same data from both servers: {'yes' if same else 'NO'}")
        if not same:
            print(f"    baseline: {a.get('data')}\n    ours:     {b.get('data')}")


def run(args: argparse.Namespace) -> None:
    users = [u.strip() for u in args.users.split(",") if u.strip()]
    tree, commit = baseline_tree(args.baseline_ref)
    head = git("rev-parse", "--short=12", "HEAD")
    dirty = (
        " (with uncommitted changes)"
        if git("status", "--porcelain", "--untracked-files=no")
        else ""
    )
    print(
        f"server CPU per warm admission-path request, impersonate mode: this tree ({head}{dirty}) "
        f"vs baseline {args.baseline_ref} ({commit[:12]}); users {users}; {args.rounds} rounds x "
        f"{args.batch} sequential requests per user and server, alternating; load average "
        f"{load()} at the start",
        flush=True,
    )
    with ExitStack() as stack:
        base_url, base_proc = stack.enter_context(server("baseline", tree))
        our_url, our_proc = stack.enter_context(server("this tree", ROOT))
        baseline = Target("baseline", base_url, base_proc.pid, users)
        ours = Target("this tree", our_url, our_proc.pid, users)
        compare_answers(baseline, ours)
        for target in (baseline, ours):
            for _ in range(args.warmup):
                for user in users:
                    target.ask(user)
        totals = {baseline.label: Tally(), ours.label: Tally()}
        print(f"\n{'round':>5} {'baseline ms':>12} {'this tree ms':>13} {'reduction':>10}  load")
        for index in range(args.rounds):
            order = (baseline, ours) if index % 2 == 0 else (ours, baseline)
            parts = {t.label: t.batch(args.batch) for t in order}
            for label, part in parts.items():
                merge(totals[label], part)
            a, b = parts[baseline.label].cpu_ms, parts[ours.label].cpu_ms
            print(f"{index + 1:5} {a:12.2f} {b:13.2f} {1 - b / a:10.0%}  {load()}", flush=True)
        a_total, b_total = totals[baseline.label], totals[ours.label]
        print(f"\n{'':10} {'requests':>8} {'CPU ms/request':>15} {'p50 ms':>7} {'p95 ms':>7}")
        for label, tally in totals.items():
            line = (
                f"{label:10} {tally.requests:8} {tally.cpu_ms:15.2f} "
                f"{percentile(tally.seconds, 50) * 1000:7.1f} "
                f"{percentile(tally.seconds, 95) * 1000:7.1f}"
            )
            if tally.failures:
                line += f"   {len(tally.failures)} failed, e.g. {tally.failures[0][:120]}"
            print(line)
        print(
            f"\nserver CPU per warm admission-path request: {b_total.cpu_ms:.2f} ms vs "
            f"{a_total.cpu_ms:.2f} ms at {args.baseline_ref}: "
            f"{1 - b_total.cpu_ms / a_total.cpu_ms:.0%} lower (issue 7 asks >= 40%); "
            f"load average {load()} at the end"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-ref", default="f28c6d6", help="git commit to compare with")
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds")
    parser.add_argument("--batch", type=int, default=40, help="requests per user, server, round")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up requests per user")
    parser.add_argument("--users", default="alice,viewer", help="comma-separated (alice, viewer)")
    args = parser.parse_args()
    if not (STATE / "env").is_file():
        raise SystemExit("no control plane: start it with `make cluster-up` (or `make demo`)")
    if not KUBECONFIG.is_file():
        raise SystemExit(f"{KUBECONFIG} is missing: restart the control plane (make cluster-up)")
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    run(args)


if __name__ == "__main__":
    main()
