"""The chart's ServiceAccount is read-only, whatever it claims to be: with no impersonation, or
impersonating anyone (system:masters included), every write and every read of Secrets is
Forbidden. A leaked token of it reads what its impersonated users may read, and nothing more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.chart.conftest import Release, token_kubeconfig
from tests.cluster.driver import Cluster

pytestmark = pytest.mark.cluster

AS = {
    "itself": (),
    "a user": ("--as=mallory",),
    "a user in system:masters": ("--as=mallory", "--as-group=system:masters"),
    "admin in system:masters": ("--as=admin", "--as-group=system:masters"),
    "a user with an empty group": ("--as=alice", "--as-group="),
    "a controller ServiceAccount": ("--as=system:serviceaccount:kube-system:namespace-controller",),
    "a tenant ServiceAccount": ("--as=system:serviceaccount:team-a:ci-bot",),
}

JOB = (
    '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"ro-proof","namespace":"team-a"},'
    '"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x"}]}}}}'
)
WRITES = {
    "create namespace": ("create", "namespace", "ro-proof"),
    "create job": ("create", "--validate=false", "-f", "JOB"),
    "create configmap": ("create", "configmap", "ro-proof", "-n", "team-a"),
    "create clusterrolebinding": (
        "create",
        "clusterrolebinding",
        "ro-proof",
        "--clusterrole=cluster-admin",
        "--user=mallory",
    ),
    "create token": ("create", "token", "ci-bot", "-n", "team-a"),
    "patch job": (
        "patch",
        "job",
        "finished-ok",
        "-n",
        "team-a",
        "-p",
        '{"metadata":{"labels":{"x":"y"}}}',
    ),
    "patch clusterqueue": (
        "patch",
        "clusterqueue",
        "cq-team-a",
        "--type=merge",
        "-p",
        '{"spec":{"stopPolicy":"Hold"}}',
    ),
    "label node": ("label", "node", "--all", "x=y"),
    "delete workload": ("delete", "workloads", "--all", "-n", "team-a"),
    "delete pod": ("delete", "pods", "--all", "-n", "team-a"),
    "delete namespace": ("delete", "namespace", "team-b"),
}
SECRET_READS = {
    "get secrets in team-a": ("get", "secrets", "-n", "team-a"),
    "list secrets everywhere": ("get", "secrets", "--all-namespaces"),
    "watch secrets": (
        "get",
        "secrets",
        "-n",
        "kube-system",
        "--watch-only",
        "--request-timeout=2s",
    ),
}


@pytest.fixture(scope="module")
def service_account_kubeconfig(
    cluster: Cluster, release: Release, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    token = cluster.service_account_token(release.namespace, release.service_account)
    return token_kubeconfig(cluster, token, tmp_path_factory.mktemp("sa"), "chart-sa")


def _run(
    cluster: Cluster, kubeconfig: Path, args: tuple[str, ...], tmp_path: Path
) -> tuple[int, str]:
    if "JOB" in args:
        (tmp_path / "job.json").write_text(JOB)
        args = tuple(str(tmp_path / "job.json") if a == "JOB" else a for a in args)
    result = cluster.kubectl(*args, kubeconfig=kubeconfig, check=False, timeout=30)
    return result.returncode, result.stderr + result.stdout


@pytest.mark.parametrize("who", AS)
def test_no_write_and_no_secret_read_as_anyone(
    cluster: Cluster, service_account_kubeconfig: Path, who: str, tmp_path: Path
) -> None:
    allowed = []
    for name, args in {**WRITES, **SECRET_READS}.items():
        code, output = _run(cluster, service_account_kubeconfig, (*args, *AS[who]), tmp_path)
        if code == 0 or "forbidden" not in output.lower():
            allowed.append(f"{name}: exit {code}: {output.strip()[:300]}")
    assert allowed == []


def test_the_objects_it_was_refused_to_change_are_unchanged(cluster: Cluster) -> None:
    # Guards the test above against refusals that were only reported: nothing was written.
    assert cluster.kubectl("get", "namespace", "ro-proof", check=False).returncode != 0
    assert cluster.kubectl("get", "clusterrolebinding", "ro-proof", check=False).returncode != 0
    job = json.loads(
        cluster.kubectl("get", "job", "finished-ok", "-n", "team-a", "-o", "json").stdout
    )
    assert "x" not in (job["metadata"].get("labels") or {})


def test_reads_as_a_user_work_so_the_refusals_above_mean_something(
    cluster: Cluster, service_account_kubeconfig: Path, tmp_path: Path
) -> None:
    code, output = _run(
        cluster, service_account_kubeconfig, ("get", "jobs", "-n", "team-a", "--as=alice"), tmp_path
    )
    assert code == 0, output
    assert "finished-ok" in output
    code, output = _run(
        cluster,
        service_account_kubeconfig,
        ("get", "jobs", "-n", "team-a", "--as=system:serviceaccount:team-a:ci-bot"),
        tmp_path,
    )
    assert code == 0, output
    # ... and as a user who may not read team-b, team-b stays closed.
    code, output = _run(
        cluster, service_account_kubeconfig, ("get", "jobs", "-n", "team-b", "--as=alice"), tmp_path
    )
    assert code != 0
    assert "forbidden" in output.lower()


def test_its_own_rules_hold_no_write_verb(
    cluster: Cluster, service_account_kubeconfig: Path, tmp_path: Path
) -> None:
    # SelfSubjectRulesReview: everything the ServiceAccount may do, as the API server sees it.
    review = tmp_path / "review.json"
    review.write_text(
        json.dumps(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectRulesReview",
                "spec": {"namespace": "team-a"},
            }
        )
    )
    result = cluster.kubectl(
        "create",
        "--validate=false",
        "-f",
        str(review),
        "-o",
        "json",
        kubeconfig=service_account_kubeconfig,
    )
    rules = json.loads(result.stdout)["status"]["resourceRules"]
    writes = {"create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "*"}
    # Only the reviews every caller may create, plus the two the service needs.
    reviews = {
        "tokenreviews",
        "subjectaccessreviews",
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "selfsubjectreviews",
    }
    for rule in rules:
        verbs = set(rule["verbs"])
        assert "impersonate" not in verbs, rule
        if verbs & writes:
            assert set(rule["resources"]) <= reviews, rule
            assert verbs == {"create"}, rule
        for verb in verbs:
            if verb.startswith("impersonate-on:"):
                assert verb.rsplit(":", 1)[1] in {"get", "list", "watch"}, rule
