"""What the reads made as the caller cost the control plane, per read.

Needs the test control plane running (`make cluster-up`). Run by hand (or `make bench-reads`);
it prints figures and asserts nothing:

    uv run python benchmarks/caller_reads.py [--job too-big-3x1cpu] [-n 300]

The warm admission path in the `cache` read mode reads exactly three things from the API
server, as the caller: the Job, its Pods (label selector) and its Workload's Events (field
selector). This sends each of them `n` times, as the service sends them (the cache
ServiceAccount's token, impersonating alice with her groups), once as a quorum read (no
resourceVersion, the `impersonate` read mode) and once with resourceVersion=0 (the `cache` read
mode: the API server answers from its watch cache), and prints the CPU kube-apiserver and etcd
spent per read, from /proc/<pid>/stat, and the wall time.

Events are the outlier: Kubernetes keeps no watch cache for them (`DefaultWatchCacheSizes`,
k8s.io/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go sets events and
events.k8s.io/events to 0), so every Events list, resourceVersion=0 or not, is an etcd range
read of the namespace's Events that kube-apiserver decodes one by one and filters by the field
selector. Its cost grows with the namespace's Events, whatever the selector matches; the
number in team-a is printed. The sum per admission path is the floor a request of that query
costs the control plane on this machine whatever the service does, which bounds its
throughput (printed: 2 cores divided by that floor).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import ssl
import time
from typing import Any

import aiohttp
import yaml
from admission_path import STATE, api_env, cpu_seconds, token
from multidict import CIMultiDict

NAMESPACE = "team-a"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


def pids() -> dict[str, int]:
    recorded = json.loads((STATE / "pids.json").read_text())
    return {str(p["name"]): int(p["pid"]) for p in recorded}


def cache_server_token() -> tuple[str, ssl.SSLContext]:
    config = yaml.safe_load((STATE / "users" / "kueue-graphql-cache-server.kubeconfig").read_text())
    cluster = config["clusters"][0]["cluster"]
    authority = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return str(config["users"][0]["user"]["token"]), ssl.create_default_context(cadata=authority)


async def groups_of(http: aiohttp.ClientSession, url: str, user: str) -> list[str]:
    """The user's groups (SelfSubjectReview with their token: the userInfo a TokenReview gives)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    async with http.post(
        f"{url}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json=body,
        headers={"Authorization": f"Bearer {token(user)}"},
    ) as response:
        response.raise_for_status()
        info = (await response.json())["status"]["userInfo"]
    return list(info.get("groups") or [])


async def get(http: aiohttp.ClientSession, url: str, headers: Any, **params: str) -> Any:
    async with http.get(url, params=params, headers=headers) as response:
        response.raise_for_status()
        return json.loads(await response.read())


async def measure(args: argparse.Namespace) -> None:
    url, _ = api_env()
    service_token, context = cache_server_token()
    processes = pids()
    apiserver, etcd = processes["kube-apiserver"], processes["etcd"]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as http:
        admin = {"Authorization": f"Bearer {token('admin')}"}
        ns = f"{url}/api/v1/namespaces/{NAMESPACE}"
        job = await get(http, f"{url}/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{args.job}", admin)
        job_uid = job["metadata"]["uid"]
        workloads = await get(
            http,
            f"{url}{KUEUE}/namespaces/{NAMESPACE}/workloads",
            admin,
            labelSelector=f"kueue.x-k8s.io/job-uid={job_uid}",
        )
        workload_uid = workloads["items"][0]["metadata"]["uid"] if workloads["items"] else ""
        events = await get(http, f"{ns}/events", admin)
        headers: CIMultiDict[str] = CIMultiDict(Authorization=f"Bearer {service_token}")
        headers.add("Impersonate-User", args.user)
        for group in await groups_of(http, url, args.user):
            headers.add("Impersonate-Group", group)
        reads = {
            "Job (get)": (f"{url}/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{args.job}", {}),
            "Pods (list)": (
                f"{ns}/pods",
                {"labelSelector": f"batch.kubernetes.io/controller-uid={job_uid}"},
            ),
            "Events (list)": (
                f"{ns}/events",
                {"fieldSelector": f"involvedObject.uid={workload_uid}"},
            ),
        }
        print(
            f"job {NAMESPACE}/{args.job}, as {args.user} (impersonated by the cache "
            f"ServiceAccount), {args.n} reads each; {len(events['items'])} Events in {NAMESPACE}; "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        print(
            f"{'read':15} {'resourceVersion':16} {'apiserver ms':>12} {'etcd ms':>8} {'wall ms':>8}"
        )
        totals: dict[str, float] = {}
        for label, version in (("quorum", {}), ("0 (watch cache)", {"resourceVersion": "0"})):
            for name, (path, params) in reads.items():
                query = {**params, **version}
                await get(http, path, headers, **query)
                api0, etcd0, started = (
                    cpu_seconds(apiserver),
                    cpu_seconds(etcd),
                    time.perf_counter(),
                )
                for _ in range(args.n):
                    await get(http, path, headers, **query)
                wall = (time.perf_counter() - started) / args.n * 1000
                api_ms = (cpu_seconds(apiserver) - api0) / args.n * 1000
                etcd_ms = (cpu_seconds(etcd) - etcd0) / args.n * 1000
                totals[label] = totals.get(label, 0.0) + api_ms + etcd_ms
                print(f"{name:15} {label:16} {api_ms:12.2f} {etcd_ms:8.2f} {wall:8.2f}")
        for label, total in totals.items():
            print(
                f"admission path, resourceVersion {label}: {total:.1f} ms of control-plane CPU "
                f"per request -> at most {2000 / total:.0f} req/s on 2 cores with nothing else "
                "running"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--job", default="too-big-3x1cpu", help="a Job in team-a")
    parser.add_argument("--user", default="alice", help="the caller impersonated")
    parser.add_argument("-n", type=int, default=300, help="reads of each kind (bounded)")
    args = parser.parse_args()
    args.n = max(1, min(args.n, 5000))
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
