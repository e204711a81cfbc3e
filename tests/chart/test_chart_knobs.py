"""The chart's operator knobs (issue 22): the metrics port apart from the API's (its own Service,
the ServiceMonitor and NetworkPolicy), token audiences with a projected token for in-cluster
callers, names, extra env and volumes, security contexts, Service type and load-balancer fields,
multi-host Ingress with TLS: each renders what it says and leaves the RBAC as it was; the schema
refuses malformed values. Lint and server-side dry run of every combination (conftest's
COMBINATIONS): test_chart.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_graphql.core.workers import parse_worker_kubeconfigs
from tests.chart.conftest import ALL_KNOBS, CHART, COMBINATIONS, run_helm
from tests.chart.test_chart import cluster_role, rendered

SERVICE_MONITOR_API = ("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor")


def one(documents: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (found,) = [
        d
        for d in documents
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    return found


def services(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == "Service"}


def container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(documents, "Deployment")["spec"]["template"]["spec"]
    (first,) = spec["containers"]
    return dict(first)


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("service.type=External", "type"),
        ("service.nodePort=70000", "nodePort"),
        ("service.externalTrafficPolicy=Everywhere", "externalTrafficPolicy"),
        ("service.loadBalancerSourceRanges[0]=everyone", "loadBalancerSourceRanges"),
        ("metrics.port=8080", "port"),
        ("metrics.port=-1", "port"),
        ("tokenReview.audiences[0]=", "audiences"),
        ("tokenReview.audiences[0]=a\\,b", "audiences"),
        ("ingress.hosts[0].paths[0].path=graphql", "path"),
        ("ingress.hosts[0].hostname=x", "hostname"),
        ("fullnameOverride=Not_A_Name", "fullnameOverride"),
        ("extraVolumeMounts[0].name=x", "mountPath"),
        ("ingress.host=kueue-graphql.example.com", "host"),
        ("multiKueue.workers[0].name=worker-1", "kubeconfigSecret"),
        ("multiKueue.workers[0].name=Worker_1", "name"),
        ("multiKueue.workers[0].server=https://w1", "server"),
    ],
)
def test_values_schema_refuses(helm: Path, value: str, key: str) -> None:
    result = run_helm(helm, None, "lint", "--strict", str(CHART), "--set", value, check=False)
    assert result.returncode != 0, value
    assert key in result.stdout + result.stderr, result.stdout + result.stderr


def test_defaults_put_metrics_on_their_own_port_service_and_monitor(helm: Path) -> None:
    documents = rendered(helm, *SERVICE_MONITOR_API, "--set", "networkPolicy.enabled=true")
    main = container(documents)
    assert "--metrics-port=9090" in main["args"]
    assert {p["name"]: p["containerPort"] for p in main["ports"]} == {"http": 8080, "metrics": 9090}
    # The probes stay on the API listener.
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    by_name = services(documents)
    assert [p["name"] for p in by_name["t-kueue-graphql"]["spec"]["ports"]] == ["http"]
    metrics = by_name["t-kueue-graphql-metrics"]
    assert metrics["spec"]["type"] == "ClusterIP"
    assert metrics["spec"]["ports"] == [
        {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}
    ]
    monitor = one(documents, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    # It selects the metrics Service and not the API's.
    selector = monitor["spec"]["selector"]["matchLabels"]
    matched = [
        name
        for name, service in by_name.items()
        if selector.items() <= service["metadata"]["labels"].items()
    ]
    assert matched == ["t-kueue-graphql-metrics"]
    policy = one(documents, "NetworkPolicy")
    assert [rule["ports"] for rule in policy["spec"]["ingress"]] == [
        [{"port": "http", "protocol": "TCP"}],
        [{"port": "metrics", "protocol": "TCP"}],
    ]
    # No audience by default: the API server's own tokens, as before.
    assert not any(a.startswith("--token-audience") for a in main["args"])


def test_metrics_port_zero_leaves_no_metrics_anywhere(helm: Path) -> None:
    documents = rendered(
        helm,
        *COMBINATIONS["no metrics"],
        *SERVICE_MONITOR_API,
        "--set",
        "networkPolicy.enabled=true",
    )
    main = container(documents)
    assert "--metrics-port=0" in main["args"]
    assert [p["name"] for p in main["ports"]] == ["http"]
    assert list(services(documents)) == ["t-kueue-graphql"]
    assert not [d for d in documents if d["kind"] == "ServiceMonitor"]
    policy = one(documents, "NetworkPolicy")
    assert [rule["ports"][0]["port"] for rule in policy["spec"]["ingress"]] == ["http"]


def test_all_knobs_render_what_they_say(helm: Path) -> None:
    values = yaml.safe_load(ALL_KNOBS.read_text())
    documents = rendered(helm, *COMBINATIONS["all knobs"], *SERVICE_MONITOR_API)
    full = values["fullnameOverride"]
    named = {d["metadata"]["name"] for d in documents if d["kind"] != "Pod"}
    assert named == {full, f"{full}-metrics"}
    deployment = one(documents, "Deployment")
    assert deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "kgq"
    pod = deployment["spec"]["template"]["spec"]
    main = container(documents)
    assert pod["securityContext"] == values["podSecurityContext"]
    assert main["securityContext"] == values["securityContext"]
    assert main["env"] == values["extraEnv"]
    assert main["envFrom"] == values["extraEnvFrom"]
    assert values["extraVolumes"][0] in pod["volumes"]
    assert values["extraVolumeMounts"][0] in main["volumeMounts"]
    assert {"name": "tmp", "mountPath": "/tmp"} in main["volumeMounts"]
    assert [a for a in main["args"] if a.startswith("--token-audience")] == [
        "--token-audience=kueue-graphql",
        "--token-audience=portal.example.com",
    ]
    assert "--metrics-port=9464" in main["args"]

    service = services(documents)[full]
    wanted = values["service"]
    assert service["spec"]["type"] == "LoadBalancer"
    for field in ("loadBalancerClass", "loadBalancerIP", "loadBalancerSourceRanges"):
        assert service["spec"][field] == wanted[field], field
    assert service["spec"]["externalTrafficPolicy"] == "Local"
    assert service["metadata"]["annotations"] == wanted["annotations"]
    assert service["metadata"]["labels"]["team"] == "platform"
    assert service["spec"]["ports"] == [
        {
            "name": "http",
            "port": 8443,
            "targetPort": "http",
            "protocol": "TCP",
            "nodePort": 30443,
        }
    ]
    assert services(documents)[f"{full}-metrics"]["spec"]["type"] == "ClusterIP"

    ingress = one(documents, "Ingress")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == values["ingress"]["tls"]
    rules = {
        rule["host"]: [(p["path"], p["pathType"]) for p in rule["http"]["paths"]]
        for rule in ingress["spec"]["rules"]
    }
    assert rules == {
        # A host without paths: the API, the admission map's page and its files.
        "kueue-graphql.example.com": [
            ("/graphql", "Prefix"),
            ("/why", "Prefix"),
            ("/admission-map", "Prefix"),
        ],
        "queues.example.org": [("/graphql", "Exact"), ("/healthz", "Prefix")],
    }
    backends = {
        (p["backend"]["service"]["name"], p["backend"]["service"]["port"]["name"])
        for rule in ingress["spec"]["rules"]
        for p in rule["http"]["paths"]
    }
    assert backends == {(full, "http")}

    policy = one(documents, "NetworkPolicy")
    assert [(r["ports"][0]["port"], r["from"]) for r in policy["spec"]["ingress"]] == [
        ("http", values["networkPolicy"]["from"]),
        ("metrics", values["networkPolicy"]["metricsFrom"]),
    ]
    monitor = one(documents, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["endpoints"][0]["interval"] == "15s"


def test_the_test_caller_mounts_a_projected_token_for_the_first_audience(helm: Path) -> None:
    def caller(*values: str) -> dict[str, Any]:
        return one(rendered(helm, *values), "Pod")

    pod = caller(*COMBINATIONS["all knobs"])
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "portal"
    # Only the projected token: the Pod's default token (the API server's audience) is not
    # mounted, so the caller cannot fall back to it.
    assert spec["automountServiceAccountToken"] is False
    (volume,) = spec["volumes"]
    (source,) = volume["projected"]["sources"]
    assert source["serviceAccountToken"]["audience"] == "kueue-graphql"
    assert source["serviceAccountToken"]["path"] == "token"
    (mount,) = spec["containers"][0]["volumeMounts"]
    assert mount["name"] == volume["name"]
    script = spec["containers"][0]["command"][-1]
    assert f"{mount['mountPath']}/token" in script
    assert "http://kueue-graphql-all-knobs:8443/graphql" in script
    # Without audiences, a projected token of the API server's own audience.
    default = caller()["spec"]["volumes"][0]["projected"]["sources"][0]
    assert "audience" not in default["serviceAccountToken"]
    assert not [
        d for d in rendered(helm, "--set", "testCaller.enabled=false") if d["kind"] == "Pod"
    ]


def test_knobs_leave_the_rbac_as_it_was(helm: Path) -> None:
    def rules(*values: str) -> list[dict[str, Any]]:
        role: list[dict[str, Any]] = cluster_role(rendered(helm, *values))["rules"]
        return role

    assert rules(*COMBINATIONS["all knobs"]) == rules()
    kinds = {d["kind"] for d in rendered(helm, *COMBINATIONS["all knobs"])}
    assert kinds & {"Role", "RoleBinding"} == set()


def test_multikueue_workers_render_what_they_say(helm: Path) -> None:
    """multiKueue.workers (issue 25): each Secret mounted read-only at a path of its own, passed
    as --worker-kubeconfig NAME=PATH, which the server parses back to the same name and path."""
    values = yaml.safe_load(ALL_KNOBS.read_text())["multiKueue"]["workers"]
    documents = rendered(helm, *COMBINATIONS["all knobs"])
    pod = one(documents, "Deployment")["spec"]["template"]["spec"]
    main = container(documents)
    flags = [
        a.removeprefix("--worker-kubeconfig=")
        for a in main["args"]
        if a.startswith("--worker-kubeconfig=")
    ]
    workers = parse_worker_kubeconfigs(flags)
    assert [w.cluster for w in workers] == [w["name"] for w in values]
    mounts = {m["mountPath"]: m for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for worker, value in zip(workers, values, strict=True):
        mount = mounts[str(worker.path.parent)]
        assert mount["readOnly"] is True
        secret = volumes[mount["name"]]["secret"]
        assert secret["secretName"] == value["kubeconfigSecret"]
        assert secret["items"] == [
            {"key": value.get("key", "kubeconfig"), "path": worker.path.name}
        ]
    # None by default: no flag, no volume.
    defaults = rendered(helm)
    assert not [a for a in container(defaults)["args"] if "worker-kubeconfig" in a]


def test_a_worker_given_twice_is_refused(helm: Path) -> None:
    twice = ("--set", "multiKueue.workers[0].name=w1", "--set",
             "multiKueue.workers[0].kubeconfigSecret=a", "--set", "multiKueue.workers[1].name=w1",
             "--set", "multiKueue.workers[1].kubeconfigSecret=b")  # fmt: skip
    result = run_helm(helm, None, "template", str(CHART), *twice, check=False)
    assert result.returncode != 0
    assert "multiKueue.workers: w1 is given twice" in result.stderr
