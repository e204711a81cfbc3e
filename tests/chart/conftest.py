"""The Helm chart installed into the real control plane, and the service run as its
ServiceAccount the way a pod runs it (in-cluster configuration)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
import yaml

from tests.cluster import build
from tests.cluster.driver import Cluster
from tests.cluster.progress import Progress
from tests.http_limits import SERVER_CLIENT_LIMITS
from tests.service.conftest import free_ports
from tests.teardown import remove_namespace
from tests.waiting import READY_SECONDS, wait_until

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kueue-graphql"
NAMESPACE = "kueue-graphql-chart"
RELEASE = "kg"
SERVICE_ACCOUNT = f"{RELEASE}-kueue-graphql"
POD_SECRETS = Path("/var/run/secrets/kubernetes.io/serviceaccount")

# Value combinations every chart test of lint, schema and server-side dry run goes through.
ALL_KNOBS = Path(__file__).parent / "values" / "all-knobs.yaml"
COMBINATIONS = {
    "defaults": (),
    "legacy": ("--set", "rbac.impersonation=legacy"),
    "cache": ("--set", "readMode=cache"),
    "all knobs": ("-f", str(ALL_KNOBS)),
    "no metrics": ("--set", "metrics.port=0", "--set", "networkPolicy.enabled=true"),
    "NodePort": ("--set", "service.type=NodePort", "--set", "service.nodePort=30080"),
}


@pytest.fixture(scope="session")
def helm() -> Path:
    return build.ensure_built(build.HELM, Progress()) / "helm"


def run_helm(
    helm: Path, cluster: Cluster | None, *args: str, check: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    config = ["--kubeconfig", str(cluster.admin_kubeconfig)] if cluster else []
    result = subprocess.run(
        [str(helm), *config, *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        # helm keeps its cache and config under $HOME unless told otherwise.
        env={**os.environ, "HELM_CACHE_HOME": tempfile.gettempdir() + "/kueue-graphql-helm"},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


@dataclass(frozen=True)
class Release:
    namespace: str
    service_account: str


@contextlib.contextmanager
def _install(
    helm: Path, cluster: Cluster, name: str, namespace: str, *values: str
) -> Iterator[None]:
    """`helm upgrade --install` of the chart into `namespace`; when the chart tests end, the
    release is uninstalled and its namespace removed, waited until gone. Its Pods, bound by
    kube-scheduler to the scenarios' Node (no kubelet runs them), hold CPU requests there that
    later modules' Pods need: a 2-cpu Job in tests/service/test_subscriptions.py found 1.8 cpu
    free and never bound while the releases stayed installed for the whole run."""
    if cluster.kubectl("get", "namespace", namespace, check=False).returncode != 0:
        cluster.kubectl("create", "namespace", namespace)
    run_helm(helm, cluster, "upgrade", "--install", name, str(CHART), "--namespace", namespace,
             *values)  # fmt: skip
    try:
        yield
    finally:
        run_helm(helm, cluster, "uninstall", name, "--namespace", namespace, "--wait",
                 check=False)  # fmt: skip
        remove_namespace(cluster, namespace)


@pytest.fixture(scope="package")
def release(helm: Path, cluster: Cluster) -> Iterator[Release]:
    """The chart installed with its defaults, for the chart tests (removed after them)."""
    with _install(helm, cluster, RELEASE, NAMESPACE):
        yield Release(NAMESPACE, SERVICE_ACCOUNT)


def token_kubeconfig(cluster: Cluster, token: str, directory: Path, name: str) -> Path:
    """A kubeconfig for a bearer token (e.g. a ServiceAccount's), for kubectl."""
    config = yaml.safe_load(cluster.kubeconfig("nobody").read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path = directory / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@dataclass
class InClusterServer:
    url: str
    process: subprocess.Popen[str]
    log: Path

    async def query(
        self, query: str, variables: dict[str, Any] | None = None, *, token: str | None
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(
            base_url=self.url, timeout=30, limits=SERVER_CLIENT_LIMITS
        ) as http:
            response = await http.post(
                "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
            )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def readyz(self) -> httpx.Response:
        return httpx.get(self.url + "/readyz", timeout=30)

    def answers_readyz(self) -> httpx.Response | None:
        """/readyz's answer, None while nothing listens; AssertionError once the process has
        exited (it will never listen)."""
        if self.process.poll() is not None:
            raise AssertionError(
                f"in-cluster server exited with {self.process.returncode}:\n{self.log.read_text()}"
            )
        try:
            return self.readyz()
        except httpx.TransportError:
            return None


def start_in_cluster(
    cluster: Cluster, token: str, namespace: str, workdir: Path, *extra_args: str
) -> InClusterServer:
    """`kueue-graphql serve --in-cluster` as a pod runs it: KUBERNETES_SERVICE_HOST/PORT, and the
    token, CA and namespace at /var/run/secrets/kubernetes.io/serviceaccount, bind-mounted in a
    private mount namespace (the machine's own path is left untouched)."""
    secrets = workdir / "serviceaccount"
    secrets.mkdir()
    (secrets / "token").write_text(token)
    (secrets / "ca.crt").write_bytes(cluster.ca_file.read_bytes())
    (secrets / "namespace").write_text(namespace)
    POD_SECRETS.mkdir(parents=True, exist_ok=True)
    api = urlparse(cluster.api_url)
    port, metrics_port = free_ports(2)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(
        {
            "KUBERNETES_SERVICE_HOST": str(api.hostname),
            "KUBERNETES_SERVICE_PORT": str(api.port),
            # No kubeconfig anywhere: in-cluster configuration is the only way in.
            "HOME": str(workdir),
        }
    )
    serve = [sys.executable, "-m", "kueue_graphql.cli", "serve", "--in-cluster"]
    serve += ["--port", str(port), "--metrics-port", str(metrics_port), *extra_args]
    script = f"mount --bind {secrets} {POD_SECRETS} && exec {' '.join(serve)}"
    log = workdir / "server.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=REPO,
        )
    server = InClusterServer(f"http://127.0.0.1:{port}", process, log)
    try:
        # Listening (whatever /readyz says): the CLI's imports alone took 30-60 s on a loaded
        # machine, so the bound is generous; a server that exits fails at once.
        wait_until(
            "in-cluster server listening",
            lambda: server.answers_readyz() is not None,
            READY_SECONDS,
            interval=0.2,
            detail=log.read_text,
        )
    except BaseException:
        stop(server)
        raise
    return server


def wait_ready(server: InClusterServer) -> None:
    """Until /readyz answers 200 (in cache mode: once the informers synced)."""
    wait_until(
        "in-cluster server ready",
        lambda: getattr(server.answers_readyz(), "status_code", None) == 200,
        READY_SECONDS,
        interval=0.3,
        detail=lambda: f"/readyz: {server.readyz().text}\n{server.log.read_text()}",
    )


def stop(server: InClusterServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


# A second release with `readMode: cache`, beside the first (its own namespace and ClusterRole).
CACHE_NAMESPACE = "kueue-graphql-chart-cache"
CACHE_RELEASE = "kgc"


@pytest.fixture(scope="package")
def cache_release(helm: Path, cluster: Cluster) -> Iterator[Release]:
    """The chart with `readMode: cache` (removed after the chart tests, like `release`)."""
    with _install(helm, cluster, CACHE_RELEASE, CACHE_NAMESPACE, "--set", "readMode=cache"):
        yield Release(CACHE_NAMESPACE, f"{CACHE_RELEASE}-kueue-graphql")


@pytest.fixture(scope="package")
def chart_cache_server(
    cluster: Cluster, cache_release: Release, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[InClusterServer]:
    """The service as the chart runs it with `readMode: cache`: `--read-mode=cache`, as the
    release's ServiceAccount, ready once its informers synced."""
    token = cluster.service_account_token(cache_release.namespace, cache_release.service_account)
    server = start_in_cluster(
        cluster,
        token,
        cache_release.namespace,
        tmp_path_factory.mktemp("chart-cache-sa"),
        "--read-mode=cache",
    )
    try:
        wait_ready(server)
        yield server
    finally:
        stop(server)


@pytest.fixture(scope="package")
def chart_server(
    cluster: Cluster, release: Release, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[InClusterServer]:
    """The service running as the chart's ServiceAccount, in in-cluster mode."""
    token = cluster.service_account_token(release.namespace, release.service_account)
    server = start_in_cluster(
        cluster, token, release.namespace, tmp_path_factory.mktemp("chart-sa")
    )
    try:
        wait_ready(server)
        yield server
    finally:
        stop(server)
