"""The oracle's comparison: whatIf's answer for an object against the Workload the real Kueue then
made of the same object and its QuotaReserved decision."""

from __future__ import annotations

from typing import Any


def assert_agrees_with_kueue(answer: dict[str, Any], workload: dict[str, Any]) -> None:
    """Same pod sets (names, counts); admitted: FITS_NOW with Kueue's flavor per resource;
    refused: NEVER_FITS or MUST_WAIT with Kueue's exact QuotaReserved=False message."""
    assert [(p["name"], p["count"]) for p in answer["podSets"]] == [
        (p["name"], p["count"]) for p in workload["spec"]["podSets"]
    ]
    [reserved] = [c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved"]
    if reserved["status"] == "True":
        assert answer["verdict"] == "FITS_NOW", answer
        admitted = workload["status"]["admission"]["podSetAssignments"]
        kueue_flavors = {a["name"]: a["flavors"] for a in admitted}
        for pod_set in answer["podSets"]:
            flavors = {r: g["flavor"] for g in pod_set["resourceGroups"] for r in g["resources"]}
            assert flavors == kueue_flavors[pod_set["name"]], (pod_set, admitted)
    else:
        assert answer["verdict"] in ("NEVER_FITS", "MUST_WAIT"), answer
        assert answer["kueueMessage"] == reserved["message"], (answer, reserved)
