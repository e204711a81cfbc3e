"""The real controllers behind Kueue's integrations beyond batch/Job, in the test control plane.

JobSet, LeaderWorkerSet, KubeRay (ray-operator) and Kubeflow Trainer v2 are built from their Go
modules at exactly the versions Kueue v0.17.0's go.mod requires (`build.CONTROLLERS`) and each runs
as its own process, like Kueue: loopback only, leader election off, metrics and health on free
loopback ports, webhooks on a free loopback port with a serving certificate from this cluster's CA,
registered as `url: https://127.0.0.1:<port>/<path>`. Their CRDs and webhook configurations are read
from the same modules' config directories, so they always match the controller that serves them.

All of it is opt-in (`SWITCH`, KGQL_INTEGRATIONS): switched off (the default), the control
plane is batch/Job only and nothing here is built, installed or started.

Kueue's side lives here too: the frameworks it manages (`kueue_frameworks`), the webhooks it then
serves (`kueue_webhook_paths`) and the opt-in of namespaces for the Pod-based integrations (`pod`,
`deployment`, `statefulset`): only namespaces labelled `MANAGED_NAMESPACE_LABEL=true` have their
Pods, Deployments and StatefulSets managed (the namespaceSelector of those Kueue webhooks), so the
batch/Job scenarios' Pods never meet the pod integration.
"""

from __future__ import annotations

import base64
import copy
import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.cluster import build, pki
from tests.cluster.progress import Progress

# Namespaces whose Pods, Deployments and StatefulSets Kueue manages (when they name a queue): the
# namespaceSelector of Kueue's Pod, Deployment and StatefulSet webhooks. Without the webhook, a Pod
# never gets Kueue's `kueue.x-k8s.io/managed` label, so its pod reconciler ignores it too.
MANAGED_NAMESPACE_LABEL = "kueue-graphql.example/kueue-managed"
MANAGED_NAMESPACE_SELECTOR = {"matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}}
# Kueue's own `managedJobsNamespaceSelector` keeps its upstream default: with the
# ManagedJobsNamespaceSelectorAlwaysRespected gate (beta, on in v0.17) it applies to every
# integration, batch Jobs included, so an opt-in selector there would leave the scenarios' Jobs
# (and those the tests create in namespaces of their own) without a Workload.
KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR = {
    "matchExpressions": [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", "kueue-system"],
        }
    ]
}

# Kueue's `integrations.frameworks` (names as apis/config/v1beta2 lists them) and the path markers
# of the webhooks Kueue serves for them (its webhook/manifests.yaml): batch/Job always; each
# switched-on controller adds its own kinds (`Controller.frameworks`); the Pod-based integrations
# are on whenever any controller is (LeaderWorkerSet's runs through them).
BASE_FRAMEWORKS = ("batch/job",)
BASE_WEBHOOK_PATHS = ("kueue-x-k8s-io", "batch-v1-job")
POD_BASED_FRAMEWORKS = ("pod", "deployment", "statefulset")
POD_BASED_WEBHOOK_PATHS = ("--v1-pod", "apps-v1-deployment", "apps-v1-statefulset")
# The kube-controller-manager controllers added when any controller is switched on: Deployment ->
# ReplicaSet -> Pods, LeaderWorkerSet -> StatefulSet -> Pods.
CONTROLLER_MANAGER_CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
)
# Kueue's webhooks for the Pod-based integrations; its kustomization gives them a namespaceSelector
# (it excludes kube-system and kueue-system); here they get the opt-in selector instead.
_KUEUE_POD_BASED_WEBHOOKS = (
    "mpod.kb.io",
    "vpod.kb.io",
    "mdeployment.kb.io",
    "vdeployment.kb.io",
    "mstatefulset.kb.io",
    "vstatefulset.kb.io",
)


@dataclass(frozen=True)
class Controller:
    """One controller: how it is built, where its manifests are, what it serves."""

    name: str
    program: build.GoProgram
    module: str
    crd_dir: str
    # Directory holding the webhook manifests.yaml and the kustomization that patches it; None when
    # the controller runs without webhooks (said why in `note`).
    webhook_dir: str | None
    # Kueue's frameworks for the controller's kinds, and the path markers of their Kueue webhooks.
    frameworks: tuple[str, ...]
    kueue_webhook_paths: tuple[str, ...]
    note: str = ""

    @property
    def binary(self) -> str:
        return self.program.binaries[0]


CONTROLLERS = (
    Controller(
        "jobset",
        build.JOBSET,
        "sigs.k8s.io/jobset",
        "config/components/crd/bases",
        "config/components/webhook",
        ("jobset.x-k8s.io/jobset",),
        ("jobset-x-k8s-io-v1alpha2-jobset",),
    ),
    Controller(
        "lws",
        build.LWS,
        "sigs.k8s.io/lws",
        "config/crd/bases",
        "config/webhook",
        ("leaderworkerset.x-k8s.io/leaderworkerset",),
        ("leaderworkerset-x-k8s-io-v1-leaderworkerset",),
    ),
    Controller(
        "kuberay",
        build.KUBERAY,
        "github.com/ray-project/kuberay/ray-operator",
        "config/crd/bases",
        None,
        ("ray.io/rayjob", "ray.io/raycluster"),
        ("ray-io-v1-rayjob", "ray-io-v1-raycluster"),
        note=(
            "no webhooks, as in KubeRay's default install (config/default): its only webhook, "
            "RayCluster validation, is opt-in (ENABLE_WEBHOOKS=true) and its webhook server has "
            "neither a host nor a port option (it would listen on *:9443)"
        ),
    ),
    Controller(
        "trainer",
        build.TRAINER,
        "github.com/kubeflow/trainer/v2",
        "manifests/base/crds",
        "manifests/base/webhook",
        ("trainer.kubeflow.org/trainjob",),
        ("trainer-kubeflow-org-v1alpha1-trainjob",),
    ),
)

# The opt-in switch: unset, empty or "none" -> no controller (the control plane is batch/Job
# only); "all" -> every controller; else a comma list of controller names.
SWITCH = "KGQL_INTEGRATIONS"


def selected(value: str | None) -> tuple[Controller, ...]:
    """The controllers the switch's `value` names; ValueError naming the accepted values."""
    text = (value or "").strip()
    if text in ("", "none"):
        return ()
    if text == "all":
        return CONTROLLERS
    names = [name.strip() for name in text.split(",")]
    known = [c.name for c in CONTROLLERS]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(
            f"{SWITCH}={value!r}: unknown {', '.join(repr(n) for n in unknown)}; accepted: unset, "
            f"empty or 'none' (off), 'all', or a comma list of {', '.join(known)}"
        )
    return tuple(c for c in CONTROLLERS if c.name in names)


# The controllers whose processes are started. LeaderWorkerSet, KubeRay and the Trainer are defined
# (modules pinned, command lines, webhooks) but not started yet: their binaries were still building
# when this was written (about 15 min each for ~1,000 packages on the loaded 2-core machine) and
# their start here is unverified, so an unverified process cannot fail the control plane's start.
# Until one is listed, its CRDs are installed and Kueue manages its kind alone (it makes and admits
# the Workload); nothing creates the children, and its webhooks are not registered (with
# failurePolicy Fail and no server they would refuse every object of the kind).
STARTED = ("jobset",)


def started(selection: tuple[Controller, ...]) -> tuple[Controller, ...]:
    """The switched-on controllers whose processes are started."""
    return tuple(c for c in selection if c.name in STARTED)


def port_names(selection: tuple[Controller, ...]) -> tuple[str, ...]:
    names: list[str] = []
    for controller in started(selection):
        names += [f"{controller.name}-metrics", f"{controller.name}-health"]
        if controller.webhook_dir:
            names.append(f"{controller.name}-webhook")
    return tuple(names)


def ensure_built(selection: tuple[Controller, ...], progress: Progress) -> dict[str, Path]:
    """Each started controller's binary, built (cached) like the other binaries."""
    return {c.name: build.ensure_built(c.program, progress) / c.binary for c in started(selection)}


def module_dir(controller: Controller) -> Path:
    """The controller's module in the module cache (downloaded if the cache lost it)."""

    def listed() -> str:
        return subprocess.run(
            ["go", "list", "-m", "-f", "{{.Dir}}", controller.module],
            cwd=controller.program.module_dir,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    directory = listed()
    if not directory:
        subprocess.run(
            ["go", "mod", "download", controller.module],
            cwd=controller.program.module_dir,
            check=True,
        )
        directory = listed()
    return Path(directory)


# ---------------------------------------------------------------------------------------------
# Manifests


def crd_files(module_dirs: dict[str, Path]) -> list[Path]:
    """The CRD files of each controller of `module_dirs`, as its module ships them (no conversion
    webhooks: each upstream install leaves `conversion` unset, and JobSet's and LWS's only version
    needs none)."""
    files: list[Path] = []
    for controller in CONTROLLERS:
        if controller.name not in module_dirs:
            continue
        directory = module_dirs[controller.name] / controller.crd_dir
        files += sorted(p for p in directory.glob("*.yaml") if p.name != "kustomization.yaml")
    return files


def crd_name(path: Path) -> str:
    """`<group>_<plural>.yaml` (controller-gen's file naming) -> `<plural>.<group>`."""
    group, plural = path.stem.split("_", 1)
    return f"{plural}.{group}"


def _pointer_parts(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]


def _apply_json_patch(document: Any, operations: list[dict[str, Any]]) -> None:
    """RFC 6902 `replace` and `add`: all the kustomizations of these webhooks use."""
    for operation in operations:
        if operation["op"] not in ("replace", "add"):
            raise ValueError(f"unsupported JSON patch operation {operation['op']!r}")
        *parents, last = _pointer_parts(operation["path"])
        target = document
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        value = copy.deepcopy(operation["value"])
        if isinstance(target, list):
            if last == "-":
                target.append(value)
            elif operation["op"] == "add":
                target.insert(int(last), value)
            else:
                target[int(last)] = value
        else:
            target[last] = value


def _kustomize_patches(directory: Path) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(target, operations) for each JSON 6902 patch of the directory's kustomization.yaml."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text()) or {}
    patches = []
    for entry in kustomization.get("patches") or []:
        text = (directory / entry["path"]).read_text() if "path" in entry else entry["patch"]
        operations = yaml.safe_load(text)
        if isinstance(operations, list):  # strategic merge patches are not used by these dirs
            patches.append((entry.get("target") or {}, operations))
    return patches


def webhook_documents(controller: Controller, module: Path, port: int, ca_pem: bytes) -> list[Any]:
    """The controller's webhook configurations, kustomize patches applied, pointed at 127.0.0.1."""
    if controller.webhook_dir is None:
        return []
    directory = module / controller.webhook_dir
    documents = [d for d in yaml.safe_load_all((directory / "manifests.yaml").read_text()) if d]
    patches = _kustomize_patches(directory)
    ca_bundle = base64.b64encode(ca_pem).decode()
    for document in documents:
        for target, operations in patches:
            if target.get("kind", document["kind"]) != document["kind"]:
                continue
            if target.get("name", document["metadata"]["name"]) != document["metadata"]["name"]:
                continue
            _apply_json_patch(document, operations)
        for hook in document.get("webhooks", []):
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
        document["metadata"] = {"name": f"{controller.name}-{document['metadata']['name']}"}
    return documents


def controller_manager_controllers(selection: tuple[Controller, ...]) -> tuple[str, ...]:
    """The kube-controller-manager controllers added to the base set (none when off)."""
    return CONTROLLER_MANAGER_CONTROLLERS if selection else ()


def kueue_frameworks(selection: tuple[Controller, ...]) -> tuple[str, ...]:
    if not selection:
        return BASE_FRAMEWORKS
    own = tuple(f for c in selection for f in c.frameworks)
    return (*BASE_FRAMEWORKS, *own, *POD_BASED_FRAMEWORKS)


def kueue_webhook_paths(selection: tuple[Controller, ...]) -> tuple[str, ...]:
    """Path markers of the Kueue webhooks served with the frameworks of `selection`."""
    if not selection:
        return BASE_WEBHOOK_PATHS
    own = tuple(p for c in selection for p in c.kueue_webhook_paths)
    return (*BASE_WEBHOOK_PATHS, *own, *POD_BASED_WEBHOOK_PATHS)


def scope_kueue_webhook(hook: dict[str, Any]) -> None:
    """Kueue's Pod, Deployment and StatefulSet webhooks see opted-in namespaces only."""
    if hook.get("name") in _KUEUE_POD_BASED_WEBHOOKS:
        hook["namespaceSelector"] = copy.deepcopy(MANAGED_NAMESPACE_SELECTOR)


def kueue_configuration(selection: tuple[Controller, ...]) -> dict[str, Any]:
    """The part of Kueue's Configuration that names its integrations (batch/Job alone when off)."""
    configuration: dict[str, Any] = {
        "integrations": {"frameworks": list(kueue_frameworks(selection))}
    }
    if selection:
        configuration["managedJobsNamespaceSelector"] = copy.deepcopy(
            KUEUE_MANAGED_JOBS_NAMESPACE_SELECTOR
        )
    return configuration


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass(frozen=True)
class Launch:
    """How one controller process is started and when it is ready."""

    controller: Controller
    argv: list[str]
    health_url: str
    webhook_port: int | None


def _write_config(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def prepare(
    state_dir: Path,
    binaries: dict[str, Path],
    ports: dict[str, int],
    ca: pki.CertificateAuthority,
    write_kubeconfig: Callable[[Path, str, pki.CertPair], None],
    selection: tuple[Controller, ...],
) -> list[Launch]:
    """Certificates, kubeconfigs and config files of each started controller; the command lines."""
    launches = []
    for controller in started(selection):
        name = controller.name
        directory = state_dir / name
        certs = directory / "certs"
        certs.mkdir(parents=True)
        serving = ca.issue(
            f"{name}-serving",
            f"{name}-webhook",
            dns_names=("localhost",),
            ip_addresses=("127.0.0.1",),
            server=True,
        )
        shutil.copy(serving.cert, certs / "tls.crt")
        shutil.copy(serving.key, certs / "tls.key")
        # Like the Kueue manager: its own identity, in system:masters (the upstream RBAC manifests
        # are large; callers' access is still decided by plain RBAC).
        client = ca.issue(
            f"{name}-manager", f"{name}-manager", organizations=("system:masters",), client=True
        )
        kubeconfig = directory / "kubeconfig"
        write_kubeconfig(kubeconfig, f"{name}-manager", client)

        health = f"127.0.0.1:{ports[f'{name}-health']}"
        metrics = f"127.0.0.1:{ports[f'{name}-metrics']}"
        webhook_port = ports.get(f"{name}-webhook")
        binary = str(binaries[name])
        common = {
            "leaderElection": {"leaderElect": False},
            "health": {"healthProbeBindAddress": health},
            "clientConnection": {"qps": 50, "burst": 100},
        }
        if name in ("jobset", "lws"):
            # The same kubebuilder Configuration shape; only JobSet takes a metrics cert dir (LWS
            # serves metrics with a self-signed certificate).
            metrics_config = {"bindAddress": metrics}
            if name == "jobset":
                metrics_config["certDir"] = str(certs)
            config = _write_config(
                directory / "config.yaml",
                {
                    "apiVersion": f"config.{name}.x-k8s.io/v1alpha1",
                    "kind": "Configuration",
                    **common,
                    "internalCertManagement": {"enable": False},
                    "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(certs)},
                    "metrics": metrics_config,
                },
            )
            argv = [binary, f"--config={config}", "--leader-elect=false"]
        elif name == "kuberay":
            # Flags only: with --config, KubeRay ignores every flag.
            argv = [
                binary,
                f"--metrics-addr={metrics}",
                f"--health-probe-bind-address={health}",
                "--enable-leader-election=false",
                "--log-stdout-encoder=console",
            ]
        elif name == "trainer":
            config = _write_config(
                directory / "config.yaml",
                {
                    "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
                    "kind": "Configuration",
                    **common,
                    "certManagement": {"enable": False},
                    "webhook": {"port": webhook_port, "host": "127.0.0.1"},
                    "metrics": {"bindAddress": metrics, "secureServing": True},
                },
            )
            # The Trainer has no webhook cert-dir option: controller-runtime's default is
            # $TMPDIR/k8s-webhook-server/serving-certs, so TMPDIR points at this cluster's copy.
            tmp = directory / "tmp"
            serving_dir = tmp / "k8s-webhook-server" / "serving-certs"
            serving_dir.mkdir(parents=True)
            shutil.copy(serving.cert, serving_dir / "tls.crt")
            shutil.copy(serving.key, serving_dir / "tls.key")
            argv = ["env", f"TMPDIR={tmp}", binary, f"--config={config}"]
        else:  # pragma: no cover - CONTROLLERS and this function move together
            raise ValueError(f"no command line for controller {name}")
        argv.append(f"--kubeconfig={kubeconfig}")
        launches.append(Launch(controller, argv, f"http://{health}/readyz", webhook_port))
    return launches


def is_ready(launch: Launch) -> bool:
    """readyz answers 200 and, for a controller with webhooks, its webhook port accepts TLS
    connections (LeaderWorkerSet's readyz is a plain ping, not tied to its webhook server)."""
    try:
        with urllib.request.urlopen(launch.health_url, timeout=3) as response:  # noqa: S310
            if response.status != 200:
                return False
    except OSError:
        return False
    if launch.webhook_port is None:
        return True
    try:
        with socket.create_connection(("127.0.0.1", launch.webhook_port), timeout=3):
            return True
    except OSError:
        return False
