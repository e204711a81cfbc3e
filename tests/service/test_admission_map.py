"""The admission map (/why/<namespace>/<kind>/<name>) in headless Chromium, every host but
loopback blocked, against the real control plane: the six seed cases as alice (a tenant who may
not read ClusterQueues) and as viewer (cluster-wide read), each page checked against what the
GraphQL API gives that user for the same document; bob's refusal; a quota change seen without a
reload; the token typed once and kept in sessionStorage only; an auth proxy's header used
instead of a typed token.

With ADMISSION_MAP_SCREENSHOTS=DIR (`make map-screenshots`: docs/admission-map) each seed case
is also saved as DIR/<case>-<user>.png."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kueue_graphql.http.map_assets import OWN_DIRECTORY
from tests.cluster.driver import Cluster
from tests.diagnosis.own_objects import GROUP, apply, workload
from tests.service.browser_support import (
    OfflinePage,
    Process,
    launched_browser,
    offline_page,
    served_process,
)
from tests.waiting import READY_SECONDS, SETTLE_SECONDS, wait_until

pytestmark = pytest.mark.cluster

# The map's one GraphQL document, as the page fetches it; run here as a query for comparison.
DOCUMENT = (OWN_DIRECTORY / "admission-map.graphql").read_text()
QUERY = DOCUMENT.replace("subscription AdmissionMap", "query AdmissionMap", 1).replace(
    "diagnosis(", "diagnosis: diagnose(", 1
)
# The seeded scenarios docs/why.md and the README name (tests/cluster/manifests/40-jobs.yaml,
# 50-jobs-after-admission.yaml) and the kind of object that holds each.
SEED_CASES = {
    "waits-on-stopped-queue": "LocalQueue",
    "waits-on-missing-clusterqueue": "LocalQueue",
    "no-spot-toleration": "ResourceFlavor",
    "over-borrowing-limit": "ClusterQueue",
    "waits-for-approval": "AdmissionCheck",
    "admitted-but-unschedulable": "Pod",
}
NAMESPACE = "team-a"
TOKEN_KEY = "kueue-graphql:admission-map:token"
SCREENSHOTS = os.environ.get("ADMISSION_MAP_SCREENSHOTS")
MAP = "kueue-admission-map"


@pytest.fixture(scope="module")
def served(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    log = tmp_path_factory.mktemp("server") / "server.log"
    with served_process(cluster, log) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_browser() as launched:
        yield launched


@pytest.fixture
def offline(browser: Any) -> Iterator[OfflinePage]:
    with offline_page(browser, viewport={"width": 1200, "height": 900}) as page:
        yield page


def api_answer(served: Process, token: str, kind: str, name: str) -> dict[str, Any]:
    variables = {"namespace": NAMESPACE, "kind": kind, "name": name}
    response = httpx.post(
        served.url + "/graphql",
        json={"query": QUERY, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def open_map(page: Any, served: Process, kind: str, name: str, token: str | None) -> None:
    """Open the page, type the token into its form (when given), wait for the first push."""
    page.goto(f"{served.url}/why/{NAMESPACE}/{kind}/{name}")
    if token is not None:
        page.fill(f"{MAP} input[name=token]", token)
        page.click(f"{MAP} button[type=submit]")
    wait_for_update(page, 1)


def wait_for_update(page: Any, count: int) -> None:
    page.wait_for_function(
        "([tag, count]) => Number(document.querySelector(tag).dataset.updates || 0) >= count",
        arg=[MAP, count],
        timeout=READY_SECONDS * 1000,
    )


def path_items(page: Any) -> list[dict[str, str]]:
    """The map's nodes, from its text rendering of the path (the graph is a canvas)."""
    items: list[dict[str, str]] = page.evaluate(
        """(tag) => [...document.querySelectorAll(tag + ' .kam-path li')].map((li) => ({
             kind: li.dataset.kind, name: li.dataset.name, state: li.dataset.state,
             blocking: li.dataset.blocking }))""",
        MAP,
    )
    return items


def stored(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(
        """() => ({local: JSON.stringify(Object.entries(localStorage)),
                   session: JSON.stringify(Object.entries(sessionStorage)),
                   cookie: document.cookie, url: location.href})"""
    )
    found["cookies"] = json.dumps(page.context.cookies())
    return found


def forbidden_paths(answer: dict[str, Any]) -> set[str]:
    return {
        "/".join(map(str, error["path"]))
        for error in answer.get("errors", [])
        if error.get("extensions", {}).get("code") == "FORBIDDEN"
    }


@pytest.mark.parametrize("user", ["alice", "viewer"])
@pytest.mark.parametrize("case", list(SEED_CASES))
def test_seed_case_renders_its_blocking_object_and_hides_what_the_api_hides(
    served: Process, offline: OfflinePage, cluster: Cluster, case: str, user: str
) -> None:
    token = cluster.token(user)
    answer = api_answer(served, token, "Job", case)
    diagnosis = answer["data"]["diagnosis"]
    blocking = diagnosis["blockingRef"]
    assert blocking["kind"] == SEED_CASES[case], diagnosis  # the scenario still means this
    page = offline.page
    open_map(page, served, "job", case, token)
    assert page.get_attribute(MAP, "data-state") == "live"
    items = path_items(page)
    held = [item for item in items if item["blocking"] == "true"]
    assert [(item["kind"], item["name"]) for item in held] == [
        (blocking["kind"], blocking["name"])
    ], items
    # Nothing named that the API did not name to this user ...
    told = json.dumps(answer["data"])
    for item in items:
        if item["state"] == "ok":
            assert f'"{item["name"]}"' in told, (item, told)
    # ... and hidden exactly where the API said FORBIDDEN.
    hidden_kinds = {item["kind"] for item in items if item["state"] == "hidden"}
    forbidden = forbidden_paths(answer)
    assert ("ClusterQueue" in hidden_kinds) == any(
        path.startswith("diagnosis/clusterQueue") for path in forbidden
    ), (items, forbidden)
    assert ("Cohort" in hidden_kinds) == ("diagnosis/clusterQueue/cohort" in forbidden)
    quota_hidden = page.locator(f"{MAP} [data-hidden=quota]").count() == 1
    assert quota_hidden == (diagnosis["quota"]["visibility"] == "FORBIDDEN")
    bars = page.evaluate(
        """(tag) => [...document.querySelectorAll(tag + ' .kam-bar')].map((bar) =>
             [bar.dataset.flavor, bar.dataset.resource, bar.dataset.nominal])""",
        MAP,
    )
    lines = diagnosis["quota"]["lines"]
    assert bars == [
        [line["flavor"], line["resource"], line["nominalQuota"]["quantity"]] for line in lines
    ]
    steps = page.locator(f"{MAP} .kam-steps li").all_inner_texts()
    assert steps == diagnosis["nextSteps"]
    assert token not in stored(page)["local"] + stored(page)["cookies"]
    assert offline.outside == []
    assert offline.refused_by_policy() == []
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{case}-{user}.png"), full_page=True)


def test_bob_sees_the_refusal_and_nothing_of_the_object(
    served: Process, offline: OfflinePage, cluster: Cluster
) -> None:
    case = "admitted-but-unschedulable"
    seen_by_viewer = api_answer(served, cluster.token("viewer"), "Job", case)["data"]["diagnosis"]
    page = offline.page
    open_map(page, served, "job", case, cluster.token("bob"))
    assert page.get_attribute(MAP, "data-state") == "refused"
    shown = page.inner_text("body")
    assert "FORBIDDEN" in shown, shown
    assert path_items(page) == []
    assert page.locator(f"{MAP} .kam-graph canvas").count() == 0
    for secret in (
        seen_by_viewer["workload"]["name"],
        seen_by_viewer["localQueue"]["name"],
        seen_by_viewer["clusterQueue"]["name"],
        seen_by_viewer["blockingRef"]["name"],
        seen_by_viewer["stage"],
    ):
        assert secret not in shown, (secret, shown)


def test_the_token_is_typed_once_per_tab_and_kept_in_session_storage_only(
    served: Process, offline: OfflinePage, cluster: Cluster
) -> None:
    token = cluster.token("alice")
    page = offline.page
    open_map(page, served, "job", "no-spot-toleration", token)
    found = stored(page)
    assert token in found["session"]
    assert token not in found["local"] + found["cookie"] + found["cookies"] + found["url"]
    # Another page of the same tab: no form, the map comes up with the kept token.
    open_map(page, served, "job", "waits-for-approval", None)
    assert page.locator(f"{MAP} form.kam-token").is_hidden()
    # A new tab asks again (sessionStorage is per tab).
    other = page.context.new_page()
    other.goto(f"{served.url}/why/{NAMESPACE}/job/waits-for-approval")
    other.wait_for_selector(f"{MAP} form.kam-token", state="visible")
    assert token not in served.log.read_text()


def test_behind_an_auth_proxy_the_page_sends_no_token_of_its_own(
    served: Process, browser: Any, cluster: Cluster
) -> None:
    """An auth proxy puts the Authorization header on every request of the page (here the
    browser context does, as the proxy would): the page asks for no token, its WebSocket's
    connection_init carries none, and the server echoes none."""
    token = cluster.token("viewer")
    headers = {"Authorization": f"Bearer {token}"}
    html = httpx.get(f"{served.url}/why/{NAMESPACE}/job/over-borrowing-limit", headers=headers)
    assert 'auth="proxy"' in html.text
    assert token not in html.text
    assert token not in json.dumps(dict(html.headers))
    with offline_page(browser, extra_http_headers=headers) as offline:
        sent: list[str] = []
        offline.page.on(
            "websocket", lambda socket: socket.on("framesent", lambda frame: sent.append(frame))
        )
        open_map(offline.page, served, "job", "over-borrowing-limit", None)
        assert offline.page.get_attribute(MAP, "data-state") == "live"
        assert offline.page.locator(f"{MAP} form.kam-token").is_hidden()
        init = [json.loads(frame) for frame in sent if "connection_init" in frame]
        assert init == [{"type": "connection_init", "payload": {}}], sent
        assert token not in stored(offline.page)["session"]


LIVE = {"kueue-graphql-test": "admission-map-live"}


def _queue_objects(cpu: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": GROUP, "kind": "ClusterQueue",
         "metadata": {"name": "cq-map-live", "labels": LIVE},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu"],
             "flavors": [{"name": "standard", "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
         }]}},
        {"apiVersion": GROUP, "kind": "LocalQueue",
         "metadata": {"name": "lq-map-live", "namespace": NAMESPACE, "labels": LIVE},
         "spec": {"clusterQueue": "cq-map-live"}},
    ]  # fmt: skip


def _admitted(cluster: Cluster, name: str) -> bool:
    conditions = cluster.get_json("workload", name, "-n", NAMESPACE)["status"].get("conditions")
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions or [])


@pytest.fixture
def live_queue(cluster: Cluster) -> Iterator[None]:
    """cq-map-live (1 cpu) with `holder` (1 cpu) admitted, and `map-live` (2 cpu) that never
    fits: raising the quota to 2 makes it wait instead (MUST_WAIT), a new verdict to push."""
    try:
        apply(cluster, _queue_objects("1"))
        apply(cluster, [workload("holder", NAMESPACE, "1", LIVE, queue="lq-map-live")])
        wait_until("holder admitted", lambda: _admitted(cluster, "holder"), SETTLE_SECONDS)
        apply(cluster, [workload("map-live", NAMESPACE, "2", LIVE, queue="lq-map-live")])
        yield
    finally:
        selector = ",".join(f"{key}={value}" for key, value in LIVE.items())
        for kind, namespaced in (
            ("workloads", True),
            ("localqueues", True),
            ("clusterqueues", False),
        ):
            scope = ["-n", NAMESPACE] if namespaced else []
            cluster.kubectl("delete", kind, *scope, "-l", selector, "--wait=true", "--timeout=120s")


def test_a_quota_change_is_seen_on_the_page_without_reload(
    served: Process, offline: OfflinePage, cluster: Cluster, live_queue: None
) -> None:
    page = offline.page
    open_map(page, served, "workload", "map-live", cluster.token("viewer"))
    bar = f"{MAP} .kam-bar[data-flavor=standard][data-resource=cpu]"
    page.wait_for_selector(f"{bar}[data-nominal='1'][data-verdict=NEVER_FITS]")
    page.evaluate("() => { window.keptAcrossPushes = true; }")
    updates = int(page.get_attribute(MAP, "data-updates") or 0)
    cluster.kubectl(
        "patch", "clusterqueue", "cq-map-live", "--type", "json", "-p",
        json.dumps([{"op": "replace",
                     "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota",
                     "value": "2"}]),
    )  # fmt: skip
    page.wait_for_selector(
        f"{bar}[data-nominal='2'][data-verdict=MUST_WAIT]", timeout=SETTLE_SECONDS * 1000
    )
    assert int(page.get_attribute(MAP, "data-updates") or 0) > updates
    assert page.evaluate("() => window.keptAcrossPushes === true"), "the page was reloaded"
    assert page.evaluate("() => performance.getEntriesByType('navigation').length") == 1
