"""The oracle for whatIf(fromJob) on a JobSet: ask it (as viewer, who may read the ClusterQueues)
about a JobSet Kueue does not manage (no queue name, suspended), then submit the same JobSet with
the queue name and let the real Kueue v0.17.0 decide. Asserted: the pod sets (one per replicated
job, replicas x min(parallelism, completions)) equal the Workload's, and the verdict, the flavor
or Kueue's exact QuotaReserved=False message agree. Needs the JobSet controller
(KGQL_INTEGRATIONS=jobset).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kueue_graphql.cli.render import WHAT_IF_QUERY
from tests.cluster.driver import Cluster, selected_integrations
from tests.cluster.integrations import SWITCH, started
from tests.service.conftest import Server
from tests.service.whatif_oracle import assert_agrees_with_kueue
from tests.teardown import remove, remove_pods
from tests.waiting import wait_until

if "jobset" not in {c.name for c in started(selected_integrations())}:
    pytest.skip(
        f"the JobSet controller is off: start the control plane with {SWITCH}=jobset",
        allow_module_level=True,
    )

pytestmark = pytest.mark.cluster

NS = "team-a"
IMAGE = "registry.invalid/kueue-graphql/sleep:never-pulled"
LABEL_KEY = "kueue-graphql.example/test"
LABEL_VALUE = "whatif-jobset-oracle"


def _replicated(
    name: str, replicas: int, parallelism: int, completions: int, cpu: str, pool: str = "standard"
) -> Any:
    resources = {"cpu": cpu, "memory": "64Mi"}
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": parallelism,
                "completions": completions,
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": {"kueue-graphql.example/pool": pool},
                        "containers": [
                            {
                                "name": "main",
                                "image": IMAGE,
                                "resources": {"requests": resources, "limits": resources},
                            }
                        ],
                    }
                },
            }
        },
    }


def _job_set(name: str, queue: str | None, replicated: list[Any]) -> dict[str, Any]:
    labels = {LABEL_KEY: LABEL_VALUE}
    if queue:
        labels["kueue.x-k8s.io/queue-name"] = queue
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        # The unmanaged copy stays suspended: nothing of it runs.
        "spec": {"suspend": queue is None, "replicatedJobs": replicated},
    }


CASES = {
    # 1 x 1 CPU + 2 x 1 CPU = 3 CPU at once against cq-owners-2cpu's 2.
    "too-big": (
        "lq-owners-small",
        [_replicated("driver", 1, 1, 1, "1"), _replicated("workers", 2, 1, 1, "1")],
    ),
    # 1 x 1 + 2 x min(3, 2) = 5 Pods of 100m in cq-team-a: fits.
    "fits": (
        "lq-team-a",
        [_replicated("driver", 1, 1, 1, "100m"), _replicated("workers", 2, 3, 2, "100m")],
    ),
    # No flavor's node labels match either replicated job's nodeSelector.
    "no-flavor-matches": (
        "lq-team-a",
        [
            _replicated("driver", 1, 1, 1, "100m", pool="no-such-pool"),
            _replicated("workers", 2, 1, 1, "100m", pool="no-such-pool"),
        ],
    ),
}
# Kueue's message names only the first pod set without a flavor ("driver"): its assignFlavors
# returns there (flavorassigner.go). whatIf named both until it stopped there too.


@pytest.fixture
def cleanup(cluster: Cluster) -> Iterator[None]:
    yield
    selector = f"{LABEL_KEY}={LABEL_VALUE}"
    remove(cluster, "jobsets", "-n", NS, "-l", selector)
    # Their Pods (bound ones hold node-standard-1's CPU, for want of a kubelet), by force.
    remove_pods(cluster, NS, "-l", "jobset.sigs.k8s.io/jobset-name in (oracle-js-fits, "
                "oracle-js-too-big, oracle-js-no-flavor-matches)")  # fmt: skip
    wait_until(
        "the oracle's Workloads to be gone",
        lambda: not [
            w
            for w in cluster.get_json("workloads", "-n", NS)["items"]
            if w["metadata"]["name"].startswith("jobset-oracle-js-")
        ]
        or None,
    )


def _workload(cluster: Cluster, name: str) -> dict[str, Any] | None:
    uid = cluster.get_json("jobset", name, "-n", NS)["metadata"]["uid"]
    found = cluster.get_json("workloads", "-n", NS, "-l", f"kueue.x-k8s.io/job-uid={uid}")
    return found["items"][0] if found["items"] else None


def _decided(cluster: Cluster, name: str) -> dict[str, Any] | None:
    workload = _workload(cluster, name)
    for c in (workload or {}).get("status", {}).get("conditions", []):
        if c["type"] == "QuotaReserved" and (c["status"] == "True" or c.get("message")):
            return workload
    return None


@pytest.mark.parametrize("case", CASES)
async def test_what_if_from_a_jobset_agrees_with_kueue(
    server: Server, cluster: Cluster, case: str, cleanup: None
) -> None:
    queue, replicated = CASES[case]
    template = f"oracle-js-{case}-asked"
    cluster.apply_objects([_job_set(template, None, copy.deepcopy(replicated))])
    body = await server.query(
        WHAT_IF_QUERY,
        {
            "namespace": NS,
            "localQueue": queue,
            "fromJob": {"namespace": NS, "name": template, "kind": "jobset"},
        },
        token=cluster.token("viewer"),
    )
    assert "errors" not in body, body
    answer = body["data"]["whatIf"]

    submitted = f"oracle-js-{case}"
    cluster.apply_objects([_job_set(submitted, queue, copy.deepcopy(replicated))])
    workload = wait_until(f"Kueue's decision on {submitted}", lambda: _decided(cluster, submitted))
    assert_agrees_with_kueue(answer, workload)
