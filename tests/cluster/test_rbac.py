"""RBAC in the test cluster is real: each test user sees exactly what their bindings allow."""

from __future__ import annotations

import pytest

from tests.cluster.driver import Cluster, selected_integrations

pytestmark = pytest.mark.cluster

# KubeRay's kinds exist only where its CRDs are installed (KGQL_INTEGRATIONS names kuberay): read
# like JobSets, by a tenant in their namespace and by viewer everywhere (10-tenancy.yaml).
RAY_ACCESS = (
    [
        ("alice", "rayjobs", "team-a", True),
        ("alice", "rayclusters", "team-a", True),
        ("alice", "rayjobs", "team-b", False),
        ("bob", "rayjobs", "team-a", False),
        ("viewer", "rayjobs", "team-b", True),
        ("viewer", "rayclusters", "team-a", True),
        ("nobody", "rayjobs", "team-a", False),
    ]
    if "kuberay" in {c.name for c in selected_integrations()}
    else []
)


def can(cluster: Cluster, user: str, *args: str) -> bool:
    return cluster.kubectl("get", *args, "-o", "name", user=user, check=False).returncode == 0


def test_alice_lists_her_workloads_and_is_forbidden_in_team_b(cluster: Cluster) -> None:
    mine = cluster.kubectl("get", "workloads", "-n", "team-a", "-o", "name", user="alice")
    assert "workload.kueue.x-k8s.io/job-too-big-3x1cpu-" in mine.stdout
    theirs = cluster.kubectl("get", "workloads", "-n", "team-b", user="alice", check=False)
    assert theirs.returncode != 0
    assert "Forbidden" in theirs.stderr
    assert 'User "alice" cannot list resource "workloads"' in theirs.stderr


@pytest.mark.parametrize(
    ("user", "resource", "namespace", "allowed"),
    [
        ("alice", "jobs", "team-a", True),
        ("alice", "pods", "team-a", True),
        ("alice", "events", "team-a", True),
        ("alice", "localqueues", "team-a", True),
        ("alice", "jobs", "team-b", False),
        ("alice", "clusterqueues", None, False),
        ("alice", "nodes", None, False),
        ("bob", "workloads", "team-b", True),
        ("bob", "workloads", "team-a", False),
        ("viewer", "workloads", "team-a", True),
        ("viewer", "workloads", "team-b", True),
        ("viewer", "clusterqueues", None, True),
        ("viewer", "cohorts", None, True),
        ("viewer", "resourceflavors", None, True),
        ("viewer", "nodes", None, True),
        ("viewer", "secrets", "team-a", False),
        ("nobody", "workloads", "team-a", False),
        ("nobody", "clusterqueues", None, False),
        ("grace", "workloads", "team-a", True),
        ("grace", "workloads", "team-b", False),
        *RAY_ACCESS,
    ],
)
def test_user_access_matches_bindings(
    cluster: Cluster, user: str, resource: str, namespace: str | None, allowed: bool
) -> None:
    args = [resource] + (["-n", namespace] if namespace else [])
    assert can(cluster, user, *args) is allowed


def test_grace_gets_access_only_through_her_second_group(cluster: Cluster) -> None:
    who = cluster.kubectl(
        "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}", user="grace"
    )
    assert "team-a-readers" in who.stdout
    assert "engineering" in who.stdout
    # Impersonating her with only the first group must lose the access.
    first_group_only = cluster.kubectl(
        "get", "workloads", "-n", "team-a", "--as=grace", "--as-group=engineering", check=False
    )
    assert first_group_only.returncode != 0
    assert "Forbidden" in first_group_only.stderr
    both = cluster.kubectl(
        "get",
        "workloads",
        "-n",
        "team-a",
        "--as=grace",
        "--as-group=engineering",
        "--as-group=team-a-readers",
    )
    assert "job-" in both.stdout


def test_service_account_tokens_from_the_token_request_api_work(cluster: Cluster) -> None:
    token = cluster.service_account_token("team-a", "ci-bot", expiration_seconds=600)
    assert token.count(".") == 2  # a signed JWT
    allowed = cluster.kubectl(
        "get",
        "workloads",
        "-n",
        "team-a",
        "-o",
        "name",
        f"--token={token}",
        user="nobody",  # nobody's kubeconfig for the server and CA; --token replaces the user
    )
    assert "job-" in allowed.stdout
    denied = cluster.kubectl(
        "get", "workloads", "-n", "team-b", f"--token={token}", user="nobody", check=False
    )
    assert "system:serviceaccount:team-a:ci-bot" in denied.stderr


def test_server_service_account_may_review_and_impersonate_but_not_read(cluster: Cluster) -> None:
    def server_can(*args: str) -> str:
        return cluster.kubectl(
            "auth", "can-i", *args, kubeconfig=cluster.server_kubeconfig, check=False
        ).stdout.strip()

    assert server_can("create", "tokenreviews.authentication.k8s.io") == "yes"
    assert server_can("create", "subjectaccessreviews.authorization.k8s.io") == "yes"
    assert server_can("impersonate", "users") == "yes"
    assert server_can("impersonate", "groups") == "yes"
    assert server_can("list", "workloads.kueue.x-k8s.io", "-A") == "no"
