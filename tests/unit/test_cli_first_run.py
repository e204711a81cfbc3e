"""First runs: every startup mistake is one line that says what to do, exit code 2; --version;
every `serve` flag documented with its default; `why` targets as kubectl users type them."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kueue_graphql.cli import _parser
from kueue_graphql.cli.local import parse_target


def run(
    *args: str, home: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "KUEUE_GRAPHQL"))
    }
    environment.update({"HOME": str(home), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "kueue_graphql.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


def kubeconfig(path: Path, *, current: str | None = "a") -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "not-used"}}],
        "contexts": [
            {"name": "a", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}}
        ],
    }
    if current:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config))
    return path


def one_line_refusal(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_no_kubeconfig_at_all(tmp_path: Path) -> None:
    line = one_line_refusal(run("serve", home=tmp_path))
    assert "no kubeconfig" in line
    assert "--kubeconfig PATH" in line


def test_a_kubeconfig_path_that_does_not_exist(tmp_path: Path) -> None:
    line = one_line_refusal(run("serve", "--kubeconfig", str(tmp_path / "nope"), home=tmp_path))
    assert f"kubeconfig {tmp_path / 'nope'} does not exist" in line


def test_kubeconfig_from_the_environment_that_does_not_exist(tmp_path: Path) -> None:
    result = run("serve", home=tmp_path, env={"KUBECONFIG": str(tmp_path / "gone")})
    assert "gone does not exist" in one_line_refusal(result)


def test_an_unknown_context(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config")
    line = one_line_refusal(
        run("serve", "--kubeconfig", str(config), "--context", "b", home=tmp_path)
    )
    assert "context 'b' is not in" in line
    assert "contexts there: a" in line


def test_no_current_context(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config", current=None)
    line = one_line_refusal(run("serve", "--kubeconfig", str(config), home=tmp_path))
    assert "has no current-context: pass --context NAME" in line


def test_in_cluster_outside_a_pod(tmp_path: Path) -> None:
    line = one_line_refusal(run("serve", "--in-cluster", home=tmp_path))
    assert "--in-cluster needs KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT" in line
    assert "or use --kubeconfig" in line


def test_port_in_use(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = run("serve", "--kubeconfig", str(config), "--port", str(port), home=tmp_path)
    line = one_line_refusal(result)
    assert f"cannot listen on 127.0.0.1:{port}" in line
    assert "--port" in line


def test_why_without_a_kubeconfig(tmp_path: Path) -> None:
    line = one_line_refusal(run("why", "team-a/x", home=tmp_path))
    assert line.startswith("kueue-graphql why: no kubeconfig")


@pytest.mark.parametrize(
    ("flags", "named", "reason"),
    [
        (["--cpu", "1e4300"], "--cpu: '1e4300'", "outside -64..64"),
        (["--memory", "1e-1000000"], "--memory: '1e-1000000'", "outside -64..64"),
        (["--request", "nvidia.com/gpu=" + "1" * 5000], "--request nvidia.com/gpu", "longer than"),
        (["--cpu", "1.5.0"], "--cpu: '1.5.0' is not a Kubernetes quantity", "e.g. 500m"),
    ],
)
def test_fits_refuses_a_quantity_before_any_call(
    tmp_path: Path, flags: list[str], named: str, reason: str
) -> None:
    # The server's own parser (issue 22, W1/W2): one line naming the flag, exit 2, before the
    # kubeconfig's (unreachable) API server is tried.
    config = kubeconfig(tmp_path / "config")
    line = one_line_refusal(run("fits", "lq", "--kubeconfig", str(config), *flags, home=tmp_path))
    assert line.startswith(f"kueue-graphql fits: {named}"), line
    assert reason in line


def test_version(tmp_path: Path) -> None:
    result = run("--version", home=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"kueue-graphql {importlib.metadata.version('kueue-graphql')}"


def _subcommand(name: str) -> argparse.ArgumentParser:
    for action in _parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            parser: argparse.ArgumentParser = action.choices[name]
            return parser
    raise AssertionError(name)


@pytest.mark.parametrize("command", ["serve", "why"])
def test_every_flag_has_help_showing_its_default(command: str) -> None:
    parser = _subcommand(command)
    text = parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert action.help, action.option_strings
        if action.default is not None and not isinstance(action, argparse._StoreTrueAction):
            assert f"(default: {action.default})" in " ".join(text.split()), action.option_strings


@pytest.mark.parametrize(
    ("target", "namespace", "kind", "expected"),
    [
        ("team-a/big", None, None, ("team-a", "Job", "big")),
        ("big", "team-a", None, ("team-a", "Job", "big")),
        ("job/big", "team-a", None, ("team-a", "Job", "big")),
        ("jobs.batch/big", "team-a", None, ("team-a", "Job", "big")),
        ("Job/big", None, None, ("ctx-ns", "Job", "big")),
        ("workload/job-big-1", "team-a", None, ("team-a", "Workload", "job-big-1")),
        ("wl/job-big-1", None, None, ("ctx-ns", "Workload", "job-big-1")),
        ("team-a/big", None, "job", ("team-a", "Job", "big")),
        ("team-a/w", None, "WORKLOAD", ("team-a", "Workload", "w")),
        ("big", None, None, ("ctx-ns", "Job", "big")),
        ("jobset/train", None, None, ("ctx-ns", "JobSet", "train")),
        ("JobSet/train", "team-a", None, ("team-a", "JobSet", "train")),
        ("jobsets.jobset.x-k8s.io/train", None, None, ("ctx-ns", "JobSet", "train")),
        ("rayjob/train", "team-a", None, ("team-a", "RayJob", "train")),
        ("rayjobs.ray.io/train", None, None, ("ctx-ns", "RayJob", "train")),
        ("RayCluster/rc", None, None, ("ctx-ns", "RayCluster", "rc")),
        ("sts/web", None, None, ("ctx-ns", "StatefulSet", "web")),
        ("po/web-0", "team-a", None, ("team-a", "Pod", "web-0")),
        ("team-a/train", None, "jobset", ("team-a", "JobSet", "train")),
        # kubectl knows no short name `js` for JobSet: a namespace, as any other word.
        ("js/train", None, None, ("js", "Job", "train")),
    ],
)
def test_targets_as_kubectl_users_type_them(
    target: str, namespace: str | None, kind: str | None, expected: tuple[str, str, str]
) -> None:
    assert parse_target(target, namespace, kind, "ctx-ns") == expected


@pytest.mark.parametrize("target", ["a/b/c", "/x", "team-a/", "job/big --kind workload"])
def test_unreadable_targets_are_refused(target: str) -> None:
    kind = "Workload" if "--kind" in target else None
    with pytest.raises(ValueError, match=r"cannot read|contradicts"):
        parse_target(target.split(" ")[0], None, kind, "default")
