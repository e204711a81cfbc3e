"""Start, inspect and stop the real Kubernetes + Kueue control plane used by tests and `make demo`.

    python -m tests.cluster.driver up       # build what is missing, start, apply scenarios
    python -m tests.cluster.driver down     # stop every process started, remove .cluster/
    python -m tests.cluster.driver status   # is it up?

Processes (each its own): embedded etcd, kube-apiserver, kube-controller-manager, kube-scheduler
(all from k8s.io/kubernetes), and the Kueue manager (sigs.k8s.io/kueue). Everything listens on
127.0.0.1 on free ports. State lives in `.cluster/` (git-ignored): kubeconfigs, user tokens, PKI,
logs, the etcd data and `env`.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.cluster import build, integrations, multikueue, pki
from tests.cluster.progress import Progress

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = Path(__file__).resolve().parent / "manifests"
# KGQL_CLUSTER_DIR runs a second, independent control plane beside the default one.
DEFAULT_STATE_DIR = Path(os.environ.get("KGQL_CLUSTER_DIR", REPO / ".cluster"))

# name -> groups. admin's token is in system:masters like its client certificate.
USERS: dict[str, tuple[str, ...]] = {
    "admin": ("system:masters",),
    "alice": (),
    "bob": (),
    "viewer": (),
    "nobody": (),
    "grace": ("engineering", "team-a-readers"),
    # RBAC limited by resourceNames: `get` on named objects only, no list.
    "carol": (),
    # Read through an aggregated ClusterRole (the clusterrole-aggregation controller fills it).
    "dave": (),
}

SERVER_SERVICE_ACCOUNT = ("kueue-graphql", "kueue-graphql")
# The same service in `serve --read-mode cache`: it also may get/list/watch the Kueue kinds.
CACHE_SERVER_SERVICE_ACCOUNT = ("kueue-graphql", "kueue-graphql-cache")

# CRDs whose conversion webhook Kueue serves (config/components/crd/patches/webhook_in_*).
_CONVERTED_CRDS = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")

# Pods the driver moves along as a kubelet would (there is none): job name -> final phase.
SIMULATED_KUBELET = {
    ("team-a", "healthy-running"): "Running",
    ("team-a", "borrows-one-cpu"): "Running",
    ("team-a", "gpu-training"): "Running",
    ("team-a", "finished-ok"): "Succeeded",
    ("team-a", "fails-with-exit-1"): "Failed",
    ("team-a", "not-queued"): "Running",
    ("team-a", "low-priority-victim"): "Running",
    ("team-b", "bob-job"): "Running",
}


class ClusterError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _set_parent_death_signal() -> None:
    """Runs in the child: die with the parent (used when pytest owns the cluster)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


@dataclass
class Cluster:
    """A running control plane, as described by its state directory (see INTERFACE.md)."""

    state_dir: Path

    @property
    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for line in (self.state_dir / "env").read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                values[key.removeprefix("export ").strip()] = value.strip().strip("'\"")
        return values

    @property
    def api_url(self) -> str:
        return self.env["KUBE_API_URL"]

    @property
    def ca_file(self) -> Path:
        return self.state_dir / "pki" / "ca.crt"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def kubectl_bin(self) -> Path:
        return self.state_dir / "bin" / "kubectl"

    @property
    def server_kubeconfig(self) -> Path:
        return self.state_dir / "users" / "kueue-graphql-server.kubeconfig"

    @property
    def cache_server_kubeconfig(self) -> Path:
        return self.state_dir / "users" / "kueue-graphql-cache-server.kubeconfig"

    def kubeconfig(self, user: str) -> Path:
        if user == "admin":
            return self.admin_kubeconfig
        return self.state_dir / "users" / f"{user}.kubeconfig"

    def token(self, user: str) -> str:
        return (self.state_dir / "users" / f"{user}.token").read_text().strip()

    def kubectl(
        self,
        *args: str,
        user: str = "admin",
        check: bool = True,
        timeout: float = 180,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl as a test user (or with an explicit kubeconfig). `timeout` only stops a
        kubectl that hangs: a call that does much work (deleting hundreds of objects) passes
        its own, bounded by that work."""
        config = kubeconfig or self.kubeconfig(user)
        result = subprocess.run(
            [str(self.kubectl_bin), "--kubeconfig", str(config), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise ClusterError(
                f"kubectl {' '.join(args)} (as {user}) failed: {result.stderr.strip()}"
            )
        return result

    def apply_objects(self, objects: list[dict[str, Any]]) -> None:
        """`kubectl apply` as admin of these objects (a List on stdin)."""
        manifest = {"apiVersion": "v1", "kind": "List", "items": objects}
        proc = subprocess.run(
            [str(self.kubectl_bin), "--kubeconfig", str(self.admin_kubeconfig), "apply", "-f", "-"],
            input=json.dumps(manifest),
            text=True,
            capture_output=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]

    def get_json(self, *args: str, user: str = "admin") -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json", user=user).stdout)

    def service_account_token(
        self, namespace: str, name: str, expiration_seconds: int = 3600
    ) -> str:
        """A real bound ServiceAccount token from the TokenRequest API."""
        return self.kubectl(
            "create", "token", name, "-n", namespace, f"--duration={expiration_seconds}s"
        ).stdout.strip()

    def api_server_pid(self) -> int:
        """The kube-apiserver of this control plane (pids.json), checked not to be recycled."""
        recorded = json.loads((self.state_dir / "pids.json").read_text())
        pids = [int(e["pid"]) for e in recorded if e["name"] == "kube-apiserver"]
        if len(pids) != 1 or not _belongs_to(pids[0], self.state_dir):
            raise ClusterError(f"no single kube-apiserver of {self.state_dir} in {recorded}")
        return pids[0]

    @contextlib.contextmanager
    def api_server_frozen(self, timeout: float = 5.0) -> Iterator[int]:
        """SIGSTOP the kube-apiserver until the block ends (SIGCONT, always).

        The block starts only once every thread of the process is seen stopped in /proc: kill()
        returns before a group stop is complete, and a thread still running on a loaded machine
        could answer one more request."""
        pid = self.api_server_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + timeout
            while not _all_threads_stopped(pid):
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"kube-apiserver {pid} still running {timeout:g} s after SIGSTOP"
                    )
                time.sleep(0.005)
            yield pid
        finally:
            os.kill(pid, signal.SIGCONT)

    def is_healthy(self) -> bool:
        if not (self.state_dir / "env").is_file() or not self.kubectl_bin.exists():
            return False
        try:
            # Generous: a timeout here on a busy machine would restart (replace) the cluster.
            result = self.kubectl("get", "--raw", "/readyz", check=False, timeout=60)
        except (subprocess.TimeoutExpired, OSError):
            return False
        return result.returncode == 0 and result.stdout.strip() == "ok"


# ---------------------------------------------------------------------------------------------
# Starting


class _Launcher:
    """Starts component processes, remembers them in pids.json, logs to logs/<name>.log."""

    def __init__(self, state_dir: Path, tie_to_parent: bool) -> None:
        self.state_dir = state_dir
        self.logs = state_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.tie_to_parent = tie_to_parent
        self.pid_file = state_dir / "pids.json"

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.state_dir,
            start_new_session=True,
            preexec_fn=_set_parent_death_signal if self.tie_to_parent else None,
        )
        log.close()
        recorded = json.loads(self.pid_file.read_text()) if self.pid_file.exists() else []
        recorded.append({"name": name, "pid": process.pid})
        self.pid_file.write_text(json.dumps(recorded, indent=1))
        return process


# How long the start waits for any one thing (a component ready, a CRD established, Kueue acting
# on a scenario). On an idle machine each takes seconds; the bound only says when to give up, so
# it is generous enough for a machine whose CPUs are shared with several other busy processes.
START_SECONDS = 300.0


def _wait(
    what: str,
    check: Callable[[], bool],
    timeout: float,
    progress: Progress,
    log: Path | None,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll `check` until it holds, at most `timeout` seconds; with `process`, fail at once
    when that process has exited (what it would have served never comes)."""
    deadline = time.monotonic() + timeout
    last_note = time.monotonic()
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # noqa: S110 - any failure here just means "not ready yet"
            pass
        if process is not None and process.poll() is not None:
            raise ClusterError(
                f"{what}: the process exited with code {process.returncode}{_log_tail(log)}"
            )
        if time.monotonic() - last_note > 15:
            progress.note(f"still waiting for {what}...")
            last_note = time.monotonic()
        time.sleep(0.5)
    raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}{_log_tail(log)}")


def _log_tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
    return f"\nlast lines of {log}:\n{tail}"


def crds_not_established(listed: list[dict[str, Any]], names: list[str]) -> dict[str, str]:
    """The CRDs of `names` that are not Established in `listed` (the items of `kubectl get crd
    -o json`), each with what was seen instead. A CRD just created has a status without
    conditions until the API server's controller reaches it: that is "not yet", not an error
    (`kubectl wait --for=condition=Established` fails on it with `.status.conditions accessor
    error: <nil>`)."""
    by_name = {item.get("metadata", {}).get("name"): item for item in listed}
    missing: dict[str, str] = {}
    for name in names:
        item = by_name.get(name)
        if item is None:
            missing[name] = "not created"
            continue
        established = _conditions(item).get("Established")
        if established is None:
            missing[name] = "no Established condition in its status yet"
        elif established.get("status") != "True":
            detail = ": ".join(
                str(part)
                for part in (established.get("reason"), established.get("message"))
                if part
            )
            missing[name] = f"Established={established.get('status')}" + (
                f" ({detail})" if detail else ""
            )
    return missing


def _https_ok(url: str, context: ssl.SSLContext) -> bool:
    try:
        with urllib.request.urlopen(url, context=context, timeout=5) as response:  # noqa: S310
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _kubeconfig(
    path: Path, server: str, ca_pem: bytes, user: str, credentials: dict[str, str]
) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kueue-graphql-test",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": user, "context": {"cluster": "kueue-graphql-test", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


def _cert_credentials(pair: pki.CertPair) -> dict[str, str]:
    return {
        "client-certificate-data": base64.b64encode(pair.cert.read_bytes()).decode(),
        "client-key-data": base64.b64encode(pair.key.read_bytes()).decode(),
    }


def _webhook_configurations(
    kueue_dir: Path,
    webhook_port: int,
    ca_pem: bytes,
    selection: tuple[integrations.Controller, ...],
) -> list[Any]:
    """Only the webhooks Kueue serves with the integrations it is configured with."""
    served = integrations.kueue_webhook_paths(selection)
    source = kueue_dir / "config" / "components" / "webhook" / "manifests.yaml"
    documents = [d for d in yaml.safe_load_all(source.read_text()) if d]
    ca_bundle = base64.b64encode(ca_pem).decode()
    result = []
    for document in documents:
        kept = []
        for hook in document.get("webhooks", []):
            path = hook["clientConfig"]["service"]["path"]
            if not any(marker in path for marker in served):
                continue
            hook["clientConfig"] = {
                "url": f"https://127.0.0.1:{webhook_port}{path}",
                "caBundle": ca_bundle,
            }
            if selection:
                integrations.scope_kueue_webhook(hook)
            kept.append(hook)
        document["metadata"]["name"] = "kueue-" + document["metadata"]["name"]
        document["webhooks"] = kept
        result.append(document)
    return result


def _crds(kueue_dir: Path, webhook_port: int, ca_pem: bytes) -> list[Any]:
    ca_bundle = base64.b64encode(ca_pem).decode()
    documents = []
    for path in sorted((kueue_dir / "config" / "components" / "crd" / "bases").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["plural"] in _CONVERTED_CRDS:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{webhook_port}/convert",
                        "caBundle": ca_bundle,
                    },
                    "conversionReviewVersions": ["v1"],
                },
            }
        documents.append(crd)
    return documents


def _kueue_module_dir(progress: Progress) -> Path:
    listed = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue"],
        cwd=build.KUEUE.module_dir,
        capture_output=True,
        text=True,
        check=True,
    )
    directory = Path(listed.stdout.strip())
    progress.note(f"Kueue manifests from {directory}")
    return directory


def selected_integrations() -> tuple[integrations.Controller, ...]:
    """The controllers KGQL_INTEGRATIONS switches on (none by default)."""
    try:
        return integrations.selected(os.environ.get(integrations.SWITCH))
    except ValueError as error:
        raise ClusterError(str(error)) from None


def multikueue_enabled() -> bool:
    """Whether KGQL_MULTIKUEUE=1 asks for MultiKueue worker control planes (off by default)."""
    try:
        return multikueue.enabled(os.environ.get(multikueue.SWITCH))
    except ValueError as error:
        raise ClusterError(str(error)) from None


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", []) or []}


@dataclass(frozen=True)
class _Plane:
    """What a started kube-apiserver (with etcd, controller-manager, scheduler) leaves to the
    steps after it: its ports, URL and CA, and what Kueue is started with."""

    ports: dict[str, int]
    api_url: str
    ca: pki.CertificateAuthority
    bin_dir: Path
    kueue_kubeconfig: Path
    kueue_certs: Path
    apiserver: subprocess.Popen[bytes]


class _Starter:
    def __init__(self, state_dir: Path, progress: Progress, tie_to_parent: bool) -> None:
        self.state = state_dir
        self.progress = progress
        self.launcher = _Launcher(state_dir, tie_to_parent)
        self.cluster = Cluster(state_dir)
        self.integrations = selected_integrations()
        self.users: dict[str, tuple[str, ...]] = USERS
        self.multikueue = multikueue_enabled()

    def _start_plane(self, kube_bin: Path, kueue_bin: Path) -> _Plane:
        """Ports, PKI, users, etcd, kube-apiserver (ready), controller-manager and scheduler."""
        bin_dir = self.state / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        # Symlinks named after each component: kcp dispatches on its own name.
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"):
            (bin_dir / name).symlink_to(kube_bin / "kcp")
        (bin_dir / "etcd").symlink_to(kube_bin / "etcd")
        (bin_dir / "kueue").symlink_to(kueue_bin / "kueue")

        ports = {
            name: _free_port()
            for name in (
                "etcd",
                "etcd-peer",
                "apiserver",
                "controller-manager",
                "scheduler",
                "kueue-webhook",
                "kueue-metrics",
                "kueue-health",
                "kueue-visibility",
                *integrations.port_names(self.integrations),
            )
        }
        (self.state / "ports.json").write_text(json.dumps(ports, indent=1))
        api_url = f"https://127.0.0.1:{ports['apiserver']}"

        progress = self.progress
        progress.step("generating certificates, keys and user tokens")
        pki_dir = self.state / "pki"
        pki_dir.mkdir()
        ca = pki.CertificateAuthority(pki_dir, "ca")
        front_proxy_ca = pki.CertificateAuthority(pki_dir, "front-proxy-ca")
        apiserver_cert = ca.issue(
            "apiserver",
            "kube-apiserver",
            dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
            ip_addresses=("127.0.0.1",),
            server=True,
        )
        front_proxy_client = front_proxy_ca.issue(
            "front-proxy-client", "front-proxy-client", client=True
        )
        admin_cert = ca.issue("admin", "admin", organizations=("system:masters",), client=True)
        kcm_cert = ca.issue("controller-manager", "system:kube-controller-manager", client=True)
        scheduler_cert = ca.issue("scheduler", "system:kube-scheduler", client=True)
        # Kueue's own RBAC (config/components/rbac) is large; the test cluster gives the manager
        # system:masters instead. Callers' access is still decided by RBAC as usual.
        kueue_cert = ca.issue(
            "kueue-manager", "kueue-manager", organizations=("system:masters",), client=True
        )
        sa_keys = pki.write_service_account_keys(pki_dir)
        kueue_certs = self.state / "kueue"
        for sub in ("webhook", "visibility", "metrics"):
            (kueue_certs / sub).mkdir(parents=True)
            pair = ca.issue(
                f"kueue-{sub}",
                f"kueue-{sub}",
                dns_names=(
                    "localhost",
                    "kueue-visibility-server.kueue-system.svc",
                    "kueue-webhook-service.kueue-system.svc",
                ),
                ip_addresses=("127.0.0.1",),
                server=True,
            )
            shutil.copy(pair.cert, kueue_certs / sub / "tls.crt")
            shutil.copy(pair.key, kueue_certs / sub / "tls.key")
            shutil.copy(ca.pair.cert, kueue_certs / sub / "ca.crt")

        users_dir = self.state / "users"
        users_dir.mkdir()
        token_lines = []
        for index, (user, groups) in enumerate(self.users.items()):
            token = secrets.token_urlsafe(32)
            (users_dir / f"{user}.token").write_text(token + "\n")
            (users_dir / f"{user}.token").chmod(0o600)
            # The groups column only when there are groups: `""` would be one empty group.
            groups_column = f',"{",".join(groups)}"' if groups else ""
            token_lines.append(f"{token},{user},uid-{index}-{user}{groups_column}")
            if user != "admin":
                _kubeconfig(
                    users_dir / f"{user}.kubeconfig", api_url, ca.pem, user, {"token": token}
                )
        tokens_csv = pki_dir / "tokens.csv"
        tokens_csv.write_text("\n".join(token_lines) + "\n")
        tokens_csv.chmod(0o600)

        _kubeconfig(
            self.cluster.admin_kubeconfig, api_url, ca.pem, "admin", _cert_credentials(admin_cert)
        )
        kcm_kubeconfig = self.state / "controller-manager.kubeconfig"
        _kubeconfig(
            kcm_kubeconfig, api_url, ca.pem, "controller-manager", _cert_credentials(kcm_cert)
        )
        scheduler_kubeconfig = self.state / "scheduler.kubeconfig"
        _kubeconfig(
            scheduler_kubeconfig, api_url, ca.pem, "scheduler", _cert_credentials(scheduler_cert)
        )
        kueue_kubeconfig = self.state / "kueue.kubeconfig"
        _kubeconfig(
            kueue_kubeconfig, api_url, ca.pem, "kueue-manager", _cert_credentials(kueue_cert)
        )

        progress.step("starting etcd")
        etcd_log = self.launcher.logs / "etcd.log"
        etcd = self.launcher.start(
            "etcd",
            [
                str(bin_dir / "etcd"),
                f"--data-dir={self.state / 'etcd'}",
                f"--listen-client-url=http://127.0.0.1:{ports['etcd']}",
                f"--listen-peer-url=http://127.0.0.1:{ports['etcd-peer']}",
            ],
        )
        _wait(
            "etcd /health",
            lambda: b"true"
            in urllib.request.urlopen(f"http://127.0.0.1:{ports['etcd']}/health", timeout=3).read(),
            START_SECONDS,
            progress,
            etcd_log,
            etcd,
        )

        progress.step("starting kube-apiserver")
        apiserver_log = self.launcher.logs / "kube-apiserver.log"
        apiserver = self.launcher.start(
            "kube-apiserver",
            [
                str(bin_dir / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={ports['apiserver']}",
                f"--cert-dir={self.state / 'apiserver'}",
                f"--tls-cert-file={apiserver_cert.cert}",
                f"--tls-private-key-file={apiserver_cert.key}",
                f"--client-ca-file={ca.pair.cert}",
                f"--token-auth-file={tokens_csv}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa_keys.cert}",
                f"--service-account-signing-key-file={sa_keys.key}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--endpoint-reconciler-type=none",
                "--allow-privileged=true",
                "--profiling=false",
                f"--requestheader-client-ca-file={front_proxy_ca.pair.cert}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-uid-headers=X-Remote-Uid",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={front_proxy_client.cert}",
                f"--proxy-client-key-file={front_proxy_client.key}",
            ],
        )
        context = ssl.create_default_context(cafile=str(ca.pair.cert))
        context.load_cert_chain(str(admin_cert.cert), str(admin_cert.key))
        _wait(
            "kube-apiserver /readyz",
            lambda: _https_ok(f"{api_url}/readyz", context),
            START_SECONDS,
            progress,
            apiserver_log,
            apiserver,
        )
        self._write_env(api_url)

        progress.step("starting kube-controller-manager and kube-scheduler")
        self.launcher.start(
            "kube-controller-manager",
            [
                str(bin_dir / "kube-controller-manager"),
                f"--kubeconfig={kcm_kubeconfig}",
                f"--authentication-kubeconfig={kcm_kubeconfig}",
                f"--authorization-kubeconfig={kcm_kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['controller-manager']}",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--root-ca-file={ca.pair.cert}",
                "--controllers=job-controller,serviceaccount-controller,"
                "garbage-collector-controller,namespace-controller,"
                "root-ca-certificate-publisher-controller,clusterrole-aggregation-controller"
                + "".join(
                    f",{name}"
                    for name in integrations.controller_manager_controllers(self.integrations)
                ),
            ],
        )
        self.launcher.start(
            "kube-scheduler",
            [
                str(bin_dir / "kube-scheduler"),
                f"--kubeconfig={scheduler_kubeconfig}",
                f"--authentication-kubeconfig={scheduler_kubeconfig}",
                f"--authorization-kubeconfig={scheduler_kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['scheduler']}",
                "--leader-elect=false",
            ],
        )
        return _Plane(ports, api_url, ca, bin_dir, kueue_kubeconfig, kueue_certs, apiserver)

    def _install_kueue(self, plane: _Plane, kueue_dir: Path, before_webhooks: Path) -> None:
        """Kueue's CRDs (Established), the manifest `before_webhooks`, then Kueue's webhooks."""
        crds = _crds(kueue_dir, plane.ports["kueue-webhook"], plane.ca.pem)
        self._apply_documents("kueue-crds", crds)
        self._wait_crds_established([crd["metadata"]["name"] for crd in crds], plane.apiserver)
        self._apply_file(before_webhooks)
        self._apply_documents(
            "kueue-webhooks",
            _webhook_configurations(
                kueue_dir, plane.ports["kueue-webhook"], plane.ca.pem, self.integrations
            ),
        )

    def _start_kueue(self, plane: _Plane) -> subprocess.Popen[bytes]:
        """The Kueue manager, waited until ready and its webhooks answer."""
        kueue_config = self.state / "kueue" / "config.yaml"
        kueue_config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "namespace": "kueue-system",
                    "health": {
                        "healthProbeBindAddress": f"127.0.0.1:{plane.ports['kueue-health']}"
                    },
                    "metrics": {"bindAddress": f"127.0.0.1:{plane.ports['kueue-metrics']}"},
                    "webhook": {
                        "port": plane.ports["kueue-webhook"],
                        "host": "127.0.0.1",
                        "certDir": str(plane.kueue_certs / "webhook"),
                    },
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "clientConnection": {"qps": 50, "burst": 100},
                    **integrations.kueue_configuration(self.integrations),
                    "visibilityServer": {
                        "bindAddress": "127.0.0.1",
                        "bindPort": plane.ports["kueue-visibility"],
                    },
                }
            )
        )
        kueue_log = self.launcher.logs / "kueue.log"
        kueue = self.launcher.start(
            "kueue",
            self._kueue_argv(plane.bin_dir, kueue_config, plane.kueue_kubeconfig, plane.ports),
        )
        _wait(
            "Kueue readyz",
            lambda: urllib.request.urlopen(
                f"http://127.0.0.1:{plane.ports['kueue-health']}/readyz", timeout=3
            ).status
            == 200,
            START_SECONDS,
            self.progress,
            kueue_log,
            kueue,
        )
        # A server-side dry run goes through Kueue's mutating and validating webhooks.
        probe = yaml.safe_dump(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "webhook-probe"},
            }
        )
        _wait(
            "Kueue webhooks to answer (server-side dry run)",
            lambda: self._kubectl_stdin(["create", "--dry-run=server", "-f", "-"], probe),
            START_SECONDS,
            self.progress,
            kueue_log,
            kueue,
        )
        return kueue

    def run(self) -> Cluster:
        progress = self.progress
        progress.step(f"building (or reusing) binaries for k8s {build.K8S_VERSION}")
        kube_bin = build.ensure_built(build.KUBE, progress)
        progress.step(f"building (or reusing) Kueue {build.KUEUE_VERSION}")
        kueue_bin = build.ensure_built(build.KUEUE, progress)
        kueue_dir = _kueue_module_dir(progress)
        if self.integrations:
            progress.step("building (or reusing) the controllers of Kueue's other integrations")
        controller_bins = integrations.ensure_built(self.integrations, progress)

        plane = self._start_plane(kube_bin, kueue_bin)
        ports, ca, api_url = plane.ports, plane.ca, plane.api_url

        launches = (
            self._install_integrations(controller_bins, ports, ca, plane.apiserver)
            if self.integrations
            else []
        )

        progress.step("installing Kueue CRDs, webhooks and the tenancy fixtures")
        self._install_kueue(plane, kueue_dir, MANIFESTS / "10-tenancy.yaml")

        progress.step("starting the Kueue manager")
        self._start_kueue(plane)
        kueue_log = self.launcher.logs / "kueue.log"

        if launches:
            self._start_integrations(launches)

        progress.step(
            "registering Kueue's visibility API (APIService -> ExternalName -> 127.0.0.1)"
        )
        self._apply_documents("kueue-visibility", self._visibility_api(ports, ca.pem))

        progress.step("applying Nodes, flavors, cohorts and queues")
        self._apply_file(MANIFESTS / "20-nodes.yaml")
        self._mark_nodes_ready()
        self._apply_file(MANIFESTS / "30-kueue-queues.yaml")
        self._report_admission_check_active("manual-approval")
        self._wait_default_service_accounts(("team-a", "team-b"))
        self._wait_queues_active()

        progress.step("applying scenario Jobs and waiting for Kueue and the scheduler to act")
        self._apply_file(MANIFESTS / "40-jobs.yaml")
        self._wait_workload_condition("team-a", "borrows-one-cpu", "Admitted")
        self._wait_workload_condition("team-a", "low-priority-victim", "Admitted")
        self._simulate_kubelet()
        self._apply_file(MANIFESTS / "50-jobs-after-admission.yaml")
        self._deactivate_workload("team-a", "deactivated-by-admin")
        self._wait_evicted_and_released("team-a", "low-priority-victim")
        self._simulate_kubelet({("team-a", "high-priority-preemptor"): "Running"})
        self._wait_scenarios_settled()
        # Inactive ClusterQueues on purpose: applied once the others were waited Active.
        self._apply_file(MANIFESTS / "60-diagnosis-cases.yaml")
        self._wait_diagnosis_cases()
        _wait(
            "visibility API (pending workloads of cq-small-2cpu)",
            lambda: self.cluster.kubectl(
                "get",
                "--raw",
                "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-small-2cpu/pendingworkloads",
                check=False,
            ).returncode
            == 0,
            START_SECONDS,
            progress,
            kueue_log,
        )

        progress.step("writing the kueue-graphql server's ServiceAccount kubeconfig")
        namespace, name = SERVER_SERVICE_ACCOUNT
        token = self.cluster.service_account_token(namespace, name, expiration_seconds=48 * 3600)
        _kubeconfig(
            self.cluster.server_kubeconfig, api_url, ca.pem, f"{namespace}:{name}", {"token": token}
        )
        _wait(
            "the aggregated ClusterRole kueue-graphql-aggregated-reader to be filled",
            lambda: len(
                self.cluster.get_json("clusterrole", "kueue-graphql-aggregated-reader").get("rules")
                or []
            )
            >= 2,
            START_SECONDS,
            progress,
            None,
        )
        namespace, name = CACHE_SERVER_SERVICE_ACCOUNT
        token = self.cluster.service_account_token(namespace, name, expiration_seconds=48 * 3600)
        _kubeconfig(
            self.cluster.cache_server_kubeconfig,
            api_url,
            ca.pem,
            f"{namespace}:{name}",
            {"token": token},
        )
        if launches:
            self._wait_integrations(launches)
        if self.integrations:
            progress.step("applying the owner scenarios' queues (69-owner-queues.yaml)")
            self._apply_file(MANIFESTS / "69-owner-queues.yaml")
            _wait(
                "ClusterQueue cq-owners-2cpu Active",
                lambda: _conditions(self.cluster.get_json("clusterqueue", "cq-owners-2cpu"))
                .get("Active", {})
                .get("status")
                == "True",
                START_SECONDS,
                self.progress,
                self.launcher.logs / "kueue.log",
            )
        if "jobset" in {c.name for c in integrations.started(self.integrations)}:
            progress.step("applying the JobSet scenarios (70-jobsets.yaml)")
            self._apply_file(MANIFESTS / "70-jobsets.yaml")
            self._wait_job_set_scenarios()
        if "kuberay" in {c.name for c in self.integrations}:
            progress.step("applying the RayJob scenarios (72-rayjobs.yaml)")
            self._apply_file(MANIFESTS / "72-rayjobs.yaml")
            self._wait_ray_job_scenarios()
        if self.integrations:
            progress.step("applying the pod-group scenarios (71-pod-groups.yaml)")
            self._apply_file(MANIFESTS / "71-pod-groups.yaml")
            self._wait_pod_group_scenarios()
        if self.multikueue:
            self._start_multikueue(ca.pem)
        progress.step(f"control plane ready in {progress.elapsed():.0f}s: {api_url}")
        return self.cluster

    def _kueue_argv(
        self, bin_dir: Path, config: Path, kubeconfig: Path, ports: dict[str, int]
    ) -> list[str]:
        # Kueue v0.17 reads its metrics and visibility serving certs from fixed absolute paths
        # (/etc/kueue/metrics/certs, /visibility) when internal cert management is off. Rather
        # than write there, each Kueue process gets a private mount namespace in which this
        # cluster's own cert directories are bind-mounted over those paths. The empty mount
        # points are created once if the machine lacks them.
        kueue_certs = self.state / "kueue"
        for mount_point in (Path("/etc/kueue/metrics/certs"), Path("/visibility")):
            mount_point.mkdir(parents=True, exist_ok=True)
        script = (
            f"mount --bind {kueue_certs / 'metrics'} /etc/kueue/metrics/certs && "
            f"mount --bind {kueue_certs / 'visibility'} /visibility && "
            f"exec {bin_dir / 'kueue'} --config={config} --kubeconfig={kubeconfig} "
            f"--visibility-server-port={ports['kueue-visibility']} --zap-log-level=info"
        )
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]

    def _visibility_api(self, ports: dict[str, int], ca_pem: bytes) -> list[Any]:
        # The aggregator resolves an ExternalName Service to <externalName>:<APIService port>
        # and verifies the serving cert against <service>.<namespace>.svc; Endpoints may not
        # name loopback addresses, so this is how an aggregated API on 127.0.0.1 is reached.
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kueue-visibility-server", "namespace": "kueue-system"},
            "spec": {"type": "ExternalName", "externalName": "localhost"},
        }
        documents: list[Any] = [service]
        for version, priority in (("v1beta2", 200), ("v1beta1", 100)):
            documents.append(
                {
                    "apiVersion": "apiregistration.k8s.io/v1",
                    "kind": "APIService",
                    "metadata": {"name": f"{version}.visibility.kueue.x-k8s.io"},
                    "spec": {
                        "group": "visibility.kueue.x-k8s.io",
                        "version": version,
                        "groupPriorityMinimum": 100,
                        "versionPriority": priority,
                        "service": {
                            "name": "kueue-visibility-server",
                            "namespace": "kueue-system",
                            "port": ports["kueue-visibility"],
                        },
                        "caBundle": base64.b64encode(ca_pem).decode(),
                    },
                }
            )
        return documents

    # -- the controllers of Kueue's other integrations (tests/cluster/integrations.py) --------

    def _install_integrations(
        self,
        binaries: dict[str, Path],
        ports: dict[str, int],
        ca: pki.CertificateAuthority,
        apiserver: subprocess.Popen[bytes],
    ) -> list[integrations.Launch]:
        """CRDs and webhooks of the switched-on controllers, from their modules."""
        self.progress.step(
            "installing the CRDs and webhooks of "
            + ", ".join(c.name for c in self.integrations)
            + f" ({integrations.SWITCH})"
        )
        module_dirs = {c.name: integrations.module_dir(c) for c in self.integrations}
        crd_files = integrations.crd_files(module_dirs)
        self._apply_files(crd_files)
        self._wait_crds_established([integrations.crd_name(path) for path in crd_files], apiserver)
        webhooks = []
        for controller in self.integrations:
            port = ports.get(f"{controller.name}-webhook")
            if port is not None:
                webhooks += integrations.webhook_documents(
                    controller, module_dirs[controller.name], port, ca.pem
                )
        self._apply_documents("integration-webhooks", webhooks)

        def write_kubeconfig(path: Path, user: str, pair: pki.CertPair) -> None:
            _kubeconfig(path, self.cluster.api_url, ca.pem, user, _cert_credentials(pair))

        # Symlinks named after each controller: the name its process shows.
        links = {}
        for name, binary in binaries.items():
            links[name] = self.state / "bin" / name
            links[name].symlink_to(binary)
        return integrations.prepare(
            self.state, links, ports, ca, write_kubeconfig, self.integrations
        )

    def _start_integrations(self, launches: list[integrations.Launch]) -> None:
        self.progress.step(
            "starting the controllers of Kueue's other integrations: "
            + ", ".join(launch.controller.name for launch in launches)
        )
        for launch in launches:
            self.launcher.start(launch.controller.name, launch.argv)

    def _wait_integrations(self, launches: list[integrations.Launch]) -> None:
        for launch in launches:
            _wait(
                f"{launch.controller.name} controller readyz and webhook server",
                lambda launch=launch: integrations.is_ready(launch),  # type: ignore[misc]
                120,
                self.progress,
                self.launcher.logs / f"{launch.controller.name}.log",
            )
        self.progress.note(
            "controllers ready: " + ", ".join(launch.controller.name for launch in launches)
        )

    # -- helpers ----------------------------------------------------------------------------

    def _write_env(self, api_url: str) -> None:
        lines = [
            "# Written by tests/cluster/driver.py: kubectl settings for the test cluster.",
            f"KUBECONFIG={self.cluster.admin_kubeconfig}",
            f"KUBE_API_URL={api_url}",
            f"KUBECTL={self.cluster.kubectl_bin}",
            f"CLUSTER_STATE_DIR={self.state}",
        ]
        (self.state / "env").write_text("\n".join(lines) + "\n")

    def _wait_crds_established(
        self, names: list[str], apiserver: subprocess.Popen[bytes], timeout: float = START_SECONDS
    ) -> None:
        """Until every CRD of `names` is Established, polled from its status (which has no
        conditions at first); a ClusterError naming each one that is not, if they never are."""
        deadline = time.monotonic() + timeout
        last_note = time.monotonic()
        missing = dict.fromkeys(names, "not listed yet")
        while True:
            listed = self.cluster.kubectl("get", "crd", "-o", "json", check=False)
            if listed.returncode == 0:
                missing = crds_not_established(json.loads(listed.stdout)["items"], names)
                if not missing:
                    return
            if apiserver.poll() is not None:
                raise ClusterError(
                    f"kube-apiserver exited (code {apiserver.returncode}) while CRDs were being "
                    f"established{_log_tail(self.launcher.logs / 'kube-apiserver.log')}"
                )
            if time.monotonic() > deadline:
                not_established = "; ".join(f"{name}: {seen}" for name, seen in missing.items())
                raise ClusterError(
                    f"CRDs not Established after {timeout:.0f}s: {not_established}"
                    f"{_log_tail(self.launcher.logs / 'kube-apiserver.log')}"
                )
            if time.monotonic() - last_note > 15:
                self.progress.note(
                    f"still waiting for CRDs to be Established: {', '.join(missing)}"
                )
                last_note = time.monotonic()
            time.sleep(0.5)

    def _kubectl_stdin(self, args: list[str], text: str) -> bool:
        result = subprocess.run(
            [
                str(self.cluster.kubectl_bin),
                "--kubeconfig",
                str(self.cluster.admin_kubeconfig),
                *args,
            ],
            input=text,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return result.returncode == 0

    def _apply_documents(self, name: str, documents: list[Any]) -> None:
        path = self.state / "applied" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
        self._apply_file(path)

    def _apply_files(self, paths: list[Path]) -> None:
        arguments = [argument for path in paths for argument in ("-f", str(path))]
        result = None
        for _ in range(30):
            result = self.cluster.kubectl(
                "apply", "--server-side", "--force-conflicts", *arguments, check=False, timeout=180
            )
            if result.returncode == 0:
                return
            time.sleep(1)
        assert result is not None
        raise ClusterError(f"applying {len(paths)} files failed: {result.stderr.strip()}")

    def _apply_file(self, path: Path) -> None:
        # Fresh CRDs and webhooks can take a moment to be served (longer on a busy machine):
        # retried until applied, at most START_SECONDS.
        deadline = time.monotonic() + START_SECONDS
        while True:
            result = self.cluster.kubectl(
                "apply", "--server-side", "--force-conflicts", "-f", str(path), check=False
            )
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"applying {path.name} failed for {START_SECONDS:.0f}s: {result.stderr.strip()}"
                )
            time.sleep(1)

    def _mark_nodes_ready(self) -> None:
        for node in self.cluster.get_json("nodes")["items"]:
            name = node["metadata"]["name"]
            status = {
                "status": {
                    "capacity": node["status"].get("capacity", {}),
                    "allocatable": node["status"].get("allocatable", {}),
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "simulated by tests/cluster (there is no kubelet)",
                        }
                    ],
                }
            }
            # The TaintNodesByCondition admission plugin taints every new Node not-ready; the
            # node lifecycle controller lifts that once the kubelet reports Ready. Neither runs
            # here (the lifecycle controller would evict everything without kubelet leases).
            self.cluster.kubectl(
                "taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-", check=False
            )
            self.cluster.kubectl(
                "patch",
                "node",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps(status),
            )

    def _report_admission_check_active(self, name: str) -> None:
        """Play the admission check's controller: report it Active, and never approve."""
        status = {
            "status": {
                "conditions": [
                    {
                        "type": "Active",
                        "status": "True",
                        "reason": "Active",
                        "message": "reported by tests/cluster: this check is never approved",
                        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    }
                ]
            }
        }
        self.cluster.kubectl(
            "patch",
            "admissioncheck",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(status),
        )

    def _deactivate_workload(self, namespace: str, job: str) -> None:
        """Set spec.active=false on an admitted Workload, as an administrator would."""
        self._wait_workload_condition(namespace, job, "Admitted")
        workload = self._workload_of(namespace, job)
        assert workload is not None
        self.cluster.kubectl(
            "patch",
            "workload",
            workload["metadata"]["name"],
            "-n",
            namespace,
            "--type=merge",
            "-p",
            '{"spec":{"active":false}}',
        )
        self._wait_evicted_and_released(namespace, job)

    def _wait_evicted_and_released(self, namespace: str, job: str) -> None:
        """Wait for Kueue to evict a Workload and release its quota (deactivation, preemption)."""

        def evicted_and_released() -> bool:
            # Without a kubelet, Pods already bound to a Node would stay Terminating forever;
            # confirm their deletion as the kubelet would.
            self.cluster.kubectl(
                "delete",
                "pods",
                "-n",
                namespace,
                "-l",
                f"job-name={job}",
                "--grace-period=0",
                "--force",
                "--wait=false",
                check=False,
            )
            current = self._workload_of(namespace, job) or {}
            conditions = _conditions(current)
            return (
                conditions.get("Evicted", {}).get("status") == "True"
                and conditions.get("QuotaReserved", {}).get("status") == "False"
            )

        _wait(
            f"Workload of {namespace}/{job} to be evicted and its quota released",
            evicted_and_released,
            START_SECONDS,
            self.progress,
            self.launcher.logs / "kueue.log",
        )

    def _wait_default_service_accounts(self, namespaces: tuple[str, ...]) -> None:
        for namespace in namespaces:
            _wait(
                f"ServiceAccount default in {namespace}",
                lambda ns=namespace: self.cluster.kubectl(  # type: ignore[misc]
                    "get", "serviceaccount", "default", "-n", ns, check=False
                ).returncode
                == 0,
                START_SECONDS,
                self.progress,
                self.launcher.logs / "kube-controller-manager.log",
            )

    def _wait_queues_active(self) -> None:
        def active() -> bool:
            queues = self.cluster.get_json("clusterqueues")["items"]
            return len(queues) >= 8 and all(
                _conditions(q).get("Active", {}).get("status") == "True" for q in queues
            )

        _wait(
            "ClusterQueues Active",
            active,
            START_SECONDS,
            self.progress,
            self.launcher.logs / "kueue.log",
        )

    def _workload_of(self, namespace: str, job: str) -> dict[str, Any] | None:
        uid = self.cluster.get_json("job", job, "-n", namespace)["metadata"]["uid"]
        items = self.cluster.get_json(
            "workloads", "-n", namespace, "-l", f"kueue.x-k8s.io/job-uid={uid}"
        )["items"]
        return items[0] if items else None

    def _wait_workload_condition(self, namespace: str, job: str, condition: str) -> None:
        def holds() -> bool:
            workload = self._workload_of(namespace, job)
            return bool(
                workload and _conditions(workload).get(condition, {}).get("status") == "True"
            )

        _wait(
            f"Workload of {namespace}/{job} to be {condition}",
            holds,
            START_SECONDS,
            self.progress,
            self.launcher.logs / "kueue.log",
        )

    def _simulate_kubelet(self, jobs: dict[tuple[str, str], str] | None = None) -> None:
        """Move bound Pods of chosen Jobs to Running, Succeeded or Failed, as a kubelet would."""
        for (namespace, job), phase in (SIMULATED_KUBELET if jobs is None else jobs).items():

            def bound_pods(ns: str = namespace, j: str = job) -> list[dict[str, Any]]:
                pods = self.cluster.get_json("pods", "-n", ns, "-l", f"job-name={j}")["items"]
                return [p for p in pods if p["spec"].get("nodeName")]

            _wait(
                f"Pods of {namespace}/{job} to be bound to a Node",
                lambda: bool(bound_pods()),
                START_SECONDS,
                self.progress,
                self.launcher.logs / "kube-scheduler.log",
            )
            for pod in bound_pods():
                self._set_pod_phase(pod, phase)

    def _set_pod_phase(self, pod: dict[str, Any], phase: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        container = pod["spec"]["containers"][0]
        if phase == "Running":
            state: dict[str, Any] = {"running": {"startedAt": now}}
            ready = "True"
        else:
            failed = phase == "Failed"
            state = {
                "terminated": {
                    "exitCode": 1 if failed else 0,
                    "reason": "Error" if failed else "Completed",
                    "startedAt": now,
                    "finishedAt": now,
                }
            }
            ready = "False"
        conditions = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": ready, "lastTransitionTime": now},
            {"type": "Ready", "status": ready, "lastTransitionTime": now},
        ]
        status = {
            "status": {
                "phase": phase,
                "startTime": now,
                "hostIP": "127.0.0.1",
                "podIP": "127.0.0.1",
                "conditions": conditions,
                "containerStatuses": [
                    {
                        "name": container["name"],
                        "image": container["image"],
                        "imageID": "",
                        "ready": ready == "True",
                        "restartCount": 0,
                        "started": phase == "Running",
                        "state": state,
                    }
                ],
            }
        }
        self.cluster.kubectl(
            "patch",
            "pod",
            pod["metadata"]["name"],
            "-n",
            pod["metadata"]["namespace"],
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(status),
        )

    def _wait_scenarios_settled(self) -> None:
        cluster = self.cluster

        def quota_reserved_false_with_message(job: str) -> Callable[[], bool]:
            def check() -> bool:
                workload = self._workload_of("team-a", job)
                condition = _conditions(workload or {}).get("QuotaReserved", {})
                return condition.get("status") == "False" and bool(condition.get("message"))

            return check

        def pod_unschedulable() -> bool:
            pods = cluster.get_json(
                "pods", "-n", "team-a", "-l", "job-name=admitted-but-unschedulable"
            )
            return any(
                _conditions(p).get("PodScheduled", {}).get("reason") == "Unschedulable"
                for p in pods["items"]
            )

        def workload_exists_for(job: str) -> Callable[[], bool]:
            return lambda: self._workload_of("team-a", job) is not None

        checks: list[tuple[str, Callable[[], bool]]] = [
            (
                "too-big-3x1cpu is refused quota",
                quota_reserved_false_with_message("too-big-3x1cpu"),
            ),
            (
                "no-spot-toleration gets no flavor",
                quota_reserved_false_with_message("no-spot-toleration"),
            ),
            (
                "over-borrowing-limit waits",
                quota_reserved_false_with_message("over-borrowing-limit"),
            ),
            (
                "waits-on-stopped-queue has a Workload",
                workload_exists_for("waits-on-stopped-queue"),
            ),
            (
                "waits-on-missing-clusterqueue has a Workload",
                workload_exists_for("waits-on-missing-clusterqueue"),
            ),
            ("admitted-but-unschedulable Pod is Unschedulable", pod_unschedulable),
        ]
        for what, check in checks:
            _wait(what, check, START_SECONDS, self.progress, self.launcher.logs / "kueue.log")
        self._wait_workload_condition("team-a", "finished-ok", "Finished")
        self._wait_workload_condition("team-a", "fails-with-exit-1", "Finished")
        self._wait_workload_condition("team-a", "high-priority-preemptor", "Admitted")
        self._wait_workload_condition("team-a", "healthy-running", "Admitted")
        self._wait_workload_condition("team-a", "waits-for-approval", "QuotaReserved")

    def _wait_job_set_scenarios(self) -> None:
        """70-jobsets.yaml: one refused quota, one admitted whose Pod kube-scheduler cannot place,
        one Running (its child Jobs' Pods moved to Running as a kubelet would)."""

        def workload_of(job_set: str) -> dict[str, Any] | None:
            found = self.cluster.kubectl(
                "get", "jobset", job_set, "-n", "team-a", "-o", "json", check=False
            )
            if found.returncode != 0:
                return None
            uid = json.loads(found.stdout)["metadata"]["uid"]
            items = self.cluster.get_json(
                "workloads", "-n", "team-a", "-l", f"kueue.x-k8s.io/job-uid={uid}"
            )["items"]
            return items[0] if items else None

        def condition(job_set: str, type_: str, status: str) -> Callable[[], bool]:
            def check() -> bool:
                found = _conditions(workload_of(job_set) or {}).get(type_, {})
                return found.get("status") == status and bool(found.get("message"))

            return check

        def unschedulable() -> bool:
            pods = self.cluster.get_json(
                "pods",
                "-n",
                "team-a",
                "-l",
                "jobset.sigs.k8s.io/jobset-name=js-admitted-but-unschedulable",
            )["items"]
            return any(
                _conditions(p).get("PodScheduled", {}).get("reason") == "Unschedulable"
                for p in pods
            )

        checks: list[tuple[str, Callable[[], bool]]] = [
            (
                "js-too-big-3cpu is refused quota",
                condition("js-too-big-3cpu", "QuotaReserved", "False"),
            ),
            ("js-running is admitted", condition("js-running", "Admitted", "True")),
            ("js-admitted-but-unschedulable's Pod is Unschedulable", unschedulable),
        ]
        for what, check in checks:
            _wait(what, check, START_SECONDS, self.progress, self.launcher.logs / "kueue.log")
        self._simulate_kubelet(
            {
                ("team-a", "js-running-workers-0"): "Running",
                ("team-a", "js-running-workers-1"): "Running",
            }
        )

    def _wait_ray_job_scenarios(self) -> None:
        """72-rayjobs.yaml (Kueue alone, no KubeRay operator): one refused quota, one admitted
        and unsuspended by Kueue."""

        def condition(ray_job: str, type_: str, status: str) -> Callable[[], bool]:
            def check() -> bool:
                found = self.cluster.kubectl(
                    "get", "rayjob", ray_job, "-n", "team-a", "-o", "json", check=False
                )
                if found.returncode != 0:
                    return False
                owner = json.loads(found.stdout)
                uid = owner["metadata"]["uid"]
                items = self.cluster.get_json(
                    "workloads", "-n", "team-a", "-l", f"kueue.x-k8s.io/job-uid={uid}"
                )["items"]
                got = _conditions(items[0] if items else {}).get(type_, {})
                if status == "True":  # admitted, and unsuspended by Kueue
                    return got.get("status") == "True" and owner["spec"].get("suspend") is not True
                # refused for quota (not only waiting for the new ClusterQueue to be Active)
                return got.get("status") == status and "couldn't assign flavors" in str(
                    got.get("message")
                )

            return check

        checks = [
            ("rj-too-big is refused quota", condition("rj-too-big", "QuotaReserved", "False")),
            (
                "rj-admitted-no-raycluster is admitted and unsuspended",
                condition("rj-admitted-no-raycluster", "Admitted", "True"),
            ),
        ]
        for what, check in checks:
            _wait(what, check, START_SECONDS, self.progress, self.launcher.logs / "kueue.log")

    def _wait_pod_group_scenarios(self) -> None:
        """71-pod-groups.yaml: Kueue's Workloads for the StatefulSets and the Deployment's Pods
        (one refused quota, the others admitted), the unschedulable Pod marked so, and the Pods of
        sts-running and deploy-serving moved to Running once bound, as a kubelet would."""
        namespace = "team-a-serving"

        def pods(app: str) -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = self.cluster.get_json(
                "pods", "-n", namespace, "-l", f"app={app}"
            )["items"]
            return found

        def workloads() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = self.cluster.get_json("workloads", "-n", namespace)[
                "items"
            ]
            return found

        def refused() -> bool:
            return any(
                _conditions(w).get("QuotaReserved", {}).get("status") == "False"
                and "sts-too-big" in w["metadata"]["name"]
                for w in workloads()
            )

        def bound(app: str, count: int) -> Callable[[], bool]:
            return lambda: len([p for p in pods(app) if p["spec"].get("nodeName")]) == count

        def unschedulable() -> bool:
            return any(
                _conditions(p).get("PodScheduled", {}).get("reason") == "Unschedulable"
                for p in pods("sts-admitted-but-unschedulable")
            )

        checks: list[tuple[str, Callable[[], bool]]] = [
            ("sts-too-big is refused quota", refused),
            ("sts-admitted-but-unschedulable's Pod is Unschedulable", unschedulable),
            ("sts-running's 2 Pods are bound", bound("sts-running", 2)),
            ("deploy-serving's 2 Pods are bound", bound("deploy-serving", 2)),
        ]
        for what, check in checks:
            _wait(what, check, START_SECONDS, self.progress, self.launcher.logs / "kueue.log")
        for app in ("sts-running", "deploy-serving"):
            for pod in pods(app):
                self._set_pod_phase(pod, "Running")

    def _wait_diagnosis_cases(self) -> None:
        def refused(namespace: str, name: str) -> Callable[[], bool]:
            def check() -> bool:
                found = self.cluster.kubectl(
                    "get", "workload", name, "-n", namespace, "-o", "json", check=False
                )
                if found.returncode != 0:
                    return False
                condition = _conditions(json.loads(found.stdout)).get("QuotaReserved", {})
                return condition.get("status") == "False" and bool(condition.get("message"))

            return check

        def job_refused(job: str) -> bool:
            workload = self._workload_of("team-a", job)
            condition = _conditions(workload or {}).get("QuotaReserved", {})
            return condition.get("status") == "False" and bool(condition.get("message"))

        checks: list[tuple[str, Callable[[], bool]]] = [
            ("two-podsets-6cpu is refused quota", refused("team-a", "two-podsets-6cpu")),
            ("team-a/same-name is refused quota", refused("team-a", "same-name")),
            ("team-b/same-name is refused quota", refused("team-b", "same-name")),
            ("waits-on-missing-flavor waits", lambda: job_refused("waits-on-missing-flavor")),
            ("waits-on-inactive-check waits", lambda: job_refused("waits-on-inactive-check")),
        ]
        for what, check in checks:
            _wait(what, check, START_SECONDS, self.progress, self.launcher.logs / "kueue.log")

    # -- MultiKueue (tests/cluster/multikueue.py, opt-in) -----------------------------------------

    def _start_multikueue(self, ca_pem: bytes) -> None:
        """The worker control planes, then the manager's MultiKueue objects and scenario Jobs;
        prints each worker's start time and memory."""
        workers: dict[str, _WorkerStarter] = {}
        seconds: dict[str, float] = {}
        for name in multikueue.WORKERS:
            self.progress.step(f"starting MultiKueue worker {name} ({multikueue.SWITCH}=1)")
            started = time.monotonic()
            workers[name] = _WorkerStarter(
                self.state / name,
                Progress(name),
                self.launcher.tie_to_parent,
                self.integrations,
            )
            workers[name].run()
            seconds[name] = time.monotonic() - started

        self.progress.step("giving the manager's Kueue the workers (Secrets, MultiKueueClusters)")
        namespace, account = multikueue.KUEUE_SERVICE_ACCOUNT
        secrets = [
            multikueue.kubeconfig_secret(
                name,
                multikueue.kubeconfig_document(
                    worker.cluster.api_url,
                    worker.cluster.ca_file.read_bytes(),
                    f"{namespace}:{account}",
                    worker.cluster.service_account_token(namespace, account, 48 * 3600),
                ),
            )
            for name, worker in workers.items()
        ]
        # Nothing listens on a port just freed: the connection is refused at once.
        closed = f"https://127.0.0.1:{_free_port()}"
        secrets.append(
            multikueue.kubeconfig_secret(
                multikueue.UNREACHABLE,
                multikueue.kubeconfig_document(closed, ca_pem, "nobody", "not-a-token"),
            )
        )
        # On stdin: the tokens are written nowhere but the Secrets.
        list_document = json.dumps({"apiVersion": "v1", "kind": "List", "items": secrets})
        if not self._kubectl_stdin(["apply", "-f", "-"], list_document):
            raise ClusterError("applying the MultiKueue kubeconfig Secrets failed")
        self._apply_file(MANIFESTS / "80-multikueue.yaml")
        kueue_log = self.launcher.logs / "kueue.log"
        for name in workers:
            self._wait_condition("multikueuecluster", name, "Active", "True", kueue_log)
        self._wait_condition(
            "multikueuecluster", multikueue.UNREACHABLE, "Active", "False", kueue_log
        )
        self._wait_condition("clusterqueue", "cq-multikueue", "Active", "True", kueue_log)

        self.progress.step("applying the MultiKueue scenario Jobs (81-*, 82-*)")
        worker = workers[multikueue.WORKERS[0]]
        self._apply_file(MANIFESTS / "81-multikueue-dispatched.yaml")
        self._wait_workload_condition("team-a", "mk-dispatched", "Admitted")
        worker._simulate_kubelet({("team-a", "mk-dispatched"): "Running"})
        self._apply_file(MANIFESTS / "82-multikueue-waiting.yaml")

        def remote_refused(job: str) -> Callable[[], bool]:
            def refused_on(remote: Cluster, name: str) -> bool:
                found = remote.kubectl(
                    "get", "workload", name, "-n", "team-a", "-o", "json", check=False
                )
                if found.returncode != 0:
                    return False
                condition = _conditions(json.loads(found.stdout)).get("QuotaReserved", {})
                return condition.get("status") == "False" and bool(condition.get("message"))

            def check() -> bool:
                local = self._workload_of("team-a", job)
                return local is not None and all(
                    refused_on(w.cluster, local["metadata"]["name"]) for w in workers.values()
                )

            return check

        def local_refused(job: str) -> Callable[[], bool]:
            def check() -> bool:
                condition = _conditions(self._workload_of("team-a", job) or {}).get(
                    "QuotaReserved", {}
                )
                return condition.get("status") == "False" and bool(condition.get("message"))

            return check

        checks: list[tuple[str, Callable[[], bool]]] = [
            ("mk-waits-for-quota refused on every worker", remote_refused("mk-waits-for-quota")),
            ("mk-too-big refused on every worker", remote_refused("mk-too-big")),
            ("mk-unreachable waits on the manager", local_refused("mk-unreachable")),
        ]
        for what, check in checks:
            _wait(what, check, START_SECONDS, self.progress, kueue_log)
        self._report_workers(seconds)

    def _report_workers(self, seconds: dict[str, float]) -> None:
        manager = multikueue.rss_by_process(self.state)
        self.progress.note(f"manager: RSS {sum(manager.values()):.0f} MiB")
        for name, took in seconds.items():
            rss = multikueue.rss_by_process(self.state / name)
            parts = ", ".join(f"{process} {mib:.0f}" for process, mib in rss.items())
            self.progress.note(
                f"MultiKueue {name}: started in {took:.0f}s, RSS {sum(rss.values()):.0f} MiB "
                f"({parts})"
            )

    def _wait_condition(
        self, kind: str, name: str, condition: str, status: str, log: Path | None
    ) -> None:
        _wait(
            f"{kind} {name} {condition}={status}",
            lambda: _conditions(self.cluster.get_json(kind, name)).get(condition, {}).get("status")
            == status,
            START_SECONDS,
            self.progress,
            log,
        )


class _WorkerStarter(_Starter):
    """A MultiKueue worker (KGQL_MULTIKUEUE=1): the same binaries as the manager, in a state
    directory of its own under the manager's; admin is its only static user. Its Kueue manages
    batch/Job; the kinds of the manager's other integrations get only their CRDs here, since the
    manager's Kueue watches them on every worker."""

    def __init__(
        self,
        state_dir: Path,
        progress: Progress,
        tie_to_parent: bool,
        manager_integrations: tuple[integrations.Controller, ...],
    ) -> None:
        state_dir.mkdir(parents=True)
        super().__init__(state_dir, progress, tie_to_parent)
        self.integrations = ()
        self.users = {"admin": USERS["admin"]}
        self.multikueue = False
        self.watched_integrations = manager_integrations

    def run(self) -> Cluster:
        kube_bin = build.ensure_built(build.KUBE, self.progress)
        kueue_bin = build.ensure_built(build.KUEUE, self.progress)
        kueue_dir = _kueue_module_dir(self.progress)
        plane = self._start_plane(kube_bin, kueue_bin)
        if self.watched_integrations:
            self.progress.step("installing the CRDs of the manager's other integrations")
            files = integrations.crd_files(
                {c.name: integrations.module_dir(c) for c in self.watched_integrations}
            )
            self._apply_files(files)
            self._wait_crds_established(
                [integrations.crd_name(path) for path in files], plane.apiserver
            )
        self.progress.step("installing Kueue's CRDs and webhooks, the worker's namespaces and RBAC")
        self._install_kueue(plane, kueue_dir, multikueue.WORKER_MANIFESTS / "10-worker.yaml")
        self.progress.step("starting the worker's Kueue")
        self._start_kueue(plane)
        self.progress.step("applying the worker's Node and queues")
        self._apply_file(multikueue.WORKER_MANIFESTS / "20-nodes.yaml")
        self._mark_nodes_ready()
        self._apply_file(multikueue.WORKER_MANIFESTS / f"30-queues-{self.state.name}.yaml")
        self._wait_default_service_accounts(("team-a",))
        self._wait_condition(
            "clusterqueue", "cq-multikueue", "Active", "True", self.launcher.logs / "kueue.log"
        )
        namespace, name = multikueue.READER_SERVICE_ACCOUNT
        _kubeconfig(
            multikueue.reader_kubeconfig(self.state),
            plane.api_url,
            plane.ca.pem,
            f"{namespace}:{name}",
            {"token": self.cluster.service_account_token(namespace, name, 48 * 3600)},
        )
        self.progress.step(f"worker ready in {self.progress.elapsed():.0f}s: {plane.api_url}")
        return self.cluster


def up(state_dir: Path = DEFAULT_STATE_DIR, tie_to_parent: bool = False) -> Cluster:
    """Start a fresh control plane (stopping leftovers of an earlier one first)."""
    progress = Progress()
    if state_dir.exists():
        progress.step(f"removing leftovers of an earlier cluster in {state_dir}")
        down(state_dir, quiet=True)
    state_dir.mkdir(parents=True)
    try:
        return _Starter(state_dir, progress, tie_to_parent).run()
    except BaseException:
        progress.step(f"start failed; logs are in {state_dir / 'logs'}; stopping what started")
        stop_processes(state_dir)
        raise


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _all_threads_stopped(pid: int) -> bool:
    """Every thread of `pid` in state T (stopped) or t (traced), per /proc/<pid>/task/*/stat."""
    tasks = Path(f"/proc/{pid}/task")
    for task in tasks.iterdir():
        with contextlib.suppress(OSError):
            stat = (task / "stat").read_text()
            # The state follows the command name, which is in parentheses and may hold spaces.
            if stat.rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                return False
    return True


def _belongs_to(pid: int, state_dir: Path) -> bool:
    """Guard against a recycled pid: our processes were started with cwd = state_dir."""
    try:
        return Path(f"/proc/{pid}/cwd").resolve() == state_dir.resolve()
    except OSError:
        return False


def stop_processes(state_dir: Path) -> list[str]:
    # MultiKueue workers first: their processes run in their own state directories.
    stopped = [
        f"{worker.name}/{name}"
        for worker in multikueue.worker_dirs(state_dir)
        for name in stop_processes(worker)
    ]
    pid_file = state_dir / "pids.json"
    if not pid_file.exists():
        return stopped
    recorded = json.loads(pid_file.read_text())
    # Reverse start order: Kueue and the controllers before the API server, etcd last.
    for entry in reversed(recorded):
        pid = int(entry["pid"])
        if not _process_alive(pid) or not _belongs_to(pid, state_dir):
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while _process_alive(pid) and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.1)
        if _process_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        stopped.append(entry["name"])
    pid_file.unlink()
    return stopped


def down(state_dir: Path = DEFAULT_STATE_DIR, quiet: bool = False) -> None:
    stopped = stop_processes(state_dir)
    if state_dir.exists():
        shutil.rmtree(state_dir)
    if not quiet:
        names = ", ".join(stopped) if stopped else "nothing was running"
        sys.stderr.write(f"[cluster] stopped: {names}; removed {state_dir}\n")


@contextlib.contextmanager
def running_cluster(state_dir: Path = DEFAULT_STATE_DIR) -> Iterator[Cluster]:
    """Reuse a healthy cluster (e.g. from `make cluster-up`), else start one and stop it after."""
    existing = Cluster(state_dir)
    if existing.is_healthy():
        sys.stderr.write(f"[cluster] reusing the running control plane in {state_dir}\n")
        yield existing
        return
    cluster = up(state_dir, tie_to_parent=True)
    try:
        yield cluster
    finally:
        down(state_dir)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else "status"
    state_dir = DEFAULT_STATE_DIR
    if command == "up":
        cluster = up(state_dir)
        print(f"KUBECONFIG={cluster.admin_kubeconfig}")
        print(f"KUBE_API_URL={cluster.api_url}")
        print(f"kubectl: {cluster.kubectl_bin}   users: {', '.join(USERS)} ({state_dir / 'users'})")
        return 0
    if command == "down":
        down(state_dir)
        return 0
    if command == "status":
        healthy = Cluster(state_dir).is_healthy()
        print("up" if healthy else "down")
        for worker_dir in multikueue.worker_dirs(state_dir):
            worker = Cluster(worker_dir)
            worker_healthy = worker.is_healthy()
            healthy = healthy and worker_healthy
            rss = sum(multikueue.rss_by_process(worker_dir).values())
            print(
                f"MultiKueue {worker_dir.name}: "
                + (f"up ({worker.api_url}, RSS {rss:.0f} MiB)" if worker_healthy else "down")
            )
        return 0 if healthy else 1
    if command == "build":
        progress = Progress()
        build.ensure_built(build.KUBE, progress)
        build.ensure_built(build.KUEUE, progress)
        integrations.ensure_built(selected_integrations(), progress)
        for tool in build.TOOLS:
            build.ensure_built(tool, progress)
        return 0
    sys.stderr.write("usage: python -m tests.cluster.driver up|down|status|build\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
