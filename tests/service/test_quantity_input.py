"""Issue 22's W1 and W2 against the real server, in both read modes: a `whatIf` quantity is
parsed with bounded cost (Kubernetes' grammar, kueue.quantity's limits) before any API call.

W1: "1e-100000" cost ~0.75 s of event-loop CPU, "1e-1000000" more than 70 s. W2: "1e4300" and
5,000 x "1" were INTERNAL with an ERROR traceback (Python's 4,300-digit int limit). Their CPU per
refusal is printed by benchmarks/query_bomb.py (tests assert no timings).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.cluster.driver import Cluster
from tests.service.conftest import Server
from tests.service.test_bad_input import assert_error

pytestmark = [pytest.mark.cluster, pytest.mark.both_read_modes]

WHAT_IF = """
query WhatIf($pods: [WhatIfPodSetInput!]) {
  whatIf(namespace: "team-a", localQueue: "lq-research", podSets: $pods) {
    verdict summary
    podSets { name requests { resource value { quantity } } totalRequests { value { quantity } } }
  }
}
"""


def pod_sets(quantity: str) -> list[dict[str, Any]]:
    # The hostile quantity is the second request of the first pod set.
    return [
        {
            "name": "main",
            "count": 1,
            "requests": [
                {"resource": "cpu", "quantity": "1"},
                {"resource": "memory", "quantity": quantity},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("quantity", "reason"),
    [
        ("1e-100000", "exponent -100000 is outside -64..64"),  # W1
        ("1e-1000000", "exponent -1000000 is outside -64..64"),  # W1
        ("1e4300", "exponent 4300 is outside -64..64"),  # W2
        ("1" * 5000, "longer than 64 characters (5000)"),  # W2
    ],
    ids=["1e-100000", "1e-1000000", "1e4300", "5000-ones"],
)
async def test_hostile_quantity_is_bad_request_before_any_api_call(
    server: Server, cluster: Cluster, caplog: pytest.LogCaptureFixture, quantity: str, reason: str
) -> None:
    with caplog.at_level(logging.DEBUG):
        response = await server.post(
            WHAT_IF, {"pods": pod_sets(quantity)}, token=cluster.token("alice")
        )
    assert "errors" in response.json(), response.text[:300]
    body = assert_error(
        response,
        200,
        "BAD_REQUEST",
        "podSets[0].requests[1].quantity: ",
        reason,
        "e.g. 500m, 2Gi",  # what a valid quantity looks like
    )
    assert body["data"] == {"whatIf": None}
    assert body["extensions"]["apiCalls"] == 0
    assert quantity not in response.text or len(quantity) < 64, "a long input is not echoed"
    refusals = [r for r in caplog.records if "BAD_REQUEST" in r.getMessage()]
    assert refusals, "the refusal's DEBUG line: without it the log check below proves nothing"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_the_same_query_with_a_quantity_answers(server: Server, cluster: Cluster) -> None:
    # The refusal above is the quantity's: with a valid one (and one Kubernetes rounds up to a
    # nano) the same request is answered.
    for quantity in ("768Mi", "1e-64"):
        body = await server.query(
            WHAT_IF, {"pods": pod_sets(quantity)}, token=cluster.token("alice")
        )
        assert "errors" not in body, body
        # alice may not read the ClusterQueue (no disclosure policy): a verdict all the same.
        assert body["data"]["whatIf"]["verdict"] == "UNKNOWN"
