"""Each user sees through the service exactly what kubectl shows that user: nothing kubectl
denies is shown, nothing kubectl shows is denied."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from kueue_graphql.core.global_ids import encode_id
from tests.cluster.driver import Cluster, selected_integrations
from tests.cluster.integrations import started
from tests.service.conftest import Server

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

# carol's RBAC names single objects (resourceNames); dave's comes from an aggregated ClusterRole.
USERS = ["admin", "alice", "bob", "viewer", "nobody", "grace", "carol", "dave"]


@dataclass(frozen=True)
class Probe:
    name: str
    kubectl: tuple[str, ...]
    query: str
    # Path from `data` to the answer; a list answer is compared by object names.
    path: tuple[str, ...]
    compare_names: bool = True


PROBES = [
    Probe(
        "workloads in team-a",
        ("get", "workloads", "-n", "team-a"),
        '{ workloads(first: 100, namespace: "team-a") { nodes { name } } }',
        ("workloads",),
    ),
    Probe(
        "workloads in team-b",
        ("get", "workloads", "-n", "team-b"),
        '{ workloads(first: 100, namespace: "team-b") { nodes { name } } }',
        ("workloads",),
    ),
    Probe(
        "workloads everywhere",
        ("get", "workloads", "--all-namespaces"),
        "{ workloads(first: 100) { nodes { name } } }",
        ("workloads",),
    ),
    Probe(
        "localqueues in team-a",
        ("get", "localqueues", "-n", "team-a"),
        '{ localQueues(first: 100, namespace: "team-a") { nodes { name } } }',
        ("localQueues",),
    ),
    Probe(
        "one localqueue of team-b",
        ("get", "localqueue", "lq-team-b", "-n", "team-b"),
        '{ localQueue(namespace: "team-b", name: "lq-team-b") { name clusterQueueName } }',
        ("localQueue",),
    ),
    Probe(
        "localqueues in team-b",
        ("get", "localqueues", "-n", "team-b"),
        '{ localQueues(first: 100, namespace: "team-b") { nodes { name } } }',
        ("localQueues",),
    ),
    Probe(
        "localqueues everywhere",
        ("get", "localqueues", "--all-namespaces"),
        "{ localQueues(first: 100) { nodes { name } } }",
        ("localQueues",),
    ),
    Probe(
        "one localqueue of team-a",
        ("get", "localqueue", "lq-team-a", "-n", "team-a"),
        '{ localQueue(namespace: "team-a", name: "lq-team-a") { name } }',
        ("localQueue",),
    ),
    Probe(
        "a localqueue of team-b that does not exist",
        ("get", "localqueue", "lq-nope", "-n", "team-b"),
        '{ localQueue(namespace: "team-b", name: "lq-nope") { name } }',
        ("localQueue",),
    ),
    Probe(
        "clusterqueues",
        ("get", "clusterqueues"),
        "{ clusterQueues(first: 100) { nodes { name } } }",
        ("clusterQueues",),
    ),
    Probe(
        "one clusterqueue",
        ("get", "clusterqueue", "cq-team-a"),
        '{ clusterQueue(name: "cq-team-a") { name cohortName } }',
        ("clusterQueue",),
    ),
    Probe(
        "another clusterqueue",
        ("get", "clusterqueue", "cq-team-b"),
        '{ clusterQueue(name: "cq-team-b") { name } }',
        ("clusterQueue",),
    ),
    Probe(
        "clusterqueues of cohort shared-pool",
        ("get", "clusterqueues"),
        '{ clusterQueues(first: 100, cohort: "shared-pool") { nodes { name } } }',
        ("clusterQueues",),
        compare_names=False,  # kubectl has no cohort filter; access is what is compared
    ),
    Probe(
        "cohorts",
        ("get", "cohorts"),
        "{ cohorts(first: 100) { nodes { name } } }",
        ("cohorts",),
        compare_names=False,  # implicit cohorts (named by ClusterQueues only) are listed too
    ),
    Probe(
        "admissionchecks",
        ("get", "admissionchecks"),
        "{ admissionChecks(first: 100) { nodes { name } } }",
        ("admissionChecks",),
    ),
    Probe(
        "resourceflavors",
        ("get", "resourceflavors"),
        "{ resourceFlavors(first: 100) { nodes { name } } }",
        ("resourceFlavors",),
    ),
    Probe(
        "one cohort object",
        ("get", "cohort", "org"),
        '{ cohort(name: "org") { name explicit } }',
        ("cohort",),
    ),
    Probe(
        "bob's job",
        ("get", "job", "bob-job", "-n", "team-b"),
        '{ job(namespace: "team-b", name: "bob-job") { name } }',
        ("job",),
    ),
    Probe(
        "jobs in team-a",
        ("get", "jobs", "-n", "team-a"),
        '{ jobs(first: 100, namespace: "team-a") { nodes { name } } }',
        ("jobs",),
    ),
    Probe(
        "pods in team-a",
        ("get", "pods", "-n", "team-a"),
        '{ pods(first: 100, namespace: "team-a") { nodes { name } } }',
        ("pods",),
    ),
    Probe(
        "events in team-b",
        ("get", "events", "-n", "team-b"),
        '{ events(first: 100, namespace: "team-b") { nodes { name } } }',
        ("events",),
        compare_names=False,  # new events may arrive between the two reads
    ),
    Probe(
        "nodes",
        ("get", "nodes"),
        "{ kubernetesNodes(first: 100) { nodes { name } } }",
        ("kubernetesNodes",),
    ),
    Probe(
        "namespaces",
        ("get", "namespaces"),
        "{ namespaces(first: 100) { nodes { name } } }",
        ("namespaces",),
    ),
    Probe(
        "priority classes",
        ("get", "workloadpriorityclasses"),
        "{ workloadPriorityClasses(first: 100) { nodes { name value } } }",
        ("workloadPriorityClasses",),
    ),
]


def by_global_id(kubectl: tuple[str, ...], type_name: str, namespace: str, name: str) -> Probe:
    """The object `kubectl` gets, through `node(id:)` (Relay's lookup by global id): it must be
    answered or refused exactly as kubectl is, as the type's own root field is."""
    node_id = encode_id(type_name, namespace, name)
    return Probe(
        f"{type_name} {name} by id",
        kubectl,
        f'{{ node(id: "{node_id}") {{ ... on {type_name} {{ name }} ... on Cohort {{ name }} }} }}',
        ("node",),
    )


PROBES += [
    by_global_id(
        ("get", "localqueue", "lq-team-b", "-n", "team-b"), "LocalQueue", "team-b", "lq-team-b"
    ),
    by_global_id(("get", "clusterqueue", "cq-team-b"), "ClusterQueue", "", "cq-team-b"),
    by_global_id(("get", "cohort", "org"), "Cohort", "", "org"),
    by_global_id(("get", "job", "bob-job", "-n", "team-b"), "Job", "team-b", "bob-job"),
    by_global_id(("get", "namespace", "team-a"), "Namespace", "", "team-a"),
    by_global_id(("get", "node", "node-standard-1"), "KubernetesNode", "", "node-standard-1"),
]


# The owners of the JobSet integration, where its controller runs (70-jobsets.yaml).
if "jobset" in {c.name for c in started(selected_integrations())}:
    PROBES += [
        Probe(
            "one jobset of team-a",
            ("get", "jobset", "js-running", "-n", "team-a"),
            '{ jobSet(namespace: "team-a", name: "js-running") { name } }',
            ("jobSet",),
        ),
        Probe(
            "jobsets in team-b (none)",
            ("get", "jobset", "js-running", "-n", "team-b"),
            '{ jobSet(namespace: "team-b", name: "js-running") { name } }',
            ("jobSet",),
        ),
        Probe(
            "a jobset's pods",
            ("get", "pods", "-n", "team-a", "-l", "jobset.sigs.k8s.io/jobset-name=js-running"),
            '{ jobSet(namespace: "team-a", name: "js-running") { pods { name } } }',
            ("jobSet", "pods"),
        ),
        Probe(
            "a jobset's jobs",
            ("get", "jobs", "-n", "team-a", "-l", "jobset.sigs.k8s.io/jobset-name=js-running"),
            '{ jobSet(namespace: "team-a", name: "js-running") '
            "{ replicatedJobs { jobs { name } } } }",
            ("jobSet", "replicatedJobs"),
        ),
        by_global_id(
            ("get", "jobset", "js-running", "-n", "team-a"), "JobSet", "team-a", "js-running"
        ),
    ]

# KubeRay's RayJobs, managed by Kueue alone (72-rayjobs.yaml; the KubeRay operator does not run,
# so no RayCluster and no Pod exist to compare).
if "kuberay" in {c.name for c in selected_integrations()}:
    PROBES += [
        Probe(
            "one rayjob of team-a",
            ("get", "rayjob", "rj-admitted-no-raycluster", "-n", "team-a"),
            '{ rayJob(namespace: "team-a", name: "rj-admitted-no-raycluster") { name } }',
            ("rayJob",),
        ),
        Probe(
            "rayjobs in team-b (none)",
            ("get", "rayjob", "rj-too-big", "-n", "team-b"),
            '{ rayJob(namespace: "team-b", name: "rj-too-big") { name } }',
            ("rayJob",),
        ),
        by_global_id(
            ("get", "rayjob", "rj-too-big", "-n", "team-a"), "RayJob", "team-a", "rj-too-big"
        ),
    ]

# Kueue's Pod-based integrations (71-pod-groups.yaml), on whenever any controller is.
if selected_integrations():
    PROBES += [
        Probe(
            "a statefulset's pods",
            ("get", "pods", "-n", "team-a-serving", "-l", "app=sts-running"),
            '{ workloadFor(namespace: "team-a-serving", kind: "StatefulSet", '
            'name: "sts-running") { owner { pods { name } } } }',
            ("workloadFor", "owner", "pods"),
        ),
    ]


def kubectl_view(
    cluster: Cluster, user: str, probe: Probe, kubeconfig: Path | None = None
) -> tuple[bool, set[str]]:
    result = cluster.kubectl(
        *probe.kubectl, "-o", "json", user=user, check=False, kubeconfig=kubeconfig
    )
    if result.returncode != 0:
        if "(NotFound)" in result.stderr:
            return True, set()  # allowed to look, and nothing is there
        assert "forbidden" in result.stderr.lower(), result.stderr
        return False, set()
    shown = json.loads(result.stdout)
    items = shown.get("items", [shown]) if shown.get("kind", "").endswith("List") else [shown]
    return True, {item["metadata"]["name"] for item in items}


def service_view(body: dict[str, Any], probe: Probe) -> tuple[bool, set[str]]:
    errors = body.get("errors") or []
    answer: Any = body.get("data") or {}
    for key in probe.path:
        answer = answer.get(key) if isinstance(answer, dict) else None
    if errors:
        codes = {e["extensions"]["code"] for e in errors}
        if codes == {"NOT_FOUND"}:
            assert answer is None
            return True, set()
        assert codes == {"FORBIDDEN"}, errors
        assert answer is None
        return False, set()
    assert answer is not None
    if isinstance(answer, dict) and "nodes" in answer:
        return True, {node["name"] for node in answer["nodes"]}
    if isinstance(answer, list):  # a JobSet's Pods, or its replicated jobs' Jobs
        named = {o["name"] for o in answer if "name" in o}
        return True, named | {j["name"] for o in answer for j in o.get("jobs") or []}
    return True, {answer["name"]}


class QueriesAs(Protocol):
    async def query(
        self, query: str, variables: dict[str, Any] | None = None, *, token: str | None
    ) -> dict[str, Any]: ...


async def view_mismatches(
    server: QueriesAs, cluster: Cluster, user: str, token: str, kubeconfig: Path | None = None
) -> list[str]:
    """Every probe on which the service, called with `token`, differs from kubectl as `user`
    (or as the identity of `kubeconfig`)."""
    mismatches = []
    for probe in PROBES:
        kubectl_allowed, kubectl_names = kubectl_view(cluster, user, probe, kubeconfig)
        body = await server.query(probe.query, token=token)
        service_allowed, service_names = service_view(body, probe)
        if kubectl_allowed != service_allowed:
            mismatches.append(f"{probe.name}: kubectl allowed={kubectl_allowed}, service {body}")
        elif probe.compare_names and kubectl_names != service_names:
            mismatches.append(f"{probe.name}: kubectl {kubectl_names} != service {service_names}")
    return mismatches


@pytest.mark.parametrize("user", USERS)
async def test_service_shows_what_kubectl_shows(
    server: Server, cluster: Cluster, user: str
) -> None:
    assert await view_mismatches(server, cluster, user, cluster.token(user)) == []


def test_the_matrix_is_not_trivial(cluster: Cluster) -> None:
    # Guard against a setup where everyone may read everything (or nothing): the comparison
    # above would then prove little.
    allowed = {
        user: {p.name for p in PROBES if kubectl_view(cluster, user, p)[0]} for user in USERS
    }
    assert allowed["nobody"] == set()
    assert "workloads in team-a" in allowed["alice"]
    assert "workloads in team-b" not in allowed["alice"]
    assert "workloads in team-b" in allowed["bob"]
    assert "clusterqueues" in allowed["viewer"]
    assert "clusterqueues" not in allowed["alice"]
    assert allowed["admin"] == {p.name for p in PROBES}
    # resourceNames: exactly the named objects, and no list of them.
    assert "one localqueue of team-b" in allowed["carol"]
    assert "one clusterqueue" in allowed["carol"]
    assert (
        not {"localqueues in team-b", "one localqueue of team-a", "another clusterqueue"}
        & (allowed["carol"])
    )
    assert not {"clusterqueues", "localqueues everywhere"} & allowed["carol"]
    # An aggregated ClusterRole: its rules come from the ClusterRoles labelled for it.
    assert {"clusterqueues", "workloads everywhere", "localqueues everywhere"} <= allowed["dave"]
    assert not {"jobs in team-a", "pods in team-a", "nodes"} & allowed["dave"]
