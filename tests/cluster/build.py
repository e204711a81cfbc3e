"""Build (or find cached) control-plane and Kueue binaries from the pinned Go modules.

Binaries are cached outside git, under `$KGQL_CACHE` (default
`$XDG_CACHE_HOME/kueue-graphql`, else `~/.cache/kueue-graphql`), in a directory named by a hash of
everything that decides their content: go.mod, go.sum, our Go sources, the ldflags and the Go
version. A second `make cluster-up` therefore builds nothing.

A cold build compiles a few thousand packages on two cores; progress is printed while it runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.cluster.progress import Progress

HERE = Path(__file__).resolve().parent

K8S_VERSION = "v1.36.3"
KUEUE_VERSION = "v0.17.0"
HELM_VERSION = "v4.3.2"

# Kueue refuses to start when /version is not semver, so the version goes in at link time.
_KUBE_LDFLAGS = " ".join(
    [
        "-s -w",
        f"-X k8s.io/component-base/version.gitVersion={K8S_VERSION}",
        "-X k8s.io/component-base/version.gitMajor=1",
        "-X k8s.io/component-base/version.gitMinor=36",
        "-X k8s.io/component-base/version.gitTreeState=clean",
        f"-X k8s.io/client-go/pkg/version.gitVersion={K8S_VERSION}",
    ]
)


@dataclass(frozen=True)
class GoProgram:
    """One Go module of ours and the binaries built from it."""

    name: str
    module_dir: Path
    packages: tuple[str, ...]
    binaries: tuple[str, ...]
    ldflags: str


KUBE = GoProgram(
    name="kube",
    module_dir=HERE / "kube",
    packages=("./cmd/kcp", "./cmd/etcd"),
    binaries=("kcp", "etcd"),
    ldflags=_KUBE_LDFLAGS,
)
KUEUE = GoProgram(
    name="kueue",
    module_dir=HERE / "kueue",
    packages=("sigs.k8s.io/kueue/cmd/kueue",),
    binaries=("kueue",),
    ldflags="-s -w",
)
# Tools the tests drive like a user would: helm installs the chart, kueuectl (`kubectl kueue`) runs
# the commands the diagnosis prints. Each is its own module so that it never changes the cache key
# of the control plane or of the Kueue manager.
HELM = GoProgram(
    name="helm",
    module_dir=HERE / "helm",
    packages=("helm.sh/helm/v4/cmd/helm",),
    binaries=("helm",),
    ldflags=f"-s -w -X helm.sh/helm/v4/internal/version.version={HELM_VERSION}",
)
KUEUECTL = GoProgram(
    name="kueuectl",
    module_dir=HERE / "kueuectl",
    packages=("sigs.k8s.io/kueue/cmd/kueuectl",),
    binaries=("kueuectl",),
    ldflags=f"-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}",
)
TOOLS = (HELM, KUEUECTL)

# The controllers behind Kueue's other integrations, at exactly the versions Kueue v0.17.0's own
# go.mod requires. Each is its own module (`tool` directive, nothing else required), so `go mod
# tidy` selects the very dependency versions the upstream module pins, and none of them changes the
# cache key of another program. Their CRDs and webhooks come from the same modules' config dirs
# (tests/cluster/integrations.py).
JOBSET_VERSION = "v0.11.1"
LWS_VERSION = "v0.8.0"
KUBERAY_VERSION = "v1.6.0"
TRAINER_VERSION = "v2.2.0"
JOBSET = GoProgram(
    name="jobset",
    module_dir=HERE / "jobset",
    packages=("sigs.k8s.io/jobset",),
    binaries=("jobset",),
    ldflags=f"-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion={JOBSET_VERSION}",
)
LWS = GoProgram(
    name="lws",
    module_dir=HERE / "lws",
    packages=("sigs.k8s.io/lws/cmd",),
    # `go build -o DIR/` names a binary after its package's last path element.
    binaries=("cmd",),
    ldflags=f"-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion={LWS_VERSION}",
)
KUBERAY = GoProgram(
    name="kuberay",
    module_dir=HERE / "kuberay",
    packages=("github.com/ray-project/kuberay/ray-operator",),
    binaries=("ray-operator",),
    ldflags="-s -w",
)
TRAINER = GoProgram(
    name="trainer",
    module_dir=HERE / "trainer",
    packages=("github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",),
    binaries=("trainer-controller-manager",),
    ldflags="-s -w",
)
CONTROLLERS = (JOBSET, LWS, KUBERAY, TRAINER)


def cache_root() -> Path:
    explicit = os.environ.get("KGQL_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kueue-graphql"


def _go_version() -> str:
    return subprocess.run(
        ["go", "env", "GOVERSION"], capture_output=True, text=True, check=True
    ).stdout.strip()


def cache_key(program: GoProgram) -> str:
    digest = hashlib.sha256()
    digest.update(_go_version().encode())
    digest.update(program.ldflags.encode())
    files = [program.module_dir / "go.mod", program.module_dir / "go.sum"]
    files += sorted(program.module_dir.rglob("*.go"))
    for path in files:
        digest.update(str(path.relative_to(program.module_dir)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def binary_dir(program: GoProgram) -> Path:
    return cache_root() / "bin" / f"{program.name}-{cache_key(program)}"


def _count_packages(program: GoProgram, env: dict[str, str]) -> int:
    listed = subprocess.run(
        ["go", "list", "-deps", *program.packages],
        cwd=program.module_dir,
        capture_output=True,
        text=True,
        env=env,
    )
    return len(listed.stdout.split()) if listed.returncode == 0 else 0


def ensure_built(program: GoProgram, progress: Progress) -> Path:
    """Return the directory holding the program's binaries, building them if not cached."""
    target = binary_dir(program)
    if all((target / b).is_file() for b in program.binaries):
        progress.step(f"{program.name}: cached binaries in {target}")
        return target
    if shutil.which("go") is None:
        raise RuntimeError("Go is not on PATH: it is needed to build the test control plane")

    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=readonly")
    progress.step(f"{program.name}: downloading Go modules (go mod download)")
    subprocess.run(["go", "mod", "download"], cwd=program.module_dir, env=env, check=True)
    total = _count_packages(program, env)
    progress.step(
        f"{program.name}: building {', '.join(program.binaries)} "
        f"({total} packages in the graph; a cold build takes many minutes on 2 cores)"
    )
    staging = target.with_name(target.name + f".tmp-{os.getpid()}")
    staging.mkdir(parents=True, exist_ok=True)
    command = [
        "go",
        "build",
        "-v",
        "-trimpath",
        "-ldflags",
        program.ldflags,
        "-o",
        str(staging) + "/",
        *program.packages,
    ]
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=program.module_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    compiled = 0
    output_tail: list[str] = []
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(15):
            elapsed = time.monotonic() - started
            shown = f"{compiled}/{total}" if total else str(compiled)
            progress.note(
                f"{program.name}: {shown} packages compiled, {elapsed / 60:.1f} min "
                "(cached packages are not listed; the link comes last)"
            )

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    assert process.stdout is not None
    for line in process.stdout:
        compiled += 1
        output_tail = [*output_tail[-40:], line.rstrip()]
    code = process.wait()
    done.set()
    if code != 0:
        shutil.rmtree(staging, ignore_errors=True)
        sys.stderr.write("\n".join(output_tail) + "\n")
        raise RuntimeError(f"go build of {program.name} failed with exit code {code}")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    progress.step(
        f"{program.name}: built in {(time.monotonic() - started) / 60:.1f} min -> {target}"
    )
    return target
