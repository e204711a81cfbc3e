import json
from pathlib import Path

import pytest

from kueue_graphql.core.conditions import find_condition, workload_status
from kueue_graphql.core.identity import Identity

CAPTURED = Path(__file__).parents[1] / "fixtures" / "captured"


def test_identity_from_token_review_user() -> None:
    identity = Identity.from_user_info(
        {
            "username": "grace",
            "uid": "u-1",
            "groups": ["engineering", "team-a-readers", "system:authenticated"],
            "extra": {"b": ["2"], "a": ["1", "x"]},
        }
    )
    assert identity.groups == ("engineering", "team-a-readers", "system:authenticated")
    assert identity.extra == (("a", ("1", "x")), ("b", ("2",)))
    assert identity.extra_dict == {"a": ["1", "x"], "b": ["2"]}


def test_identities_differing_in_one_group_are_different_keys() -> None:
    a = Identity("grace", groups=("engineering", "team-a-readers"))
    b = Identity("grace", groups=("engineering",))
    assert a != b
    assert len({a, b, Identity("grace", groups=("engineering", "team-a-readers"))}) == 2


def test_identity_needs_a_username() -> None:
    with pytest.raises(ValueError, match="username"):
        Identity.from_user_info({"groups": []})


def test_workload_status_of_captured_workloads() -> None:
    pending = json.loads((CAPTURED / "too-big-3x1cpu.json").read_text())["workload"]
    admitted = json.loads((CAPTURED / "borrows-one-cpu.json").read_text())["workload"]
    assert workload_status(pending) == "pending"
    assert workload_status(admitted) == "admitted"
    condition = find_condition(pending, "QuotaReserved")
    assert condition is not None
    assert condition["status"] == "False"
