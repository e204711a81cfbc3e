"""The chart as a platform team installs it: lint, render, server-side dry run, install; its RBAC
grants reads of exactly what the service reads, and nothing that writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_graphql.kube import resources
from tests.chart.conftest import CHART, COMBINATIONS, NAMESPACE, Release, run_helm
from tests.cluster.driver import Cluster

READ_VERBS = {"get", "list", "watch"}


def rendered(helm: Path, *args: str) -> list[dict[str, Any]]:
    output = run_helm(helm, None, "template", "t", str(CHART), "--namespace", NAMESPACE, *args)
    return [d for d in yaml.safe_load_all(output.stdout) if d]


def cluster_role(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (role,) = [d for d in documents if d["kind"] == "ClusterRole"]
    return role


@pytest.mark.parametrize("values", COMBINATIONS.values(), ids=COMBINATIONS.keys())
def test_lint_strict(helm: Path, values: tuple[str, ...]) -> None:
    result = run_helm(helm, None, "lint", "--strict", str(CHART), *values)
    assert "0 chart(s) failed" in result.stdout


def test_values_schema_refuses_unknown_values(helm: Path) -> None:
    result = run_helm(
        helm, None, "lint", "--strict", str(CHART), "--set", "readMode=all", check=False
    )
    assert result.returncode != 0
    assert "readMode" in result.stdout + result.stderr


def test_auto_impersonation_refuses_to_guess_below_1_36(helm: Path) -> None:
    refused = run_helm(
        helm, None, "template", "t", str(CHART), "--kube-version", "1.35.0", check=False
    )
    assert refused.returncode != 0
    assert "rbac.impersonation=legacy" in refused.stderr
    legacy = cluster_role(
        rendered(helm, "--kube-version", "1.35.0", "--set", "rbac.impersonation=legacy")
    )
    assert {"impersonate"} <= {v for rule in legacy["rules"] for v in rule["verbs"]}
    default = cluster_role(rendered(helm, "--kube-version", "1.36.0"))
    assert (
        default["metadata"]["annotations"]["kueue-graphql.x-k8s.io/impersonation"] == "constrained"
    )


def _service_reads() -> set[tuple[str, str]]:
    """(group, resource) for every resource the service reads, from kube/resources.py."""
    read = set()
    for value in vars(resources).values():
        if isinstance(value, resources.Resource):
            plural = value.plural
            if value is resources.VISIBILITY_LOCAL_QUEUE:
                plural += "/pendingworkloads"  # read as that subresource (kube/reads.py)
            read.add((value.group, plural))
    return read


def _granted(role: dict[str, Any], verb_filter: Any) -> set[tuple[str, str]]:
    return {
        (group, resource)
        for rule in role["rules"]
        if any(verb_filter(v) for v in rule["verbs"])
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def test_constrained_rbac_reads_exactly_what_the_service_reads(helm: Path) -> None:
    role = cluster_role(rendered(helm))
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    impersonate_on = {v for v in verbs if v.startswith("impersonate-on:")}
    # Impersonating, only reads; as itself, only the two reviews; no plain impersonate.
    assert {v.rsplit(":", 1)[1] for v in impersonate_on} == READ_VERBS
    assert verbs - impersonate_on == {
        "create",
        "impersonate:user-info",
        "impersonate:serviceaccount",
    }
    assert _granted(role, lambda v: v.startswith("impersonate-on:")) == _service_reads()
    assert _granted(role, lambda v: v == "create") == {
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    }
    # The service's own identity reads nothing in the default read mode.
    assert _granted(role, lambda v: v in READ_VERBS) == set()


def test_cache_read_mode_grants_the_kueue_kinds_to_the_service_itself(helm: Path) -> None:
    role = cluster_role(rendered(helm, "--set", "readMode=cache"))
    kueue = {(g, r) for g, r in _service_reads() if g == resources.KUEUE_GROUP}
    assert _granted(role, lambda v: v in READ_VERBS) == kueue


def test_quota_disclosure_grants_its_reads_and_passes_the_flag(helm: Path) -> None:
    off = rendered(helm)
    on = rendered(helm, "--set", "quotaDisclosure=quota")
    assert _granted(cluster_role(off), lambda v: v in READ_VERBS) == set()
    assert _granted(cluster_role(on), lambda v: v in READ_VERBS) == {
        (resources.KUEUE_GROUP, "clusterqueues"),
        (resources.KUEUE_GROUP, "cohorts"),
        (resources.KUEUE_GROUP, "resourceflavors"),
        (resources.KUEUE_GROUP, "workloadpriorityclasses"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads"),
    }

    def args(documents: list[dict[str, Any]]) -> list[str]:
        (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
        return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])

    assert not any(a.startswith("--quota-disclosure") for a in args(off))
    assert "--quota-disclosure=quota" in args(on)


def test_topology_disclosure_adds_what_the_tas_verdict_reads(helm: Path) -> None:
    quota = _granted(
        cluster_role(rendered(helm, "--set", "quotaDisclosure=verdict")), READ_VERBS.__contains__
    )
    with_tas = rendered(
        helm, "--set", "quotaDisclosure=verdict", "--set", "topologyDisclosure=true"
    )
    assert _granted(cluster_role(with_tas), READ_VERBS.__contains__) - quota == {
        ("", "nodes"),
        ("", "pods"),
        (resources.KUEUE_GROUP, "workloads"),
        (resources.KUEUE_GROUP, "topologies"),
    }
    # Without the quota disclosure policy the service reads nothing, whatever this says.
    alone = rendered(helm, "--set", "topologyDisclosure=true")
    assert _granted(cluster_role(alone), READ_VERBS.__contains__) == set()


@pytest.mark.cluster
@pytest.mark.parametrize("values", COMBINATIONS.values(), ids=COMBINATIONS.keys())
def test_template_applies_with_server_side_dry_run(
    helm: Path, cluster: Cluster, release: Release, tmp_path: Path, values: tuple[str, ...]
) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(
        run_helm(
            helm,
            None,
            "template",
            "dry-run",
            str(CHART),
            "--namespace",
            release.namespace,
            *values,
            # The helm-test caller runs as a ServiceAccount that exists (a dry run creates none).
            "--set",
            f"testCaller.serviceAccountName={release.service_account}",
        ).stdout
    )
    result = cluster.kubectl(
        "apply", "--dry-run=server", "-n", release.namespace, "-f", str(manifest), check=False
    )
    assert result.returncode == 0, result.stderr
    documents = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    applied = result.stdout.splitlines()
    assert len(applied) == len(documents), result.stdout
    assert all(line.endswith("(server dry run)") for line in applied), result.stdout
    if not values:
        for kind in (
            "deployment.apps",
            "service",
            "serviceaccount",
            "clusterrole.rbac.authorization.k8s.io",
        ):
            assert f"{kind}/dry-run-kueue-graphql" in result.stdout, result.stdout


@pytest.mark.cluster
def test_install_creates_the_release(helm: Path, cluster: Cluster, release: Release) -> None:
    status = json.loads(
        run_helm(
            helm, cluster, "status", "kg", "--namespace", release.namespace, "-o", "json"
        ).stdout
    )
    assert status["info"]["status"] == "deployed"
    assert "the first query" in status["info"]["notes"].lower()
    names = cluster.kubectl(
        "get",
        "deployment,service,serviceaccount,poddisruptionbudget",
        "-n",
        release.namespace,
        "-o",
        "name",
        "-l",
        "app.kubernetes.io/instance=kg",
    ).stdout.split()
    # Two replicas by default, so a PodDisruptionBudget too; /metrics has a Service of its own.
    assert sorted(names) == [
        "deployment.apps/kg-kueue-graphql",
        "poddisruptionbudget.policy/kg-kueue-graphql",
        "service/kg-kueue-graphql",
        "service/kg-kueue-graphql-metrics",
        "serviceaccount/kg-kueue-graphql",
    ]
    deployment = json.loads(
        cluster.kubectl(
            "get", "deployment", "kg-kueue-graphql", "-n", release.namespace, "-o", "json"
        ).stdout
    )
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["serviceAccountName"] == release.service_account
