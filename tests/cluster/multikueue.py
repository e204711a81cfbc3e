"""MultiKueue in the test environment: a worker control plane beside the manager (issue 25).

Opt-in (`SWITCH`, KGQL_MULTIKUEUE=1): switched off (the default) nothing here is started and the
manager holds no MultiKueue object. Switched on, the driver starts each worker of `WORKERS` as a
second control plane of the same binaries (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, Kueue v0.17.0, each its own process on free loopback ports) in
`<state dir>/<worker>/` (manifests/worker/; its quota in 30-queues-<worker>.yaml), then gives the
manager what Kueue's MultiKueue needs (`kubeconfig_secret`, manifests/80-multikueue.yaml) and the
scenario Jobs (manifests/81-*, 82-*).

Kueue v0.17.0 needs nothing in its Configuration for this: the `MultiKueue` gate is beta and on,
`MultiKueueBatchJobWithManagedBy` is GA, and the `multiKueue` section's defaults (origin
`multikueue`, gcInterval 1m, workerLostTimeout 15m, the all-at-once dispatcher) suit the tests.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml

SWITCH = "KGQL_MULTIKUEUE"
# The worker control planes, by the MultiKueueCluster name the manager knows each by.
# Two fit the 2-core machine: each adds 14 s to the start, ~0.8 GiB RSS and 2 % of a core at
# idle (tests/cluster/README.md, "MultiKueue").
WORKERS = ("worker-1", "worker-2")
# A MultiKueueCluster whose kubeconfig names a loopback port nothing listens on.
UNREACHABLE = "worker-unreachable"
# On each worker: the identity the manager's Kueue uses there, and the service's read-only one.
KUEUE_SERVICE_ACCOUNT = ("kueue-system", "multikueue-manager")
READER_SERVICE_ACCOUNT = ("kueue-graphql", "kueue-graphql-reader")
KUEUE_NAMESPACE = "kueue-system"
WORKER_MANIFESTS = Path(__file__).resolve().parent / "manifests" / "worker"


def enabled(value: str | None) -> bool:
    """Whether the switch's `value` turns MultiKueue on; ValueError naming the accepted values."""
    text = (value or "").strip()
    if text in ("", "0"):
        return False
    if text == "1":
        return True
    raise ValueError(f"{SWITCH}={value!r}: accepted values are 1 (on), 0, empty or unset (off)")


def secret_name(cluster: str) -> str:
    """The Secret in kueue-system holding the kubeconfig of the MultiKueueCluster `cluster`."""
    return "multikueue-unreachable" if cluster == UNREACHABLE else f"multikueue-{cluster}"


def kubeconfig_document(server: str, ca_pem: bytes, user: str, token: str) -> dict[str, Any]:
    """A kubeconfig Kueue's MultiKueue accepts: CA data inline, a bearer token (no file paths,
    no exec plugins: multikueuecluster.go validateKubeconfig refuses those)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "worker",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "worker", "user": user}}],
        "current-context": user,
    }


def kubeconfig_secret(cluster: str, kubeconfig: dict[str, Any]) -> dict[str, Any]:
    """The Secret a MultiKueueCluster names (`clusterSource.kubeConfig.location`), key
    `kubeconfig`."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(cluster), "namespace": KUEUE_NAMESPACE},
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()},
    }


def process_rss_mib(pid: int) -> float:
    """Resident memory of one process (VmRSS), 0 when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rss_by_process(state_dir: Path) -> dict[str, float]:
    """RSS in MiB of each process a control plane's pids.json records (its own, not a worker's)."""
    pid_file = state_dir / "pids.json"
    if not pid_file.exists():
        return {}
    return {
        entry["name"]: process_rss_mib(int(entry["pid"]))
        for entry in json.loads(pid_file.read_text())
    }


def reader_kubeconfig(worker_dir: Path) -> Path:
    """The kubeconfig of `READER_SERVICE_ACCOUNT` on the worker of `worker_dir`."""
    return worker_dir / "users" / "kueue-graphql-reader.kubeconfig"


def worker_dirs(state_dir: Path) -> list[Path]:
    """The worker state directories under a manager's state directory that exist."""
    return [state_dir / name for name in WORKERS if (state_dir / name).is_dir()]
