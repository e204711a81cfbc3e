"""Each ported Kueue scheduler test, run on the real Kueue of tests/cluster (see README.md).

The cases run concurrently (each in its own namespaces, with its own prefixed cluster-scoped
objects) once per package (conftest.py `port_run`); each parametrized test reports one case.
"""

from __future__ import annotations

import pytest

from tests.cluster.driver import Cluster
from tests.kueue_port.cases import Case
from tests.kueue_port.conftest import CASES, PortRun, skip_unless_configured

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kueue_reaches_the_go_tests_expectation(
    case: Case, cluster: Cluster, port_run: PortRun
) -> None:
    skip_unless_configured(case, cluster)
    result = port_run.results[case.id]
    report = "\n".join([case.go_test, *result.log, *result.failures])
    cleanup = [f for f in result.failures if f.startswith("cleanup")]
    assert not cleanup, report
    if case.divergent:
        # Known divergence: the data says why; this pins that Kueue here still differs.
        assert not result.passed, f"{case.id} is marked divergent but passes: unmark it\n{report}"
        return
    assert result.passed, report
