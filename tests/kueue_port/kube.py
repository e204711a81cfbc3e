"""A small synchronous Kubernetes REST client for the port runner (admin token, the cluster's CA).

kubectl costs a process per call; the runner polls every few hundred milliseconds for dozens of
cases at once, so it talks to the API server directly over one pooled HTTP/1.1 client.
"""

from __future__ import annotations

import json
import ssl
import time
from typing import Any

import httpx

from tests.cluster.driver import Cluster

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"

# kind -> (collection path prefix, resource, namespaced)
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Topology": (KUEUE, "topologies", False),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "Job": ("/apis/batch/v1", "jobs", True),
    "LimitRange": ("/api/v1", "limitranges", True),
    "ResourceFlavor": (KUEUE, "resourceflavors", False),
    "ClusterQueue": (KUEUE, "clusterqueues", False),
    "Cohort": (KUEUE, "cohorts", False),
    "AdmissionCheck": (KUEUE, "admissionchecks", False),
    "WorkloadPriorityClass": (KUEUE, "workloadpriorityclasses", False),
    "LocalQueue": (KUEUE, "localqueues", True),
    "Workload": (KUEUE, "workloads", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
}


class KubeError(RuntimeError):
    pass


def path(kind: str, name: str | None = None, namespace: str | None = None) -> str:
    base, resource, namespaced = RESOURCES[kind]
    out = base + (f"/namespaces/{namespace}" if namespaced and namespace else "") + f"/{resource}"
    return out + (f"/{name}" if name else "")


class Kube:
    def __init__(
        self, api_url: str, token: str, ca_file: str, kueue_metrics_url: str | None = None
    ) -> None:
        self.kueue_metrics_url = kueue_metrics_url
        self.retried_creates: list[str] = []
        self._http = httpx.Client(
            base_url=api_url,
            headers={"Authorization": f"Bearer {token}"},
            verify=ssl.create_default_context(cafile=ca_file),
            timeout=30,
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=16),
        )

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        for attempt in range(5):
            try:
                return self._http.request(method, url, **kwargs)
            except httpx.TransportError:
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")

    def _ok(self, response: httpx.Response, what: str) -> dict[str, Any]:
        if response.status_code >= 300:
            raise KubeError(f"{what}: HTTP {response.status_code}: {response.text[:500]}")
        body: dict[str, Any] = response.json()
        return body

    def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        kind = manifest["kind"]
        namespace = manifest["metadata"].get("namespace")
        url = path(kind, namespace=namespace)
        what = f"create {kind} {manifest['metadata'].get('name')}"
        # Kueue's webhooks may refuse briefly while a referenced object's cache catches up.
        for attempt in range(20):
            response = self._call("POST", url, json=manifest)
            if response.status_code == 409 and attempt > 0:
                # An earlier attempt that answered 5xx had created it after all.
                created = self.get(kind, manifest["metadata"]["name"], namespace)
                if created is not None:
                    return created
            if response.status_code < 500 or attempt == 19:
                return self._ok(response, what)
            self.retried_creates.append(f"{what}: HTTP {response.status_code}")
            time.sleep(0.25)
        raise AssertionError("unreachable")

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        response = self._call("GET", path(kind, name, namespace))
        if response.status_code == 404:
            return None
        return self._ok(response, f"get {kind} {namespace}/{name}")

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self._ok(
            self._call("GET", path(kind, namespace=namespace)), f"list {kind}"
        )["items"]
        return items

    def get_path(self, url: str) -> dict[str, Any] | None:
        """GET any API path (e.g. Kueue's visibility API); None when it is not found."""
        response = self._call("GET", url)
        if response.status_code == 404:
            return None
        return self._ok(response, f"get {url}")

    def kueue_metrics(self) -> str:
        """Kueue's Prometheus metrics text (same token; the serving cert is from the cluster CA)."""
        if not self.kueue_metrics_url:
            raise KubeError("no Kueue metrics URL given")
        response = self._call("GET", self.kueue_metrics_url)
        if response.status_code != 200:
            raise KubeError(f"Kueue metrics: HTTP {response.status_code}")
        return response.text

    def merge_patch(
        self, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        response = self._call(
            "PATCH",
            path(kind, name, namespace),
            json=patch,
            headers={"Content-Type": "application/merge-patch+json"},
        )
        return self._ok(response, f"patch {kind} {namespace}/{name}")

    def update_status(self, obj: dict[str, Any]) -> bool:
        """PUT the status subresource; False on a conflict (the caller re-reads and retries)."""
        meta = obj["metadata"]
        url = path(obj["kind"], meta["name"], meta.get("namespace")) + "/status"
        response = self._call("PUT", url, json=obj)
        if response.status_code == 409:
            return False
        self._ok(response, f"update status of {obj['kind']} {meta['name']}")
        return True

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        response = self._call(
            "DELETE", path(kind, name, namespace), json={"propagationPolicy": "Background"}
        )
        if response.status_code not in (200, 202, 404):
            self._ok(response, f"delete {kind} {namespace}/{name}")


def admin_client(cluster: Cluster) -> Kube:
    """A client as admin for this control plane, with Kueue's metrics endpoint."""
    ports = json.loads((cluster.state_dir / "ports.json").read_text())
    return Kube(
        cluster.api_url,
        cluster.token("admin"),
        str(cluster.ca_file),
        f"https://127.0.0.1:{ports['kueue-metrics']}/metrics",
    )
