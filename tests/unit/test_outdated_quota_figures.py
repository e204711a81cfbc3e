"""Issue 21 item 3 (one source of arithmetic): Kueue's "N more needed" written at an earlier
attempt is not shown as current, on objects captured from the real Kueue v0.17.0.

tests/fixtures/issue21/arithmetic/<case>.json: the ported case's Workloads, Events, LocalQueues
and ClusterQueues after one step, captured with `python -m tests.kueue_port.capture <case>
<step> <file>` (settled as the agreement run compares them); `diagnose` in each file is what
kueue-graphql answered then, before this fix. In each, Kueue wrote the pending Workload's
QuotaReserved=False message at its last attempt for it, and another Workload's admission (or
eviction) changed the ClusterQueue's usage afterwards, without a new attempt: Kueue's figure is
older than the usage.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.diagnosis import DiagnosisInput, diagnose
from kueue_graphql.diagnosis.model import Diagnosis
from kueue_graphql.kueue.exact import parse_quantity

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "issue21" / "arithmetic"

# case -> (pending Workload, Kueue's outdated figure, the current requested - availableNow)
CASES = {
    "s-pods-count": ("wl2", "1", "3"),
    "s-requeue-on-delete-cq": ("on-demand-wl2", "3", "4"),
    "p-newer-same-priority": ("wl-3", "1", "2"),
    "p-strict-fifo-reclaim": ("pending", "1", "-2"),
}
_MORE = re.compile(r"(\S+) more needed")


def _load(case: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{case}.json").read_text())
    return data


def _diagnose(data: dict[str, Any], name: str) -> Diagnosis:
    wl = next(w for w in data["workloads"] if w["metadata"]["name"] == name)
    lq = next(
        q
        for q in data["localQueues"]
        if (q["metadata"]["namespace"], q["metadata"]["name"])
        == (wl["metadata"]["namespace"], wl["spec"]["queueName"])
    )
    cq = next(
        c for c in data["clusterQueues"] if c["metadata"]["name"] == lq["spec"]["clusterQueue"]
    )
    return diagnose(
        DiagnosisInput(
            workload=wl,
            events=data["events"],
            pods=[],
            local_queue=lq,
            cluster_queue=cq,
            cluster_queues=data["clusterQueues"],
            cohorts=[],
        )
    )


def _kueue_message(data: dict[str, Any], name: str) -> str:
    wl = next(w for w in data["workloads"] if w["metadata"]["name"] == name)
    cond = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert cond["status"] == "False"
    return str(cond["message"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_captured_state_has_an_outdated_kueue_figure(case: str) -> None:
    # The evidence: Kueue's figure is not the ClusterQueue's current arithmetic, and the answer
    # captured before the fix showed Kueue's figure as current, beside quota lines saying other.
    name, kueue, now = CASES[case]
    data = _load(case)
    assert _MORE.findall(_kueue_message(data, name)) == [kueue]
    before = data["diagnose"][name]["diagnose"]
    missing = [
        parse_quantity(str(ln["requested"]["amount"]))
        - parse_quantity(str(ln["availableNow"]["amount"]))
        for ln in before["quota"]["lines"]
        if ln["verdict"] != "FITS_NOW" or Decimal(now) <= 0
    ]
    assert Decimal(now) in missing
    assert f"Wait: {kueue} more" in " ".join(before["nextSteps"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_kueue_s_outdated_figure_is_its_earlier_attempt_never_current(case: str) -> None:
    name, kueue, now = CASES[case]
    data = _load(case)
    d = _diagnose(data, name)
    message = _kueue_message(data, name)
    found = re.search(r"insufficient unused quota [^,]*, \S+ more needed", message)
    assert found is not None
    said = found.group(0)
    # Kueue's reason is reported as its earlier attempt, with what changed since.
    assert f"[earlier, no longer current: {said} (Kueue's earlier attempt, written " in d.summary
    assert "usage changed without a new attempt for this Workload" in d.summary
    assert all(said not in r.message for r in d.reasons)
    current = d.summary.split(" [earlier, no longer current:")[0]
    assert f" {kueue} more" not in current
    # One arithmetic: the summary, the reasons and the next steps say the quota line's figure.
    steps = " ".join(d.next_steps)
    if Decimal(now) > 0:
        assert current.startswith(f"waits for quota: {now} more ")
        assert f"Wait: {now} more " in steps
        assert [r.number("moreNeeded") for r in d.reasons if r.code == "WaitingForQuota"] == [
            Decimal(now)
        ]
    else:
        assert "free now" in current
        assert "more needed" not in current
    assert f"Wait: {kueue} more" not in steps


def test_a_current_condition_and_an_outdated_event_say_the_figure_once() -> None:
    # Kueue's condition rewritten by a newer attempt (3 more needed, current), its latest
    # Pending event from an earlier one (1): the figure is said once, the event is earlier.
    data = _load("s-pods-count")
    current = (
        "insufficient unused quota for pods in flavor kp-s-pods-count-on-demand, 3 more needed"
    )
    wl = next(w for w in data["workloads"] if w["metadata"]["name"] == "wl2")
    cond = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    cond["message"] = f"couldn't assign flavors to pod set main: {current}"
    d = _diagnose(data, "wl2")
    quota = [r for r in d.reasons if r.code == "WaitingForQuota"]
    assert [(r.number("moreNeeded"), r.message) for r in quota] == [(Decimal(3), current)]
    assert d.summary.startswith("waits for quota: 3 more pods must be free in flavor ")
    assert "1 more needed (Kueue's earlier attempt" in d.summary
