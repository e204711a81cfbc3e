"""kueue-graphql's whatIf and diagnose against what Kueue did, on Kueue's own scheduler tests.

Measured in the package's one run of the cases (conftest.py `port_run`, see agreement.py). A
case that agrees today must keep agreeing; a case listed in disagreements.yaml (written by
`python -m tests.kueue_port.agreement`, with the issue-21 class and what differs) is xfail
strict, so the fix that makes it agree must also take it off the list.
"""

from __future__ import annotations

import pytest
import yaml

from tests.cluster.driver import Cluster
from tests.kueue_port.agreement import DISAGREEMENTS
from tests.kueue_port.cases import Case
from tests.kueue_port.conftest import CASES, PortRun, skip_unless_configured

pytestmark = pytest.mark.cluster

KNOWN: dict[str, str] = yaml.safe_load(DISAGREEMENTS.read_text()) or {}


def _param(case: Case) -> object:
    reason = KNOWN.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


def test_the_disagreement_list_names_only_ported_cases() -> None:
    assert set(KNOWN) <= {c.id for c in CASES}


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_whatif_and_diagnose_agree_with_kueue(
    case: Case, cluster: Cluster, port_run: PortRun
) -> None:
    skip_unless_configured(case, cluster)
    result = port_run.results[case.id]
    record = port_run.agreement[case.id]
    report = "\n".join(
        [
            case.go_test,
            *result.failures,
            *record.errors,
            *(f"{c.kind} {c.workload} step {c.step} [{c.cls}]: {d}" for c in
              record.disagreements() for d in c.differs),
        ]
    )  # fmt: skip
    assert result.passed or case.divergent, f"Kueue did not reach the Go test's state:\n{report}"
    assert record.of("diagnose"), f"nothing was diagnosed in {case.id}"
    assert record.agrees, report
