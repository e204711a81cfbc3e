"""KGQL_INTEGRATIONS (tests/cluster/integrations.py): off by default, the control plane
is main's batch/Job one; on, only what the switch names; anything else is refused."""

from __future__ import annotations

import pytest

from tests.cluster import build, driver, integrations


@pytest.mark.parametrize("value", [None, "", "none", " none "])
def test_off_adds_nothing(value: str | None) -> None:
    selection = integrations.selected(value)
    assert selection == ()
    assert integrations.port_names(selection) == ()
    assert integrations.controller_manager_controllers(selection) == ()
    assert integrations.kueue_webhook_paths(selection) == ("kueue-x-k8s-io", "batch-v1-job")
    assert integrations.kueue_configuration(selection) == {
        "integrations": {"frameworks": ["batch/job"]}
    }


def test_off_builds_only_the_base_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(integrations.SWITCH, raising=False)
    asked: list[str] = []

    def ensure_built(program: build.GoProgram, progress: object) -> object:
        asked.append(program.name)
        return build.cache_root()

    monkeypatch.setattr(build, "ensure_built", ensure_built)
    assert driver.main(["build"]) == 0
    assert asked == [build.KUBE.name, build.KUEUE.name, *(tool.name for tool in build.TOOLS)]


def test_a_list_switches_on_those_and_starts_what_is_started() -> None:
    selection = integrations.selected("kuberay, jobset")
    assert [c.name for c in selection] == ["jobset", "kuberay"]
    assert [c.name for c in integrations.started(selection)] == ["jobset"]
    frameworks = integrations.kueue_configuration(selection)["integrations"]["frameworks"]
    assert "ray.io/rayjob" in frameworks
    assert "jobset.x-k8s.io/jobset" in frameworks
    assert "trainer.kubeflow.org/trainjob" not in frameworks
    assert integrations.selected("all") == integrations.CONTROLLERS


@pytest.mark.parametrize("value", ["jobsett", "ALL", "jobset,", "lws,none"])
def test_unknown_values_are_refused_with_the_accepted_ones(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(integrations.SWITCH, value)
    accepted = r"accepted: unset, empty or 'none' \(off\), 'all'"
    with pytest.raises(driver.ClusterError, match=accepted):
        driver.selected_integrations()
