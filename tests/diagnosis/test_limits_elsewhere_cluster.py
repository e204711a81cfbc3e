"""Issue 21, class "Limits set elsewhere in the cohort tree", on the real Kueue through HTTP.

Its own objects, two trees sharing ResourceFlavor elsewhere-f:
- cohort elsewhere-pool (implicit): elsewhere-lender (2 CPU, lendingLimit 0) and
  elsewhere-borrower (1 CPU). `too-big` asks 3 CPU in the borrower; Kueue: "maximum capacity
  (1)": the lender's lendingLimit keeps its 2 CPU out, so raising it is the lever.
- Cohort elsewhere-root > Cohort elsewhere-child (0 CPU, borrowingLimit 1) > elsewhere-child-cq
  (1 CPU), and elsewhere-root-cq (4 CPU) in the root. `two-level` asks 3 CPU in the child's
  queue; Kueue: "maximum capacity (2)": the child Cohort's borrowingLimit binds.
Diagnosis (its summary, next steps and blocking object) and whatIf must name the object and the
limit that binds, where it is set. alice
(tenant of team-a, who may read no ClusterQueue) asks whatIf through a LocalQueue of hers on
elsewhere-borrower from a server with `--quota-disclosure quota`: she gets the limit and its
figure, never the lender's name.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.core.modes import QuotaDisclosure
from tests.cluster.driver import Cluster
from tests.diagnosis.own_objects import apply, quota_message
from tests.service.conftest import Server, running_server
from tests.teardown import remove, remove_namespace
from tests.waiting import SETTLE_SECONDS, wait_until

pytestmark = pytest.mark.cluster

NS, FLAVOR = "limits-elsewhere", "elsewhere-f"
LABEL = "kueue-graphql.example/test"
LABELS = {LABEL: "limits-elsewhere"}
GROUP = "kueue.x-k8s.io/v1beta2"

PROSE = """
query Prose($ns: String!, $name: String!) {
  diagnose(namespace: $ns, kind: "Workload", name: $name) {
    summary nextSteps blockingRef { kind name }
    quota { verdict lines { flavor verdict limitedBy } }
  }
}
"""
LIMITS = "bindingLimits { kind name limit value { quantity } withheld { quantity } }"
STRUCTURED = f"""
query Structured($ns: String!, $name: String!) {{
  diagnose(namespace: $ns, kind: "Workload", name: $name) {{
    quota {{ lines {{ flavor verdict limitedBy {LIMITS} }} }}
  }}
}}
"""
WHAT_IF = f"""
query Fits($lq: String!) {{
  whatIf(namespace: "team-a", localQueue: $lq,
         podSets: [{{count: 3, requests: [{{resource: "cpu", quantity: "1"}}]}}]) {{
    verdict limitedBy summary numbersFrom nextSteps
    quota {{ flavor verdict limitedBy {LIMITS} }}
  }}
}}
"""


def _cq(name: str, cohort: str, cpu: dict[str, str]) -> dict[str, Any]:
    flavors = [{"name": FLAVOR, "resources": [{"name": "cpu", **cpu}]}]
    return {"apiVersion": GROUP, "kind": "ClusterQueue",
            "metadata": {"name": name, "labels": LABELS},
            "spec": {"cohortName": cohort, "namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": ["cpu"],
                                         "flavors": flavors}]}}  # fmt: skip


def _lq(namespace: str, name: str, cq: str) -> dict[str, Any]:
    return {"apiVersion": GROUP, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
            "spec": {"clusterQueue": cq}}  # fmt: skip


def _workload(name: str, queue: str) -> dict[str, Any]:
    return {"apiVersion": GROUP, "kind": "Workload",
            "metadata": {"name": name, "namespace": NS, "labels": LABELS},
            # spec.priority set: Kueue v0.17's visibility server fails without it.
            "spec": {"queueName": queue, "priority": 0,
                     "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "registry.invalid/never-pulled",
                     "resources": {"requests": {"cpu": "3"}}}]}}}]}}  # fmt: skip


def _objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": LABELS}},
        {"apiVersion": GROUP, "kind": "ResourceFlavor",
         "metadata": {"name": FLAVOR, "labels": LABELS}},
        _cq("elsewhere-lender", "elsewhere-pool", {"nominalQuota": "2", "lendingLimit": "0"}),
        _cq("elsewhere-borrower", "elsewhere-pool", {"nominalQuota": "1"}),
        {"apiVersion": GROUP, "kind": "Cohort",
         "metadata": {"name": "elsewhere-root", "labels": LABELS}},
        {"apiVersion": GROUP, "kind": "Cohort",
         "metadata": {"name": "elsewhere-child", "labels": LABELS},
         "spec": {"parentName": "elsewhere-root", "resourceGroups": [
             {"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [
                 {"name": "cpu", "nominalQuota": "0", "borrowingLimit": "1"}]}]}]}},
        _cq("elsewhere-child-cq", "elsewhere-child", {"nominalQuota": "1"}),
        _cq("elsewhere-root-cq", "elsewhere-root", {"nominalQuota": "4"}),
        _lq(NS, "lq-borrower", "elsewhere-borrower"),
        _lq(NS, "lq-child", "elsewhere-child-cq"),
        _lq("team-a", "lq-limits-elsewhere", "elsewhere-borrower"),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def setting(cluster: Cluster) -> Iterator[None]:
    apply(cluster, _objects())
    apply(cluster, [_workload("too-big", "lq-borrower"), _workload("two-level", "lq-child")])
    # Kueue's own verdicts first: the setting is wrong if Kueue does not say this.
    wait_until(
        "Kueue's maximum capacities",
        lambda: "maximum capacity (1)" in quota_message(cluster, "too-big", NS)
        and "maximum capacity (2)" in quota_message(cluster, "two-level", NS),
        SETTLE_SECONDS,
        detail=lambda: repr([quota_message(cluster, n, NS) for n in ("too-big", "two-level")]),
    )
    yield
    remove_namespace(cluster, NS)
    remove(cluster, "localqueues", "-n", "team-a", "-l", f"{LABEL}=limits-elsewhere")
    remove(cluster, "clusterqueues", "-l", f"{LABEL}=limits-elsewhere")
    remove(cluster, "cohorts", "-l", f"{LABEL}=limits-elsewhere")
    remove(cluster, "resourceflavors", "-l", f"{LABEL}=limits-elsewhere")


@pytest.fixture(scope="module")
async def disclosing(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA) as s:
        yield s


async def _query(server: Server, token: str, query: str, **variables: str) -> dict[str, Any]:
    body = await server.query(query, variables, token=token)
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


CASES = {
    # workload: (words in the summary, the lever, the binding limit as GraphQL answers it)
    "too-big": (
        "ClusterQueue elsewhere-lender keeps 2 cpu of its quota from the cohort "
        "(lendingLimit 0 cpu)",
        "raise the lendingLimit of ClusterQueue elsewhere-lender in flavor elsewhere-f",
        {"kind": "ClusterQueue", "name": "elsewhere-lender", "limit": "lendingLimit",
         "value": {"quantity": "0"}, "withheld": {"quantity": "2"}},
    ),
    "two-level": (
        "Cohort elsewhere-child borrows at most 1 cpu from its parent cohort (borrowingLimit)",
        "raise the borrowingLimit of Cohort elsewhere-child in flavor elsewhere-f",
        {"kind": "Cohort", "name": "elsewhere-child", "limit": "borrowingLimit",
         "value": {"quantity": "1"}, "withheld": None},
    ),
}  # fmt: skip


@pytest.mark.parametrize("workload", sorted(CASES))
async def test_diagnosis_names_the_limit_where_it_is_set(
    workload: str, setting: None, server: Server, cluster: Cluster
) -> None:
    words, lever, limit = CASES[workload]
    d = (await _query(server, cluster.token("admin"), PROSE, ns=NS, name=workload))["diagnose"]
    assert d["quota"]["verdict"] == "NEVER_FITS"
    assert words in d["summary"], d["summary"]
    assert [s for s in d["nextSteps"] if lever in s], d["nextSteps"]
    assert d["blockingRef"] == {"kind": limit["kind"], "name": limit["name"]}
    lines = (await _query(server, cluster.token("admin"), STRUCTURED, ns=NS, name=workload))[
        "diagnose"
    ]["quota"]["lines"]
    assert lines == [
        {"flavor": FLAVOR, "verdict": "NEVER_FITS", "limitedBy": "COHORT", "bindingLimits": [limit]}
    ]


async def test_what_if_names_the_lender_to_whom_may_read_it(
    setting: None, server: Server, cluster: Cluster
) -> None:
    words, lever, limit = CASES["too-big"]
    w = (await _query(server, cluster.token("admin"), WHAT_IF, lq="lq-limits-elsewhere"))["whatIf"]
    assert (w["verdict"], w["limitedBy"], w["numbersFrom"]) == (
        "NEVER_FITS",
        "COHORT",
        "CALLER_RBAC",
    )
    assert words in w["summary"], w["summary"]
    assert [s for s in w["nextSteps"] if lever in s], w["nextSteps"]
    assert [line["bindingLimits"] for line in w["quota"]] == [[limit]]


async def test_what_if_under_the_disclosure_policy_gives_the_limit_not_the_name(
    setting: None, disclosing: Server, cluster: Cluster
) -> None:
    alice = cluster.token("alice")
    w = (await _query(disclosing, alice, WHAT_IF, lq="lq-limits-elsewhere"))["whatIf"]
    assert (w["verdict"], w["numbersFrom"]) == ("NEVER_FITS", "DISCLOSURE_POLICY")
    assert [line["bindingLimits"] for line in w["quota"]] == [
        [{**CASES["too-big"][2], "name": None}]
    ]
    shown = json.dumps(w)
    assert "elsewhere-lender" not in shown
    assert "another ClusterQueue of cohort elsewhere-pool (name not disclosed)" in w["summary"]
