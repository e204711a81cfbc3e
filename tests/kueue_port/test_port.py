"""Each ported Kueue scheduler test, run on the real Kueue of tests/cluster (see README.md).

The cases run concurrently (each in its own namespaces, with its own prefixed cluster-scoped
objects) once per module; each parametrized test then reports one case.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import yaml

from tests.cluster.driver import Cluster
from tests.kueue_port.cases import Case, load_cases
from tests.kueue_port.kube import admin_client
from tests.kueue_port.runner import CaseResult, case_namespaces, run_case, wait_gone

pytestmark = pytest.mark.cluster

CASES = load_cases()
# Cases run at once; each mostly waits on Kueue, so more than the cores is fine.
PARALLEL = 12


def kueue_config(cluster: Cluster) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(
        (cluster.state_dir / "kueue" / "config.yaml").read_text()
    )
    return loaded


def missing_config(case: Case, config: dict[str, Any]) -> list[str]:
    """The Configuration keys the case needs that this control plane's Kueue does not set."""
    return [key for key in case.requires_config if key not in config]


def selected_cases(session: pytest.Session) -> list[Case]:
    """The cases of this module that this run selected (so `-k <case id>` runs only that case)."""
    ids = set()
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and isinstance(callspec.params.get("case"), Case):
            ids.add(callspec.params["case"].id)
    return [c for c in CASES if c.id in ids]


@pytest.fixture(scope="module")
def results(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[dict[str, CaseResult]]:
    config = kueue_config(cluster)
    runnable = [c for c in selected_cases(request.session) if not missing_config(c, config)]
    kube = admin_client(cluster)
    try:
        with ThreadPoolExecutor(PARALLEL) as pool:
            done = pool.map(lambda case: run_case(kube, case, wait_for_namespaces=False), runnable)
            by_id = {result.case.id: result for result in done}
        # The namespaces of every case, waited for once (the namespace controller is slow).
        left = wait_gone(
            kube,
            [ns for case in runnable for ns in case_namespaces(case)],
            "the namespaces of the ported cases to be gone",
        )
        for result in by_id.values():
            result.failures.extend(f"cleanup: {problem}" for problem in left)
        yield by_id
    finally:
        kube.close()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kueue_reaches_the_go_tests_expectation(
    case: Case, cluster: Cluster, results: dict[str, CaseResult]
) -> None:
    missing = missing_config(case, kueue_config(cluster))
    if missing:
        pytest.skip(f"needs Kueue Configuration {missing} (the Go suite's), not set here")
    result = results[case.id]
    report = "\n".join([case.go_test, *result.log, *result.failures])
    cleanup = [f for f in result.failures if f.startswith("cleanup")]
    assert not cleanup, report
    if case.divergent:
        # Known divergence: the data says why; this pins that Kueue here still differs.
        assert not result.passed, f"{case.id} is marked divergent but passes: unmark it\n{report}"
        return
    assert result.passed, report
