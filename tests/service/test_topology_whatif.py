"""whatIf with topology-aware scheduling (TAS), checked against the real Kueue (issue 23 item 4).

The setting of tests/service/topology_setting.py (six 4-cpu Nodes in racks r1, r2 of block b1
and r3 of block b2, a plain Pod of 3 cpu on tas-r2-n1), made and removed here. Scenario by
scenario, whatIf is asked (in both read modes) for a Job that does not exist yet (its pod set
as `podSets`, with the topology its template will ask), as viewer (may list Nodes, Pods and
Workloads: names) and as alice (her namespace only: the verdict and Kueue's message, no
domain or Node name, from a server whose quota disclosure policy is on and whose
ServiceAccount may list those kinds);
then the same Job is submitted and what Kueue does (admitted or not, the topologyAssignment,
its message) is compared with the prediction:

1. `fits`: 3 Pods, required rack: admitted in rack r1 (best fit: r1 and r3 have room for 4);
2. `sliced`: 4 Pods in one block, slices of 2 each in one rack: b2 (r1 has room for 1 now);
3. `spread`: 3 Pods, preferred rack: no rack has room for 3, Kueue falls back to block b1;
4. `wait`: 4 Pods, required rack: no room now (every rack full), room once the admitted
   TAS Workloads go: pending, must wait;
5. `too-big`: 5 Pods, required rack: no rack has room for 5 even empty: never fits.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.http import ReadMode
from kueue_graphql.kueue.topology import decode_assignment
from tests.cluster.driver import Cluster
from tests.diagnosis.own_objects import apply
from tests.service import topology_setting as setting
from tests.service.conftest import Server, running_server, server_in_mode
from tests.teardown import remove
from tests.waiting import SETTLE_SECONDS, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.changes_nodes]

WHAT_IF = """
query Q($ns: String!, $lq: String!, $pods: [WhatIfPodSetInput!]!) {
  whatIf(namespace: $ns, localQueue: $lq, podSets: $pods) {
    verdict limitedBy summary kueueMessage nextSteps
    podSets { name topology {
      verdict flavor topology mode level placedAt domains kueueMessage fitting wanted why
      topologyAssignment { levels domains { values count } } } }
  }
}
"""

MODES = ("impersonate", "cache")
ROLE = "kgql-test-tas-whatif-service"
ALICE_ROLE = "kgql-test-tas-whatif-alice"
SERVICE_ACCOUNTS = ("kueue-graphql", "kueue-graphql-cache")


def _service_rbac() -> list[Any]:
    """What the service reads for a tenant's TAS verdict (docs/service.md, quota disclosure)."""
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": ROLE, "labels": setting.LABELS},
         "rules": [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]},
                   {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "topologies"],
                    "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": ROLE, "labels": setting.LABELS},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": ROLE},
         "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "kueue-graphql"}
                      for sa in SERVICE_ACCOUNTS]},
        # whatIf reads the Namespace's labels as the caller for the namespaceSelector.
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": ALICE_ROLE, "labels": setting.LABELS},
         "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"],
                    "resourceNames": [setting.NS]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": ALICE_ROLE, "labels": setting.LABELS},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": ALICE_ROLE},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                       "name": "alice"}]},
    ]  # fmt: skip


@dataclass(frozen=True)
class Scenario:
    job: str
    pods: int
    topology: dict[str, Any]
    annotations: dict[str, str]
    admitted: bool


SCENARIOS = [
    Scenario("fits", 3, {"required": setting.RACK}, {setting.REQUIRED: setting.RACK}, True),
    Scenario(
        "sliced",
        4,
        {"required": setting.BLOCK, "sliceRequired": setting.RACK, "sliceSize": 2},
        {
            setting.REQUIRED: setting.BLOCK,
            "kueue.x-k8s.io/podset-slice-required-topology": setting.RACK,
            "kueue.x-k8s.io/podset-slice-size": "2",
        },
        True,
    ),
    Scenario("spread", 3, {"preferred": setting.RACK}, {setting.PREFERRED: setting.RACK}, True),
    Scenario("wait", 4, {"required": setting.RACK}, {setting.REQUIRED: setting.RACK}, False),
    Scenario("too-big", 5, {"required": setting.RACK}, {setting.REQUIRED: setting.RACK}, False),
]


@dataclass
class Observed:
    """Per scenario: whatIf's answer per user, and the Workload Kueue made of the Job."""

    answers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """{job: {"<user>@<read mode>": whatIf's answer}}."""
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)


def _job(s: Scenario) -> dict[str, Any]:
    made = setting.job(s.job, s.pods, setting.REQUIRED, setting.RACK)
    made["spec"]["template"]["metadata"]["annotations"] = dict(s.annotations)
    return made


def _settled(cluster: Cluster, s: Scenario) -> dict[str, Any]:
    """Kueue's verdict on the scenario's Job: admitted with every Pod bound, or a TAS
    message on QuotaReserved=False."""
    found: dict[str, Any] = {}

    def done() -> bool:
        wl = setting.workload_of(cluster, s.job)
        reserved = setting.condition(wl, "QuotaReserved")
        if (
            reserved.get("status") == "True"
            and setting.condition(wl, "Admitted").get("status") == "True"
        ):
            listed = cluster.get_json("pods", "-n", setting.NS, "-l", f"job-name={s.job}")["items"]
            bound = len(listed) == s.pods and all(p["spec"].get("nodeName") for p in listed)
            if bound:
                found.update(wl or {})
            return bound
        if reserved.get("status") == "False" and 'topology "' in str(reserved.get("message")):
            found.update(wl or {})
            return True
        return False

    wait_until(f"Kueue's verdict on Job {s.job}", done, SETTLE_SECONDS, interval=1)
    return found


async def _what_if(server: Server, cluster: Cluster, s: Scenario, user: str) -> dict[str, Any]:
    pods = [{"name": "main", "count": s.pods, "requests": [{"resource": "cpu", "quantity": "2"}],
             "topology": s.topology}]  # fmt: skip
    body = await server.query(
        WHAT_IF, {"ns": setting.NS, "lq": setting.LQ, "pods": pods}, token=cluster.token(user)
    )
    assert "errors" not in body, body
    return dict(body["data"]["whatIf"])


def _clean_up(cluster: Cluster) -> None:
    setting.clean_up(cluster)
    for name in (ROLE, ALICE_ROLE):
        remove(cluster, "clusterrolebinding", name)
        remove(cluster, "clusterrole", name)


@pytest.fixture(scope="module")
async def observed(cluster: Cluster, service_kubeconfig: Any) -> AsyncIterator[Observed]:
    await asyncio.to_thread(_clean_up, cluster)  # what an interrupted earlier run left
    try:
        await asyncio.to_thread(setting.set_up, cluster)
        await asyncio.to_thread(apply, cluster, [setting.NON_TAS_POD, *_service_rbac()])
        seen = Observed()
        async with (
            running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.VERDICT) as direct,
            server_in_mode(
                cluster, ReadMode.CACHE, quota_disclosure=QuotaDisclosure.VERDICT
            ) as cached,
        ):
            servers = {"impersonate": direct, "cache": cached}
            for s in SCENARIOS:
                seen.answers[s.job] = {
                    f"{user}@{mode}": await _what_if(server, cluster, s, user)
                    for mode, server in servers.items()
                    for user in ("viewer", "alice")
                }
                await asyncio.to_thread(apply, cluster, [_job(s)])
                seen.workloads[s.job] = await asyncio.to_thread(_settled, cluster, s)
        yield seen
    finally:
        await asyncio.to_thread(_clean_up, cluster)


def _racks(cluster: Cluster) -> dict[str, str]:
    nodes = cluster.get_json("nodes", "-l", "kueue-graphql.example/test=topology")["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"][setting.RACK] for n in nodes}


def _kueue_assignment(wl: dict[str, Any]) -> dict[str, Any] | None:
    admission = (wl.get("status") or {}).get("admission")
    if not admission:
        return None
    decoded = decode_assignment(admission["podSetAssignments"][0].get("topologyAssignment"))
    assert decoded is not None
    return {
        "levels": list(decoded.levels),
        "domains": [{"values": list(d.values), "count": d.count} for d in decoded.domains],
    }


def _kueue_message(wl: dict[str, Any]) -> str | None:
    reserved = setting.condition(wl, "QuotaReserved")
    return None if reserved.get("status") == "True" else str(reserved.get("message"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.job for s in SCENARIOS])
def test_viewer_gets_kueues_verdict_and_domain(
    observed: Observed, cluster: Cluster, scenario: Scenario, mode: str
) -> None:
    answer = observed.answers[scenario.job][f"viewer@{mode}"]
    wl = observed.workloads[scenario.job]
    [podset] = answer["podSets"]
    placed = podset["topology"]
    assert (placed["flavor"], placed["topology"]) == (setting.FLAVOR, setting.TOPOLOGY)
    # Admitted or not, as Kueue did; where admitted, exactly Kueue's Pods per Node.
    assert (answer["verdict"] == "FITS_NOW") is scenario.admitted, answer
    assert placed["topologyAssignment"] == _kueue_assignment(wl), (answer, wl.get("status"))
    assert answer["kueueMessage"] == _kueue_message(wl)
    if scenario.admitted:
        racks = _racks(cluster)
        used = {racks[d["values"][0]] for d in placed["topologyAssignment"]["domains"]}
        names = {d[-1] for d in placed["domains"]}
        at_rack = placed["placedAt"] == setting.RACK
        assert names == (used if at_rack else {setting.RACKS[r] for r in used})


def test_the_scenarios_place_where_the_docstring_says(observed: Observed) -> None:
    """The setting does what the module promises (so each scenario tests what it names)."""
    viewer = {
        job: a["viewer@impersonate"]["podSets"][0]["topology"]
        for job, a in observed.answers.items()
    }
    assert (viewer["fits"]["placedAt"], viewer["fits"]["domains"]) == (setting.RACK, [["b1", "r1"]])
    assert (viewer["sliced"]["placedAt"], viewer["sliced"]["domains"]) == (setting.BLOCK, [["b2"]])
    assert viewer["spread"]["placedAt"] == setting.BLOCK  # preferred rack fell back
    assert viewer["spread"]["level"] == setting.RACK
    assert (viewer["wait"]["verdict"], viewer["too-big"]["verdict"]) == ("MUST_WAIT", "NEVER_FITS")
    assert observed.answers["wait"]["viewer@impersonate"]["limitedBy"] == "TOPOLOGY"
    assert any(
        "preferred" in step
        for step in observed.answers["too-big"]["viewer@impersonate"]["nextSteps"]
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.job for s in SCENARIOS])
def test_tenant_gets_the_verdict_without_names(
    observed: Observed, cluster: Cluster, scenario: Scenario, mode: str
) -> None:
    refused = cluster.kubectl("auth", "can-i", "list", "nodes", user="alice", check=False)
    assert refused.stdout.strip() == "no"
    answer = observed.answers[scenario.job][f"alice@{mode}"]
    viewer = observed.answers[scenario.job][f"viewer@{mode}"]
    wl = observed.workloads[scenario.job]
    assert (answer["verdict"] == "FITS_NOW") is scenario.admitted, answer
    assert answer["verdict"] == viewer["verdict"]
    assert answer["kueueMessage"] == _kueue_message(wl)
    placed = answer["podSets"][0]["topology"]
    assert placed["domains"] is None
    assert placed["topologyAssignment"] is None
    assert placed["placedAt"] == viewer["podSets"][0]["topology"]["placedAt"]
    shown = json.dumps(answer)
    assert "tas-r" not in shown.replace("tas-rack", ""), shown
    assert not re.search(r"\b[rb][123]\b", shown), shown
