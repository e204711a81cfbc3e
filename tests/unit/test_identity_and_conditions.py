import json
from pathlib import Path

import pytest

from kueue_graphql.core.identity import Identity
from kueue_graphql.kueue.conditions import holds_quota_in, workload_status
from kueue_graphql.kueue.objects import condition as find_condition

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


def _captured_workloads_and_cluster_queues() -> tuple[dict[str, dict], dict[str, dict]]:
    workloads: dict[str, dict] = {}
    cluster_queues: dict[str, dict] = {}
    for path in sorted(CAPTURED.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "workload" not in data:
            continue
        workload = data["workload"]
        if isinstance(workload, dict):
            meta = workload["metadata"]
            workloads[f"{meta['namespace']}/{meta['name']}"] = workload
        for cq in data.get("clusterQueues") or []:
            cluster_queues[cq["metadata"]["name"]] = cq
    return workloads, cluster_queues


def test_quota_holders_agree_with_kueues_reserving_count() -> None:
    """Kueue's own count is the oracle: a ClusterQueue's status.reservingWorkloads counts every
    Workload holding quota there, from any namespace, so the captured ones that hold quota can
    be no more; in cq-team-a (all its Workloads are captured scenarios, two of them finished
    but still carrying status.admission and QuotaReserved=True) exactly as many."""
    workloads, cluster_queues = _captured_workloads_and_cluster_queues()
    assert "cq-team-a" in cluster_queues
    finished_in_team_a = [
        w
        for w in workloads.values()
        if (w["status"].get("admission") or {}).get("clusterQueue") == "cq-team-a"
        and workload_status(w) == "finished"
    ]
    assert finished_in_team_a, "the captured scenarios should hold a finished Workload"
    for name, cq in cluster_queues.items():
        holders = [w for w in workloads.values() if holds_quota_in(w, name)]
        assert len(holders) <= cq["status"].get("reservingWorkloads", 0), name
    held = sum(holds_quota_in(w, "cq-team-a") for w in workloads.values())
    assert held == cluster_queues["cq-team-a"]["status"]["reservingWorkloads"]
    assert not any(holds_quota_in(w, "cq-team-a") for w in finished_in_team_a)
