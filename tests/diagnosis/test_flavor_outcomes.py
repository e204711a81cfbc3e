"""Per pod set, over every flavor Kueue tried: never fits only when every flavor exceeds.

REAL messages: Kueue v0.17.0 on the test control plane, a ClusterQueue with flavors standard
(1 CPU) and spare (2 CPU, held by an admitted Workload of 2 CPU)."""

from __future__ import annotations

from kueue_graphql.diagnosis.flavor_outcomes import ceilings, pod_set_quotas, requested, shortfalls
from kueue_graphql.kueue.messages import parse_kueue_message
from kueue_graphql.kueue.model import ReasonSource

NEVER = (
    "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor spare, "
    "previously considered podsets requests (0) + current podset request (3) > maximum capacity "
    "(2), insufficient quota for cpu in flavor standard, previously considered podsets requests "
    "(0) + current podset request (3) > maximum capacity (1)"
)
MIXED = (
    "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor standard, "
    "previously considered podsets requests (0) + current podset request (2) > maximum capacity "
    "(1), insufficient unused quota for cpu in flavor spare, 2 more needed"
)


def test_every_flavor_exceeding_never_fits() -> None:
    [main] = pod_set_quotas(parse_kueue_message(NEVER, "Pending", ReasonSource.CONDITION))
    assert main.pod_set == "main"
    assert main.never_fits
    assert ceilings(main.exceeded) == "2 in flavor spare, 1 in flavor standard"
    assert requested(main.exceeded) == "3 cpu"


def test_one_flavor_waiting_means_the_pod_set_waits() -> None:
    [main] = pod_set_quotas(parse_kueue_message(MIXED, "Pending", ReasonSource.CONDITION))
    assert not main.never_fits
    assert [r.flavor for r in main.exceeded] == ["standard"]
    assert shortfalls(main.waiting) == "2 more cpu must be free in flavor spare"


def test_several_waiting_flavors_are_alternatives() -> None:
    both = (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "a, 1 more needed, insufficient unused quota for memory in flavor b, 512Mi more needed"
    )
    [main] = pod_set_quotas(parse_kueue_message(both, "Pending", ReasonSource.CONDITION))
    assert shortfalls(main.waiting) == (
        "1 more cpu must be free in flavor a, or 512Mi more memory in flavor b"
    )
