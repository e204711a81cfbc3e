"""`make demo`: the local control plane with its scenarios, the server against it, and GraphiQL.

Starts (or reuses) the control plane from tests/cluster, runs `kueue-graphql serve` in token-review
mode with the server's own ServiceAccount, then prints the URL, the GraphiQL link, a ready-to-paste
token and query, and a curl line. Ctrl-C stops the server; the control plane keeps running until
`make cluster-down` (so a second `make demo` starts in seconds).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from tests.cluster.driver import DEFAULT_STATE_DIR, Cluster, up

DEMO_SUBSCRIPTION = """subscription Live {
  diagnosis(namespace: "team-a", kind: "Job", name: "too-big-3x1cpu") {
    stage layer summary reasons { code } quota { verdict }
  }
}"""

DEMO_QUERY = """query AdmissionPath($ns: String!, $job: String!) {
  workloadFor(namespace: $ns, kind: "Job", name: $job) {
    name
    conditions { type status reason message }
    totalRequests { resource quantity }
    localQueue { name stopPolicy conditions { type status reason } }
    clusterQueue { name }
    job { name pods { name phase conditions { type status reason message } } }
    events { reason message }
  }
}"""


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((host, port)) != 0


def _wait_ready(url: str, server: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"kueue-graphql exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=3) as response:  # noqa: S310
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"kueue-graphql did not become ready at {url}/readyz within {timeout:.0f}s")


def main() -> int:
    state_dir = DEFAULT_STATE_DIR
    cluster = Cluster(state_dir)
    if cluster.is_healthy():
        print(f"Reusing the control plane already running in {state_dir}", file=sys.stderr)
    else:
        cluster = up(state_dir)

    host = "127.0.0.1"
    port = int(os.environ.get("KGQL_DEMO_PORT", "8080"))
    if not _port_free(host, port):
        raise SystemExit(f"port {port} is busy: set KGQL_DEMO_PORT to another port")
    url = f"http://{host}:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kueue_graphql.cli",
            "serve",
            "--kubeconfig",
            str(cluster.server_kubeconfig),
            "--auth-mode",
            "token-review",
            "--host",
            host,
            "--port",
            str(port),
        ],
    )
    try:
        _wait_ready(url, server)
        alice = cluster.token("alice")
        viewer = cluster.token("viewer")
        body = json.dumps(
            {"query": DEMO_QUERY, "variables": {"ns": "team-a", "job": "too-big-3x1cpu"}}
        )
        live_body = json.dumps({"query": DEMO_SUBSCRIPTION})
        print(
            f"""
kueue-graphql is serving {url}/graphql against the local control plane ({cluster.api_url}).

GraphiQL:  open {url}/graphql in a browser, and under "Headers" paste
           {{"Authorization": "Bearer {alice}"}}
           (alice is a tenant of team-a; viewer reads cluster-wide: {viewer})

Query (variables: {{"ns": "team-a", "job": "too-big-3x1cpu"}}):
{DEMO_QUERY}

A live answer (GraphiQL runs it over graphql-transport-ws with the same Headers):
{DEMO_SUBSCRIPTION}

From a shell:
  curl -s {url}/graphql -H 'Authorization: Bearer {alice}' \\
       -H 'Content-Type: application/json' -d '{body}'

The live answer over HTTP (multipart parts, one per change; Ctrl-C ends it):
  curl -sN {url}/graphql -H 'Authorization: Bearer {alice}' \\
       -H 'Content-Type: application/json' -H 'Accept: multipart/mixed;subscriptionSpec="1.0"' \\
       -d '{live_body}'

Scenario Jobs in team-a: too-big-3x1cpu, waits-on-stopped-queue, waits-on-missing-clusterqueue,
no-spot-toleration, over-borrowing-limit, admitted-but-unschedulable, healthy-running, finished-ok,
gpu-training, waits-for-approval, deactivated-by-admin.
kubectl as the same users: {cluster.kubectl_bin} --kubeconfig {state_dir}/users/alice.kubeconfig ...

Ctrl-C stops the server; `make cluster-down` stops the control plane.
""",
            flush=True,
        )
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
