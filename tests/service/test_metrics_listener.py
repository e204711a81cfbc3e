"""/metrics on a listener of its own (issue 22, N7): the API port, which every caller can reach,
answers /metrics with 404; the metrics port serves the Prometheus series and nothing else."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.driver import Cluster
from tests.service.conftest import Server

pytestmark = pytest.mark.cluster

VIEWER = "{ viewer { username } }"


def _requests_ok(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "kueue_graphql_requests_total" and sample.labels == {
                "operation_type": "query",
                "outcome": "OK",
            }:
                return float(sample.value)
    return 0.0


async def test_api_port_has_no_metrics(server: Server, cluster: Cluster) -> None:
    for method in ("GET", "HEAD", "POST"):
        response = await server.http.request(method, "/metrics")
        assert response.status_code == 404, (method, response.text)
        assert "kueue_graphql_" not in response.text
    # The API itself is still there.
    body = await server.query(VIEWER, token=cluster.token("alice"))
    assert body["data"]["viewer"]["username"] == "alice"


async def test_metrics_port_serves_the_series_the_api_port_moves(
    server: Server, cluster: Cluster
) -> None:
    before = await server.metrics.get("/metrics")
    assert before.status_code == 200
    assert before.headers["content-type"].startswith("text/plain; version=")
    names = {family.name for family in text_string_to_metric_families(before.text)}
    assert {
        "kueue_graphql_requests",
        "kueue_graphql_request_duration_seconds",
        "kueue_graphql_api_calls",
        "kueue_graphql_token_reviews",
        "kueue_graphql_access_decisions",
    } <= names
    for _ in range(2):
        await server.query(VIEWER, token=cluster.token("alice"))
    after = await server.metrics.get("/metrics")
    assert _requests_ok(after.text) - _requests_ok(before.text) == 2


async def test_metrics_port_serves_nothing_else(server: Server, cluster: Cluster) -> None:
    for path in ("/graphql", "/healthz", "/readyz", "/"):
        response = await server.metrics.get(path)
        assert response.status_code == 404, (path, response.text)
    answer = await server.metrics.post(
        "/graphql",
        json={"query": VIEWER},
        headers={"Authorization": f"Bearer {cluster.token('alice')}"},
    )
    assert answer.status_code == 404
    assert "alice" not in answer.text
