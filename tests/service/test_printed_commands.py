"""Every `kubectl` / `kubectl kueue` line a diagnosis prints runs, as the caller who got it
(kueuectl from Kueue v0.17.0's cmd/kueuectl, on PATH as the kubectl-kueue plugin)."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from tests.cluster import build
from tests.cluster.driver import Cluster
from tests.cluster.progress import Progress
from tests.service.conftest import Server

pytestmark = pytest.mark.cluster

QUERY = """query($namespace: String!, $name: String!) {
  diagnose(namespace: $namespace, kind: "job", name: $name) { commands }
}"""


@pytest.fixture(scope="module")
def plugin_path(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    kueuectl = build.ensure_built(build.KUEUECTL, Progress()) / "kueuectl"
    directory = tmp_path_factory.mktemp("bin")
    (directory / "kubectl-kueue").symlink_to(kueuectl)
    (directory / "kubectl").symlink_to(cluster.kubectl_bin)
    return f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"


def team_a_jobs(cluster: Cluster) -> list[str]:
    listed = cluster.kubectl("get", "jobs", "-n", "team-a", "-o", "name").stdout.split()
    return [name.split("/", 1)[1] for name in listed]


def run_as(
    cluster: Cluster, user: str, argv: list[str], plugin_path: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": plugin_path, "KUBECONFIG": str(cluster.kubeconfig(user))}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("user", ["alice", "viewer"])
async def test_every_printed_command_runs_as_the_caller(
    server: Server, cluster: Cluster, plugin_path: str, user: str
) -> None:
    failures, ran = [], 0
    for job in team_a_jobs(cluster):
        body = await server.query(
            QUERY, {"namespace": "team-a", "name": job}, token=cluster.token(user)
        )
        diagnosis = (body.get("data") or {}).get("diagnose")
        if diagnosis is None:
            continue
        for command in diagnosis["commands"]:
            argv = shlex.split(command)
            assert argv[0] == "kubectl", command
            result = run_as(cluster, user, argv, plugin_path)
            ran += 1
            if result.returncode != 0:
                failures.append(f"{job}: {command}: {result.stderr.strip()[:200]}")
    assert ran > 10
    assert failures == []
