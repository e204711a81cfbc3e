"""The ported data itself (no cluster): every case cites a real Go test, names stay per case."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.kueue_port.cases import GO_MODULE, Case, load_cases
from tests.kueue_port.runner import Observed, unmet

CASES = load_cases()


@functools.cache
def go_module_dir() -> Path | None:
    """The Kueue module in the Go module cache, if this machine has it."""
    try:
        out = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(out) / GO_MODULE
    return path if path.is_dir() else None


def test_at_least_forty_cases_across_the_three_files() -> None:
    assert len(CASES) >= 40
    assert {c.go_file.rsplit("/", 1)[-1] for c in CASES} == {
        "scheduler_test.go",
        "preemption_test.go",
        "fair_sharing_test.go",
    }


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_cites_a_go_test_that_exists(case: Case) -> None:
    module = go_module_dir()
    if module is None:
        pytest.skip(f"{GO_MODULE} is not in the Go module cache")
    source = (module / case.go_file).read_text()
    # The containers' texts come before the It text, in this order, in the Go file.
    position = 0
    for text in case.go_path:
        found = source.find(f'"{text}"', position)
        assert found >= 0, f"{text!r} not found after offset {position} in {case.go_file}"
        position = found


def test_materialize_prefixes_names_and_rewrites_references() -> None:
    case = next(c for c in CASES if c.id == "s-long-distance")
    objects = {(m["kind"], m["metadata"]["name"]): m for m in case.materialized_objects()}
    prefix = case.prefix()
    cq = objects[("ClusterQueue", prefix + "cq")]
    assert cq["spec"]["cohortName"] == prefix + "left"
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] == prefix + "on-demand"
    assert objects[("Cohort", prefix + "left")]["spec"]["parentName"] == prefix + "root"
    lq = objects[("LocalQueue", "queue")]
    assert lq["spec"]["clusterQueue"] == prefix + "cq"
    assert lq["metadata"]["namespace"] == prefix + "ns"
    assert ("Namespace", prefix + "ns") in objects


def test_no_two_cases_share_a_cluster_scoped_name() -> None:
    seen: dict[tuple[str, str], str] = {}
    for case in CASES:
        for manifest in case.materialized_objects():
            if "namespace" in manifest["metadata"]:
                continue
            key = (manifest["kind"], manifest["metadata"]["name"])
            assert key not in seen, f"{key} in {case.id} and {seen[key]}"
            seen[key] = case.id


def test_unmet_reports_what_differs() -> None:
    case = next(c for c in CASES if c.id == "s-taints")
    expect = case.steps[0].expect
    assert expect is not None
    key = case.workload_key("on-demand-wl1")
    admitted = {
        "metadata": {"name": key[1]},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
            ],
            "admission": {
                "clusterQueue": case.name("ClusterQueue", "cluster-queue"),
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": case.name("ResourceFlavor", "on-demand")}}
                ],
            },
        },
    }
    assert unmet(case, expect, Observed({key: admitted}, {}, {})) == []
    admitted["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] = "elsewhere"  # type: ignore[index]
    missing = unmet(case, expect, Observed({key: admitted}, {}, {}))
    assert len(missing) == 1
    assert "wanted flavors" in missing[0]
    assert unmet(case, expect, Observed({}, {}, {})) == ["on-demand-wl1: Workload absent"]


def _case(case_id: str) -> Case:
    return next(c for c in CASES if c.id == case_id)


def test_whatif_is_asked_in_kueue_order_within_a_step() -> None:
    """Kueue takes a step's Workloads of one ClusterQueue one after the other (priority, then
    creation): whatIf for the later ones is asked once the earlier ones exist and were decided
    (agreement.py), as Kueue sees them; before, whatIf for wl-2 of s-lending-limit-update was
    asked before wl-1 existed and said FITS_NOW."""
    from tests.kueue_port.agreement import asked_in_creation_order

    update = _case("s-lending-limit-update")
    assert asked_in_creation_order(update, update.steps[0]) == {"wl-2"}
    # Different ClusterQueues: created together, each asked before the step.
    same_cycle = _case("s-borrow-same-cycle")
    assert asked_in_creation_order(same_cycle, same_cycle.steps[0]) == set()
    # A later Workload of higher priority is taken first by Kueue: no order to follow.
    lower = _case("p-lower-priority")
    assert asked_in_creation_order(lower, lower.steps[0]) == set()
    # Across namespaces: the LocalQueue of each namespace leads to the same ClusterQueue.
    selector = _case("s-namespace-selector")
    assert asked_in_creation_order(selector, selector.steps[0]) == {"wl2"}


def test_kueues_more_needed_is_compared_with_the_quota_line() -> None:
    """Issue 21 item 3: one source of arithmetic. Kueue's "N more needed" against diagnose's
    quota line (requested - availableNow), in Kueue's units, unless diagnose reports it as
    Kueue's earlier attempt."""
    from tests.kueue_port.arithmetic import EARLIER, diagnose_differs

    part = "insufficient unused quota for cpu in flavor on-demand, 1500m more needed"
    message = f"couldn't assign flavors to pod set main: {part}"
    wl = {
        "spec": {
            "podSets": [
                {
                    "count": 2,
                    "template": {
                        "spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}
                    },
                }
            ]
        }
    }
    line = {
        "flavor": "on-demand",
        "resource": "cpu",
        "requested": {"amount": "2"},
        "availableNow": {"amount": "0.5"},
    }
    d: dict[str, Any] = {
        "quota": {"visibility": "AVAILABLE", "lines": [line]},
        "summary": "waits for quota: 1500m more cpu must be free in flavor on-demand",
        "nextSteps": ["Wait: 1500m more cpu must be freed in flavor on-demand by Workloads"],
        "reasons": [],
    }
    assert diagnose_differs(d, wl, message) == []
    line["availableNow"] = {"amount": "1"}
    differs = diagnose_differs(d, wl, message)
    assert any(
        "summary says '1500m more cpu must be free in flavor on-demand'" in x for x in differs
    )
    assert any("next step" in x for x in differs)
    assert any(f"Kueue's {part!r} taken as current" in x for x in differs)
    # Reported as Kueue's earlier attempt, with the current figure: one arithmetic.
    d["summary"] = (
        f"waits for quota: 1 more cpu must be free in flavor on-demand{EARLIER} {part} ...]"
    )
    d["nextSteps"] = ["Wait: 1 more cpu must be freed in flavor on-demand by Workloads"]
    assert diagnose_differs(d, wl, message) == []
    line["requested"] = {"amount": "3"}
    assert any("the Workload requests 2" in x for x in diagnose_differs(d, wl, message))
