"""Load the objects captured from the real control plane (see capture_fixtures.py).

`as_input(data, user)` replays what `user` may read: reads the API server denied that user at
capture time become Forbidden markers, objects that did not exist become Absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kueue_graphql.diagnosis import Absent, DiagnosisInput, Forbidden

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured"


def load(scenario: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURED / f"{scenario}.json").read_text())
    return data


def as_input(
    data: dict[str, Any], user: str = "admin", *, start_from: str = "job"
) -> DiagnosisInput:
    denied = set(data["forbidden"].get(user, ())) if user != "admin" else set()

    def observed(key: str) -> Any:
        if key in denied:
            return Forbidden(f"{user} may not read {key}")
        value = data[key]
        if value is None:
            return Absent(f"{key} not found")
        return value

    position: Any = Absent("not in the pending list")
    if "pendingWorkloads" in denied:
        position = Forbidden(f"{user} may not read pendingworkloads")
    elif data["pendingWorkloads"] is None:
        position = Absent("the visibility API returned no pending list for this LocalQueue")
    elif isinstance(data["workload"], dict):
        meta = data["workload"].get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        for item in data["pendingWorkloads"].get("items", []):
            if item["metadata"]["name"] == name:
                position = item
    return DiagnosisInput(
        owner=observed("job") if start_from == "job" else Absent("asked for the Workload"),
        workload=observed("workload"),
        events=observed("events"),
        pods=observed("pods"),
        local_queue=observed("localQueue"),
        cluster_queue=observed("clusterQueue"),
        cluster_queues=observed("clusterQueues"),
        cohorts=observed("cohorts"),
        resource_flavors=observed("resourceFlavors"),
        admission_checks=observed("admissionChecks"),
        nodes=observed("nodes"),
        queue_position=position,
    )
