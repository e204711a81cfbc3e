"""The service as a pod of the chart runs it: in-cluster configuration, the chart's
ServiceAccount (constrained impersonation), and every caller sees what kubectl shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chart.conftest import (
    InClusterServer,
    start_in_cluster,
    stop,
    token_kubeconfig,
)
from tests.cluster.driver import Cluster
from tests.service.test_rbac_matches_kubectl import PROBES, kubectl_view, view_mismatches

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("user", ["alice", "bob", "viewer", "nobody", "grace", "carol", "dave"])
async def test_callers_see_what_kubectl_shows_them(
    chart_server: InClusterServer, cluster: Cluster, user: str
) -> None:
    assert await view_mismatches(chart_server, cluster, user, cluster.token(user)) == []


@pytest.mark.parametrize("user", ["alice", "bob", "viewer", "nobody", "grace", "carol", "dave"])
async def test_callers_see_what_kubectl_shows_them_in_cache_mode(
    chart_cache_server: InClusterServer, cluster: Cluster, user: str
) -> None:
    # The chart's readMode cache RBAC is enough for the informers (the server got ready), and
    # access through the cache is what kubectl shows each caller.
    assert await view_mismatches(chart_cache_server, cluster, user, cluster.token(user)) == []
    body = await chart_cache_server.query(
        '{ localQueues(first: 5, namespace: "team-a") { nodes { name } } }',
        token=cluster.token("alice"),
    )
    assert "LocalQueue" in body["extensions"]["cache"]["kinds"]


async def test_a_service_account_caller_sees_what_kubectl_shows_it(
    chart_server: InClusterServer, cluster: Cluster, tmp_path: Path
) -> None:
    # Impersonated by name alone (impersonate:serviceaccount), with a real bound token.
    token = cluster.service_account_token("team-a", "ci-bot")
    kubeconfig = token_kubeconfig(cluster, token, tmp_path, "ci-bot")
    assert await view_mismatches(chart_server, cluster, "ci-bot", token, kubeconfig) == []
    body = await chart_server.query("{ viewer { username } }", token=token)
    assert body["data"]["viewer"]["username"] == "system:serviceaccount:team-a:ci-bot"


async def test_system_masters_cannot_be_impersonated_so_admin_reads_nothing(
    chart_server: InClusterServer, cluster: Cluster
) -> None:
    # Constrained impersonation refuses the group system:masters: kubectl shows admin
    # everything, the service (which can only act as its callers) is refused every read.
    for probe in PROBES:
        assert kubectl_view(cluster, "admin", probe)[0], probe.name
        body = await chart_server.query(probe.query, token=cluster.token("admin"))
        codes = {e["extensions"]["code"] for e in body.get("errors") or []}
        assert codes == {"FORBIDDEN"}, (probe.name, body)


def test_an_identity_that_cannot_review_tokens_is_not_ready(
    cluster: Cluster, tmp_path: Path
) -> None:
    # team-a/ci-bot may read team-a but not create TokenReviews or SubjectAccessReviews.
    token = cluster.service_account_token("team-a", "ci-bot")
    server = start_in_cluster(cluster, token, "team-a", tmp_path)
    try:
        ready = server.readyz()
        assert ready.status_code == 503
        assert "may not create tokenreviews.authentication.k8s.io" in ready.text
        assert "may not create subjectaccessreviews.authorization.k8s.io" in ready.text
    finally:
        stop(server)
    assert "not ready: the service's identity may not create tokenreviews" in server.log.read_text()
