"""Capture the scenario objects from the running test control plane into JSON fixtures.

Run by hand once the cluster is up and settled (`.cluster/env` exists):

    uv run python tests/diagnosis/capture_fixtures.py

For every scenario Job it writes tests/fixtures/captured/<job>.json with the Job, its Workload,
Pods, the Events about any of them, the LocalQueue, the ClusterQueue, every ClusterQueue, Cohort,
ResourceFlavor, AdmissionCheck and Node, and the visibility API's pending list, all read with the
admin kubeconfig and stored exactly as the API server returned them (managedFields dropped: they
are bookkeeping, not state). Objects that do not exist are stored as null and listed under
"absent". It also records, per test user, which of those reads the API server forbids that user
("forbidden"), so unit tests can replay the tenant's view with real RBAC answers. The service's
pure-logic tests (tests/unit/) read the Workloads from the same files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
STATE = REPO / ".cluster"
OUT = REPO / "tests" / "fixtures" / "captured"
NAMESPACE = "team-a"
SCENARIOS = (
    "too-big-3x1cpu",
    "waits-on-stopped-queue",
    "waits-on-missing-clusterqueue",
    "no-spot-toleration",
    "borrows-one-cpu",
    "over-borrowing-limit",
    "admitted-but-unschedulable",
    "healthy-running",
    "finished-ok",
    "gpu-training",
    "waits-for-approval",
    "deactivated-by-admin",
    "low-priority-victim",
    "high-priority-preemptor",
    "fails-with-exit-1",
    "not-queued",
)
USERS = ("alice", "viewer")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for line in (STATE / "env").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            env[key] = value
    return env


ENV = _env()
KUBECTL = ENV.get("KUBECTL", "kubectl")


class NotFoundError(Exception):
    pass


class ForbiddenError(Exception):
    pass


def _kubeconfig(user: str) -> str:
    if user == "admin":
        return str(STATE / "kubeconfig")
    return str(STATE / "users" / f"{user}.kubeconfig")


def _kubectl_json(args: list[str], user: str) -> Any:
    """Run kubectl as `user`; NotFound and Forbidden become exceptions the capture records."""
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", _kubeconfig(user), *args],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
    )
    if proc.returncode != 0:
        if "(NotFound)" in proc.stderr or "not found" in proc.stderr:
            raise NotFoundError(proc.stderr.strip())
        if "(Forbidden)" in proc.stderr or "forbidden" in proc.stderr:
            raise ForbiddenError(proc.stderr.strip())
        raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
    return _strip(json.loads(proc.stdout))


def kubectl_json(*args: str, user: str = "admin") -> Any:
    return _kubectl_json([*args, "-o", "json"], user)


def raw_json(path: str, user: str = "admin") -> Any:
    return _kubectl_json(["get", "--raw", path], user)


def _strip(obj: Any) -> Any:
    """Drop metadata.managedFields, recursively in lists."""
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        for value in obj.get("items", []) if isinstance(obj.get("items"), list) else []:
            _strip(value)
    return obj


def _items(obj: Any) -> list[Any]:
    return list(obj.get("items", []))


def capture(job_name: str) -> dict[str, Any]:
    absent: list[str] = []
    job = kubectl_json("get", "job", job_name, "-n", NAMESPACE)
    job_uid = job["metadata"]["uid"]
    workloads = _items(
        kubectl_json("get", "workloads", "-n", NAMESPACE, "-l", f"kueue.x-k8s.io/job-uid={job_uid}")
    )
    workload = workloads[0] if workloads else None
    if workload is None:
        absent.append("workload")
    pods = _items(
        kubectl_json(
            "get", "pods", "-n", NAMESPACE, "-l", f"batch.kubernetes.io/controller-uid={job_uid}"
        )
    )
    uids = {job_uid, *(p["metadata"]["uid"] for p in pods)}
    if workload is not None:
        uids.add(workload["metadata"]["uid"])
    events = [
        e
        for e in _items(kubectl_json("get", "events", "-n", NAMESPACE))
        if e.get("involvedObject", {}).get("uid") in uids
    ]
    queue = (workload or {}).get("spec", {}).get("queueName") or job["metadata"].get(
        "labels", {}
    ).get("kueue.x-k8s.io/queue-name")
    local_queue = None
    try:
        if queue is None:  # a Job Kueue does not manage names no queue at all
            raise NotFoundError("no queue-name label")
        local_queue = kubectl_json("get", "localqueue", queue, "-n", NAMESPACE)
    except NotFoundError:
        absent.append("localQueue")
    cq_name = ((workload or {}).get("status", {}).get("admission") or {}).get("clusterQueue") or (
        local_queue or {}
    ).get("spec", {}).get("clusterQueue")
    cluster_queue = None
    try:
        if cq_name is None:
            raise NotFoundError("no ClusterQueue named")
        cluster_queue = kubectl_json("get", "clusterqueue", cq_name)
    except NotFoundError:
        absent.append("clusterQueue")
    pending: Any = None
    try:
        if queue is None:
            raise NotFoundError("no queue-name label")
        pending = raw_json(
            f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/localqueues/"
            f"{queue}/pendingworkloads"
        )
    except (NotFoundError, RuntimeError) as exc:
        absent.append("pendingWorkloads")
        print(f"  visibility API for {queue}: {exc}", file=sys.stderr)

    forbidden: dict[str, list[str]] = {}
    for user in USERS:
        denied = []
        reads: list[tuple[str, tuple[str, ...]]] = [
            ("job", ("get", "job", job_name, "-n", NAMESPACE)),
            ("workload", ("get", "workloads", "-n", NAMESPACE)),
            ("pods", ("get", "pods", "-n", NAMESPACE)),
            ("events", ("get", "events", "-n", NAMESPACE)),
            ("localQueue", ("get", "localqueues", "-n", NAMESPACE)),
            ("clusterQueue", ("get", "clusterqueue", str(cq_name))),
            ("clusterQueues", ("get", "clusterqueues")),
            ("cohorts", ("get", "cohorts")),
            ("resourceFlavors", ("get", "resourceflavors")),
            ("admissionChecks", ("get", "admissionchecks")),
            ("nodes", ("get", "nodes")),
        ]
        for key, args in reads:
            try:
                kubectl_json(*args, user=user)
            except ForbiddenError:
                denied.append(key)
            except NotFoundError:
                pass
        try:
            raw_json(
                f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/localqueues/"
                f"{queue}/pendingworkloads",
                user=user,
            )
        except ForbiddenError:
            denied.append("pendingWorkloads")
        except (NotFoundError, RuntimeError):
            pass
        forbidden[user] = denied

    return {
        "scenario": job_name,
        "job": job,
        "workload": workload,
        "pods": pods,
        "events": events,
        "localQueue": local_queue,
        "clusterQueue": cluster_queue,
        "clusterQueues": _items(kubectl_json("get", "clusterqueues")),
        "cohorts": _items(kubectl_json("get", "cohorts")),
        "resourceFlavors": _items(kubectl_json("get", "resourceflavors")),
        "admissionChecks": _items(kubectl_json("get", "admissionchecks")),
        "nodes": _items(kubectl_json("get", "nodes")),
        "pendingWorkloads": pending,
        "absent": absent,
        "forbidden": forbidden,
    }


def _versions() -> dict[str, str]:
    version = json.loads(
        subprocess.run(
            [KUBECTL, "--kubeconfig", _kubeconfig("admin"), "version", "-o", "json"],
            capture_output=True,
            text=True,
            env=ENV,
            check=True,
        ).stdout
    )
    kueue = "unknown"
    go_mod = REPO / "tests" / "cluster" / "kueue" / "go.mod"
    for line in go_mod.read_text().splitlines():
        fields = line.split()
        if "sigs.k8s.io/kueue" in fields:
            kueue = fields[fields.index("sigs.k8s.io/kueue") + 1]
    return {
        "kubernetes": version.get("serverVersion", {}).get("gitVersion", "unknown"),
        "kubectl": version.get("clientVersion", {}).get("gitVersion", "unknown"),
        "kueue": kueue,
    }


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    versions = _versions()
    captured_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    for job_name in SCENARIOS:
        print(f"capturing {job_name}", file=sys.stderr)
        data = capture(job_name)
        data["capturedAt"] = captured_at
        data["versions"] = versions
        (OUT / f"{job_name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    (OUT / "VERSIONS.json").write_text(
        json.dumps({"capturedAt": captured_at, **versions}, indent=1, sort_keys=True) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
