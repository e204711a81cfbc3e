"""The oracle for whatIf(fromJob) on a RayJob: ask it about a RayJob Kueue does not manage (no
queue name, suspended), then submit the same RayJob with the queue name and let the real Kueue
v0.17.0 decide. Asserted: the pod sets (head, each worker group as replicas x numOfHosts under
its lower-cased groupName, the K8sJobMode submitter) equal the Workload's, and the verdict, the
flavors or Kueue's exact QuotaReserved=False message agree; as viewer (who may read the
ClusterQueues) and as alice, a tenant who may not: with the quota disclosure policy off her answer
is UNKNOWN (nothing of the ClusterQueue shown), with `--quota-disclosure quota` it must agree too.

Needs KubeRay's CRDs and Kueue's ray.io/rayjob integration (KGQL_INTEGRATIONS naming kuberay).
The KubeRay operator is not started, so an admitted RayJob makes no Pod and holds no Node.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.cli.render import WHAT_IF_QUERY
from kueue_graphql.core.modes import QuotaDisclosure
from tests.cluster.driver import Cluster, selected_integrations
from tests.cluster.integrations import SWITCH
from tests.service.conftest import Server, running_server
from tests.service.whatif_oracle import assert_agrees_with_kueue
from tests.teardown import remove
from tests.waiting import wait_until

if "kuberay" not in {c.name for c in selected_integrations()}:
    pytest.skip(
        f"KubeRay's CRDs and Kueue's ray.io integrations are off: start the control plane with "
        f"{SWITCH}=jobset,kuberay",
        allow_module_level=True,
    )

pytestmark = pytest.mark.cluster

NS = "team-a"
IMAGE = "registry.invalid/kueue-graphql/ray:never-pulled"
LABEL_KEY = "kueue-graphql.example/test"
LABEL_VALUE = "whatif-rayjob-oracle"


def _pod(cpu: str, pool: str = "standard") -> Any:
    resources = {"cpu": cpu, "memory": "64Mi"}
    return {
        "spec": {
            "nodeSelector": {"kueue-graphql.example/pool": pool},
            "containers": [
                {
                    "name": "ray",
                    "image": IMAGE,
                    "resources": {"requests": resources, "limits": resources},
                }
            ],
        }
    }


def _group(name: str, replicas: int, hosts: int, cpu: str, pool: str = "standard") -> Any:
    return {
        "groupName": name,
        "replicas": replicas,
        "minReplicas": replicas,
        "maxReplicas": replicas,
        "numOfHosts": hosts,
        "rayStartParams": {},
        "template": _pod(cpu, pool),
    }


def _ray_job(name: str, queue: str | None, case: dict[str, Any]) -> dict[str, Any]:
    labels = {LABEL_KEY: LABEL_VALUE}
    if queue:
        labels["kueue.x-k8s.io/queue-name"] = queue
    spec: dict[str, Any] = {
        "entrypoint": "python -c 'print(1)'",
        "shutdownAfterJobFinishes": True,
        # The unmanaged copy stays suspended; Kueue suspends the managed one until it admits it.
        "suspend": queue is None,
        "rayClusterSpec": {
            "headGroupSpec": {"rayStartParams": {}, "template": _pod(case["head"], case["pool"])},
            "workerGroupSpecs": copy.deepcopy(case["workers"]),
        },
    }
    spec.update(copy.deepcopy(case.get("extra", {})))
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": spec,
    }


CASES: dict[str, tuple[str, dict[str, Any]]] = {
    # head 1 + 2 x 1 + the default submitter's 500m = 3.5 CPU against cq-owners-2cpu's 2.
    "too-big": (
        "lq-owners-small",
        {"head": "1", "pool": "standard", "workers": [_group("Workers", 2, 1, "1")]},
    ),
    # head 100m + 2 replicas x 2 hosts x 100m + submitter 500m in cq-team-a: fits.
    "fits": (
        "lq-team-a",
        {"head": "100m", "pool": "standard", "workers": [_group("Multi-Host", 2, 2, "100m")]},
    ),
    # HTTPMode: no submitter pod set; a custom submitter template is then not counted.
    "http-mode-fits": (
        "lq-team-a",
        {
            "head": "100m",
            "pool": "standard",
            "workers": [_group("a", 1, 1, "100m"), _group("b", 3, 1, "100m")],
            "extra": {"submissionMode": "HTTPMode"},
        },
    ),
    # No flavor's node labels match the head's nodeSelector: Kueue names the head pod set.
    "no-flavor-matches": (
        "lq-team-a",
        {"head": "100m", "pool": "no-such-pool", "workers": [_group("w", 1, 1, "100m")]},
    ),
}
USERS = ("viewer", "alice")


@pytest.fixture(scope="module")
async def disclosing(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA) as s:
        yield s


@pytest.fixture
def cleanup(cluster: Cluster) -> Iterator[None]:
    yield
    remove(cluster, "rayjobs", "-n", NS, "-l", f"{LABEL_KEY}={LABEL_VALUE}")
    wait_until(
        "the oracle's Workloads to be gone",
        lambda: not [
            w
            for w in cluster.get_json("workloads", "-n", NS)["items"]
            if w["metadata"]["name"].startswith("rayjob-oracle-rj-")
        ]
        or None,
    )


def _decided(cluster: Cluster, name: str) -> dict[str, Any] | None:
    uid = cluster.get_json("rayjob", name, "-n", NS)["metadata"]["uid"]
    found = cluster.get_json("workloads", "-n", NS, "-l", f"kueue.x-k8s.io/job-uid={uid}")
    for workload in found["items"]:
        for c in workload.get("status", {}).get("conditions", []):
            if c["type"] == "QuotaReserved" and (c["status"] == "True" or c.get("message")):
                return dict(workload)
    return None


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("case", CASES)
async def test_what_if_from_a_rayjob_agrees_with_kueue(
    server: Server, disclosing: Server, cluster: Cluster, case: str, user: str, cleanup: None
) -> None:
    queue, shape = CASES[case]
    asked = f"oracle-rj-{case}-asked"
    cluster.apply_objects([_ray_job(asked, None, shape)])
    variables = {
        "namespace": NS,
        "localQueue": queue,
        "fromJob": {"namespace": NS, "name": asked, "kind": "rayjob"},
    }
    body = await server.query(WHAT_IF_QUERY, variables, token=cluster.token(user))
    assert "errors" not in body, body
    answer = body["data"]["whatIf"]
    if user == "alice":
        # She may not read the ClusterQueue, and the policy is off: no verdict, no figures.
        assert (answer["verdict"], answer["kueueMessage"]) == ("UNKNOWN", None), answer
        body = await disclosing.query(WHAT_IF_QUERY, variables, token=cluster.token(user))
        assert "errors" not in body, body
        answer = body["data"]["whatIf"]

    submitted = f"oracle-rj-{case}"
    cluster.apply_objects([_ray_job(submitted, queue, shape)])
    workload = wait_until(f"Kueue's decision on {submitted}", lambda: _decided(cluster, submitted))
    assert_agrees_with_kueue(answer, workload)
