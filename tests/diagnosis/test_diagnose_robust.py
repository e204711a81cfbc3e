"""The diagnosis degrades, never crashes, on objects of unexpected shape (other Kueue or
Kubernetes versions, partial objects): every field of the REAL captured Workload, LocalQueue,
ClusterQueue and Pods is in turn deleted or replaced by a value of the wrong type."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kueue_graphql.diagnosis import Diagnosis, diagnose
from tests.diagnosis.captured import as_input, load

WRONG = (None, "x", 7, [], {})


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("managedFields", "template"):  # bulky and read only for requests
                continue
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj[:2]):
            yield (*prefix, i)
            yield from paths(value, (*prefix, i))


_DELETE = object()
_MISSING = object()


def run_mutated(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> Diagnosis:
    """Diagnose with one field changed in place, then put it back (deep copies are slow)."""
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    before = parent.get(key, _MISSING) if isinstance(parent, dict) else parent[key]
    try:
        if value is _DELETE:
            del parent[key]
        else:
            parent[key] = value
        return diagnose(as_input(data, "viewer"))
    finally:
        if before is not _MISSING:
            parent[key] = before


@pytest.mark.parametrize(
    "scenario",
    ["too-big-3x1cpu", "over-borrowing-limit", "admitted-but-unschedulable", "waits-for-approval"],
)
def test_no_field_shape_crashes_the_diagnosis(scenario: str) -> None:
    data = copy.deepcopy(load(scenario))
    checked = 0
    for top in ("workload", "localQueue", "clusterQueue", "pods"):
        if data[top] is None:
            continue
        for path in list(paths(data[top], (top,))):
            for value in (_DELETE, *WRONG):
                if value is _DELETE and isinstance(path[-1], int):
                    continue
                assert isinstance(run_mutated(data, path, value), Diagnosis)
                checked += 1
    assert checked > 100
