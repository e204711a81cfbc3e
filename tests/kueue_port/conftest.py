"""One run of the selected ported cases for the package: test_port.py checks that Kueue reaches
each Go test's expectation, test_agreement.py that kueue-graphql's whatIf and diagnose agree with
Kueue, both from the same run (the agreement observer asks around the runner's steps)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.cluster.driver import Cluster
from tests.kueue_port.agreement import CaseAgreement, observing, run_cases
from tests.kueue_port.cases import Case, load_cases
from tests.kueue_port.runner import CaseResult

CASES = load_cases()


def kueue_config(cluster: Cluster) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(
        (cluster.state_dir / "kueue" / "config.yaml").read_text()
    )
    return loaded


def missing_config(case: Case, config: dict[str, Any]) -> list[str]:
    """The Configuration keys the case needs that this control plane's Kueue does not set."""
    return [key for key in case.requires_config if key not in config]


def skip_unless_configured(case: Case, cluster: Cluster) -> None:
    """Skip a test of a case whose Kueue Configuration this control plane lacks."""
    missing = missing_config(case, kueue_config(cluster))
    if missing:
        pytest.skip(f"needs Kueue Configuration {missing} (the Go suite's), not set here")


def selected_cases(session: pytest.Session) -> list[Case]:
    """The cases this run selected in either module (so `-k <case id>` runs only that case)."""
    ids = set()
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and isinstance(callspec.params.get("case"), Case):
            ids.add(callspec.params["case"].id)
    return [c for c in CASES if c.id in ids]


@dataclass
class PortRun:
    results: dict[str, CaseResult]
    agreement: dict[str, CaseAgreement]
    # Seconds the whatIf/diagnose calls took, summed over cases (the cost of measuring).
    observer_seconds: float


@pytest.fixture(scope="package")
def port_run(cluster: Cluster, request: pytest.FixtureRequest) -> PortRun:
    config = kueue_config(cluster)
    runnable = [c for c in selected_cases(request.session) if not missing_config(c, config)]
    with observing(cluster) as (kube, observer):
        results = run_cases(kube, observer, runnable)
    agreement = {c.id: observer.results.get(c.id, CaseAgreement(c)) for c in runnable}
    return PortRun(results, agreement, sum(observer.seconds.values()))
