"""--worker-kubeconfig NAME=PATH (issue 25): the service's own kubeconfig per MultiKueue worker,
parsed and checked at start, every mistake refused in one line naming the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from kueue_graphql.cli import _parser
from kueue_graphql.cli.serve import settings_from
from kueue_graphql.cli.settings import SettingError
from kueue_graphql.core.workers import WorkerKubeconfig
from tests.unit.test_cli_first_run import kubeconfig, one_line_refusal, run


def _workers(*argv: str) -> tuple[WorkerKubeconfig, ...]:
    return settings_from(_parser().parse_args(["serve", *argv])).worker_kubeconfigs


def test_one_kubeconfig_per_worker_from_flags_else_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _workers() == ()
    assert _workers(
        "--worker-kubeconfig", "worker-1=/etc/w1.kubeconfig",
        "--worker-kubeconfig", " worker-2.eu = w2.kubeconfig ",
    ) == (
        WorkerKubeconfig("worker-1", Path("/etc/w1.kubeconfig")),
        WorkerKubeconfig("worker-2.eu", Path("w2.kubeconfig")),
    )  # fmt: skip
    monkeypatch.setenv("KUEUE_GRAPHQL_WORKER_KUBECONFIG", "a=/a, b=/b,")
    assert [w.cluster for w in _workers()] == ["a", "b"]
    # A flag replaces the environment's list rather than adding to it.
    assert _workers("--worker-kubeconfig", "c=/c") == (WorkerKubeconfig("c", Path("/c")),)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("worker-1", "is not NAME=PATH"),
        ("=/etc/w.kubeconfig", "is not NAME=PATH"),
        ("worker-1=", "is not NAME=PATH"),
        ("Worker_1=/etc/w.kubeconfig", "cannot be a MultiKueueCluster's name"),
        ("w" * 254 + "=/x", "cannot be a MultiKueueCluster's name"),
    ],
)
def test_malformed_entries_are_refused(value: str, said: str) -> None:
    with pytest.raises(SettingError) as refused:
        _workers("--worker-kubeconfig", value)
    assert str(refused.value).startswith("--worker-kubeconfig: ")
    assert said in str(refused.value)
    assert len(str(refused.value)) < 400


def test_a_worker_given_twice_is_refused() -> None:
    with pytest.raises(SettingError, match="worker 'w1' is given twice"):
        _workers("--worker-kubeconfig", "w1=/a", "--worker-kubeconfig", "w1=/b")


def test_serve_refuses_a_malformed_entry_in_one_line(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config")
    line = one_line_refusal(
        run(
            "serve", "--kubeconfig", str(config), "--worker-kubeconfig", "worker-1",
            home=tmp_path,
        )
    )  # fmt: skip
    assert line.startswith("kueue-graphql serve: --worker-kubeconfig: 'worker-1' is not NAME=PATH")


def test_serve_refuses_a_worker_kubeconfig_it_cannot_load(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config")
    missing = tmp_path / "worker-1.kubeconfig"
    no_context = kubeconfig(tmp_path / "worker-2.kubeconfig", current=None)
    for value, said in (
        (f"worker-1={missing}", f"--worker-kubeconfig worker-1={missing}: kubeconfig"),
        (f"worker-2={no_context}", "has no current-context"),
    ):
        line = one_line_refusal(
            run(
                "serve", "--kubeconfig", str(config), "--port", "0", "--metrics-port", "0",
                "--worker-kubeconfig", value, home=tmp_path,
            )
        )  # fmt: skip
        assert said in line, line
