"""`kueue-graphql fits` and `kueue-graphql why --what-if`, run as a user runs them, against the
real server (--server, alice's token; the server with --quota-disclosure quota) and in-process
with a kubeconfig. The CLI's --json answer must be the server's own answer to the same query."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kueue_graphql.cli.render import WHAT_IF_QUERY
from kueue_graphql.core.modes import QuotaDisclosure
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
async def disclosing(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA) as s:
        yield s


async def cli(*args: str, kubeconfig: Path | None = None) -> tuple[int, str, str]:
    """The CLI in its own process (the server under test shares this event loop)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUEUE_GRAPHQL_")}
    env.pop("KUBECONFIG", None)
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kueue_graphql.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def remote(server: Server, cluster: Cluster, user: str = "alice") -> list[str]:
    return ["--server", server.url, "--token", cluster.token(user)]


async def test_fits_never_fits_with_the_policy(disclosing: Server, cluster: Cluster) -> None:
    code, out, err = await cli(
        "fits", "lq-small", "-n", "team-a", "--pods", "3", "--cpu", "1",
        *remote(disclosing, cluster),
    )  # fmt: skip
    assert code == 4, (out, err)
    assert out.startswith("NEVER_FITS: never fits: needs 3 cpu at once in flavor standard")
    assert "figures from DISCLOSURE_POLICY" in out
    assert "maximum capacity (2)" in out
    assert "Ask for at most 2 cpu at once" in out


async def test_fits_now_names_the_flavor(disclosing: Server, cluster: Cluster) -> None:
    code, out, err = await cli(
        "fits", "lq-team-a", "-n", "team-a", "--pods", "2", "--cpu", "500m", "--memory", "1Gi",
        *remote(disclosing, cluster),
    )  # fmt: skip
    assert code == 0, (out, err)
    assert out.startswith("FITS_NOW: fits now in ClusterQueue cq-team-a")
    assert "cpu, memory: flavor standard, FITS_NOW" in out


async def test_fits_json_is_the_servers_answer(disclosing: Server, cluster: Cluster) -> None:
    code, out, _ = await cli(
        "fits", "lq-gpu", "-n", "team-a", "--pods", "1", "--cpu", "1", "--gpu", "1",
        "--gpu-resource", "example.com/gpu", "--json", *remote(disclosing, cluster),
    )  # fmt: skip
    assert code == 0
    pod_set = {
        "name": "main",
        "count": 1,
        "requests": [
            {"resource": "cpu", "quantity": "1"},
            {"resource": "example.com/gpu", "quantity": "1"},
        ],
        "nodeSelector": [],
        "tolerations": [],
    }
    direct = await disclosing.query(
        WHAT_IF_QUERY,
        {"namespace": "team-a", "localQueue": "lq-gpu", "podSets": [pod_set]},
        token=cluster.token("alice"),
    )
    assert json.loads(out)["data"] == direct["data"]


async def test_why_what_if_from_an_existing_job(disclosing: Server, cluster: Cluster) -> None:
    code, out, err = await cli(
        "why", "--what-if", "-n", "team-a", "no-spot-toleration", *remote(disclosing, cluster)
    )
    assert code == 4, (out, err)
    assert "FLAVOR_TAINT" in out
    assert "untolerated taint {kueue-graphql.example/spot true NoSchedule <nil>}" in out
    assert "spec.template.spec.tolerations" in out
    # The same Job in another LocalQueue (--local-queue): it fits there.
    code, out, _ = await cli(
        "why", "--what-if", "-n", "team-a", "no-spot-toleration", "--local-queue", "lq-team-a",
        *remote(disclosing, cluster),
    )  # fmt: skip
    assert code == 0
    assert out.startswith("FITS_NOW")


async def test_another_namespace_is_forbidden(disclosing: Server, cluster: Cluster) -> None:
    code, out, err = await cli(
        "fits", "lq-team-b", "-n", "team-b", "--cpu", "1", *remote(disclosing, cluster)
    )
    assert code == 1
    assert "forbidden" in err
    assert "cq-team-b" not in out + err


async def test_in_process_reads_as_the_kubeconfig(cluster: Cluster) -> None:
    # No server: the policy cannot apply, so alice gets the verdict UNKNOWN without figures
    # and viewer, who may read the ClusterQueue, gets the answer.
    args = ("fits", "lq-small", "-n", "team-a", "--pods", "3", "--cpu", "1")
    code, out, _ = await cli(*args, kubeconfig=cluster.kubeconfig("alice"))
    assert code == 5
    assert "figures from NONE" in out
    code, out, _ = await cli(*args, kubeconfig=cluster.kubeconfig("viewer"))
    assert code == 4
    assert "figures from CALLER_RBAC" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pods", "0", "--cpu", "1"], "--pods must be at least 1"),
        (["--request", "cpu"], "give RESOURCE=QUANTITY"),
        ([], "give what each Pod requests"),
        (["--cpu", "1", "--node-selector", "pool"], "give KEY=VALUE"),
    ],
)
async def test_bad_usage_exits_2_before_any_call(args: list[str], message: str) -> None:
    # An unreachable server: any attempt to ask it would fail differently.
    code, _, err = await cli("fits", "lq-small", "-n", "team-a", *args,
                             "--server", "http://127.0.0.1:9")  # fmt: skip
    assert code == 2
    assert message in err


async def test_fits_priority_class(disclosing: Server, cluster: Cluster) -> None:
    """cq-preemption (withinClusterQueue: LowerPriority) is full with the scenario's
    high-priority Job: another of the same priority waits and preempts nothing (Kueue left the
    low-priority victim pending, not the other way round); an unknown class is NOT_FOUND."""
    code, out, err = await cli(
        "fits", "lq-preemption", "-n", "team-a", "--cpu", "1", "--priority-class",
        "high-priority", *remote(disclosing, cluster),
    )  # fmt: skip
    assert code == 3, (out, err)
    assert "priority 1000 (class high-priority)" in out
    assert "preempting" not in out
    code, out, _ = await cli(
        "fits", "lq-preemption", "-n", "team-a", "--cpu", "1", "--priority-class",
        "high-priority", "--json", *remote(disclosing, cluster),
    )  # fmt: skip
    answer = json.loads(out)["data"]["whatIf"]
    assert (answer["priority"], answer["priorityClass"], answer["preempts"]) == (
        1000,
        "high-priority",
        0,
    )
    code, out, err = await cli(
        "fits", "lq-preemption", "-n", "team-a", "--cpu", "1", "--priority-class", "no-such",
        *remote(disclosing, cluster),
    )  # fmt: skip
    assert code == 1, (out, err)
    assert "no-such" in err
    assert "not found" in err
