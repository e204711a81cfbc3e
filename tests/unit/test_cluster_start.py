"""The control-plane driver's wait for its CRDs (tests/cluster/driver.py): a CRD whose status
has no conditions yet is waited for, not an error."""

from __future__ import annotations

from typing import Any

from tests.cluster.driver import crds_not_established


def _crd(name: str, status: dict[str, Any] | None) -> dict[str, Any]:
    crd: dict[str, Any] = {"metadata": {"name": name}}
    if status is not None:
        crd["status"] = status
    return crd


def _established(status: str, reason: str = "InitialNamesAccepted") -> dict[str, Any]:
    return {"conditions": [{"type": "Established", "status": status, "reason": reason}]}


def test_every_crd_established() -> None:
    listed = [_crd("a.kueue.x-k8s.io", _established("True"))]
    listed.append(_crd("b.kueue.x-k8s.io", _established("True")))
    assert crds_not_established(listed, ["a.kueue.x-k8s.io", "b.kueue.x-k8s.io"]) == {}


def test_a_crd_without_conditions_yet_is_named_not_failed() -> None:
    # What `kubectl wait --for=condition=Established crd --all` failed on: a status (or none)
    # with no conditions, right after the CRD was created.
    listed = [
        _crd("a.kueue.x-k8s.io", _established("True")),
        _crd("b.kueue.x-k8s.io", {}),
        _crd("c.kueue.x-k8s.io", None),
        _crd("d.kueue.x-k8s.io", {"conditions": None}),
    ]
    names = ["a.kueue.x-k8s.io", "b.kueue.x-k8s.io", "c.kueue.x-k8s.io", "d.kueue.x-k8s.io"]
    assert crds_not_established(listed, names) == {
        name: "no Established condition in its status yet" for name in names[1:]
    }


def test_not_established_and_not_created_say_what_was_seen() -> None:
    listed = [_crd("a.kueue.x-k8s.io", _established("False", "NotAccepted"))]
    assert crds_not_established(listed, ["a.kueue.x-k8s.io", "b.kueue.x-k8s.io"]) == {
        "a.kueue.x-k8s.io": "Established=False (NotAccepted)",
        "b.kueue.x-k8s.io": "not created",
    }


def test_other_crds_are_not_waited_for() -> None:
    listed = [_crd("other.example.com", {}), _crd("a.kueue.x-k8s.io", _established("True"))]
    assert crds_not_established(listed, ["a.kueue.x-k8s.io"]) == {}
