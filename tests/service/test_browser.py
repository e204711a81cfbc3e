"""The server as a browser meets it, in headless Chromium (Debian's, driven by Playwright):
CORS from a page on another loopback origin; GraphiQL with every non-loopback host blocked (its
files come from the service), fetching the schema with the pasted token and never leaving it in
localStorage. Also the access log (--log-format json), X-Request-Id and /metrics, since they
need the same server process."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.driver import Cluster
from tests.service.browser_support import (
    OfflinePage,
    Process,
    launched_browser,
    offline_page,
    served_process,
)
from tests.service.conftest import free_port
from tests.waiting import READY_SECONDS, wait_until

pytestmark = pytest.mark.cluster

PAGE_PORT = free_port()
ALLOWED_ORIGIN = f"http://127.0.0.1:{PAGE_PORT}"
# The same page server, reached by another name: another origin, not on the allow list.
REFUSED_ORIGIN = f"http://localhost:{PAGE_PORT}"


@pytest.fixture(scope="module")
def served(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    log = tmp_path_factory.mktemp("server") / "server.log"
    with served_process(cluster, log, "--cors-allow-origin", ALLOWED_ORIGIN) as server:
        yield server


PAGE = """<!doctype html><html><body><script>
async function ask(url, token) {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token},
      body: JSON.stringify({query: "{ viewer { username } }"}),
    });
    return {status: response.status, requestId: response.headers.get("X-Request-Id"),
            body: await response.json()};
  } catch (error) {
    return {blocked: String(error)};
  }
}
</script></body></html>"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def page_server() -> Iterator[None]:
    httpd = ThreadingHTTPServer(("127.0.0.1", PAGE_PORT), _Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_browser() as launched:
        yield launched


def test_a_page_on_an_allowed_origin_calls_the_api_with_its_token(
    served: Process, page_server: None, browser: Any, cluster: Cluster
) -> None:
    page = browser.new_page()
    page.goto(ALLOWED_ORIGIN + "/")
    answer = page.evaluate(
        "([url, token]) => ask(url, token)", [served.url + "/graphql", cluster.token("alice")]
    )
    page.close()
    assert answer.get("status") == 200, answer
    assert answer["body"]["data"]["viewer"]["username"] == "alice"
    assert answer["requestId"], "X-Request-Id is exposed to the page"


def test_a_page_on_another_origin_is_refused_by_the_browser(
    served: Process, page_server: None, browser: Any, cluster: Cluster
) -> None:
    page = browser.new_page()
    page.goto(REFUSED_ORIGIN + "/")
    answer = page.evaluate(
        "([url, token]) => ask(url, token)", [served.url + "/graphql", cluster.token("alice")]
    )
    page.close()
    assert "blocked" in answer, answer


def test_preflight_allows_authorization_only_for_listed_origins(served: Process) -> None:
    ask = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    allowed = httpx.options(served.url + "/graphql", headers={"Origin": ALLOWED_ORIGIN, **ask})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in allowed.headers
    refused = httpx.options(served.url + "/graphql", headers={"Origin": REFUSED_ORIGIN, **ask})
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers


# The page is up: an introspection and a 300 ms pause for the pasted headers to settle.
SCHEMA_SECONDS = 60


@pytest.fixture
def offline(browser: Any) -> Iterator[OfflinePage]:
    with offline_page(browser) as page:
        yield page


def paste_headers(page: Any, headers: dict[str, str]) -> None:
    """Into GraphiQL's Headers editor, as a user pastes them."""
    page.get_by_role("button", name="Headers").click()
    page.evaluate(
        """(text) => {
          const editors = [...document.querySelectorAll('.graphiql-editor-tool .CodeMirror')];
          const visible = editors.filter((e) => e.offsetParent !== null);
          visible[visible.length - 1].CodeMirror.setValue(text);
        }""",
        json.dumps(headers),
    )


def docs_text(page: Any) -> str:
    return str(
        page.evaluate("() => document.querySelector('.graphiql-doc-explorer')?.innerText ?? ''")
    )


def test_graphiql_fetches_the_schema_with_the_pasted_token(
    served: Process, offline: OfflinePage, cluster: Cluster
) -> None:
    """The Docs pane shows the schema once a token is pasted, without Re-fetch: the page gives
    GraphiQL a new fetcher when the headers change, and GraphiQL introspects again with them.
    Before, the only introspection went out at load, without the header (401, "Error fetching
    schema" until Re-fetch). All with every host but loopback blocked."""
    token = cluster.token("alice")
    page = offline.page
    introspections: list[dict[str, str]] = []
    page.on(
        "request",
        lambda request: "IntrospectionQuery" in (request.post_data or "")
        and introspections.append(request.headers),
    )
    page.goto(served.url + "/graphql")
    page.wait_for_selector(".graphiql-query-editor .CodeMirror", timeout=READY_SECONDS * 1000)
    page.get_by_role("button", name="Show Documentation Explorer").click()
    # No token yet: the first introspection is refused (401), as it should be.
    page.wait_for_function(
        "() => document.querySelector('.graphiql-doc-explorer')?.innerText"
        ".includes('Error fetching schema')",
        timeout=SCHEMA_SECONDS * 1000,
    )
    assert introspections, "GraphiQL introspects at load"
    assert all("authorization" not in headers for headers in introspections)
    paste_headers(page, {"Authorization": f"Bearer {token}"})
    # The schema, in the Docs pane, with no click on Re-fetch.
    page.wait_for_function(
        "() => document.querySelector('.graphiql-doc-explorer')?.innerText.includes('Root Types')",
        timeout=SCHEMA_SECONDS * 1000,
    )
    shown = docs_text(page)
    assert "query: Query" in shown, shown
    assert "Error fetching schema" not in shown
    assert introspections[-1].get("authorization") == f"Bearer {token}"
    stored = page.evaluate("() => JSON.stringify(Object.entries(window.localStorage))")
    assert token not in stored
    assert offline.outside == []
    assert offline.refused_by_policy() == []


def test_graphiql_loads_no_file_from_another_host(served: Process, offline: OfflinePage) -> None:
    """GraphiQL's scripts and styles from the service itself: with unpkg.com (every host but
    loopback) blocked the page still comes up, and its policy refuses nothing it needs."""
    loaded: list[str] = []
    offline.page.on("response", lambda response: loaded.append(response.url))
    offline.page.goto(served.url + "/graphql")
    offline.page.wait_for_selector(
        ".graphiql-query-editor .CodeMirror", timeout=READY_SECONDS * 1000
    )
    assert offline.outside == []
    assert offline.refused_by_policy() == []
    assets = [url for url in loaded if "/graphql/assets/" in url]
    assert len(assets) == 7, loaded
    assert all(url.startswith(served.url + "/graphql/assets/") for url in assets)


def test_graphiql_never_stores_the_token(
    served: Process, offline: OfflinePage, cluster: Cluster
) -> None:
    token = cluster.token("alice")
    page = offline.page
    page.goto(served.url + "/graphql")
    page.wait_for_selector(".graphiql-query-editor .CodeMirror", timeout=READY_SECONDS * 1000)
    page.evaluate(
        "() => document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
        ".setValue('query Me { viewer { username } }')"
    )
    paste_headers(page, {"Authorization": f"Bearer {token}"})
    page.click(".graphiql-execute-button")
    page.wait_for_function(
        "() => document.querySelector('.graphiql-response')?.innerText.includes('alice')",
        timeout=READY_SECONDS * 1000,
    )
    page.wait_for_timeout(500)  # GraphiQL writes its state after the response
    stored = page.evaluate("() => Object.fromEntries(Object.entries(window.localStorage))")
    # The query was stored (tabs and history are kept) ...
    assert any("viewer { username }" in value for value in stored.values()), stored
    # ... the token nowhere.
    assert [key for key, value in stored.items() if token in value] == []
    assert not [key for key in stored if "headers" in key.lower()]


def test_graphiql_runs_a_subscription_with_the_pages_token(
    served: Process, offline: OfflinePage, cluster: Cluster
) -> None:
    """The token typed into GraphiQL's Headers editor reaches connection_init (its WebSocket
    fetcher sends the headers as the connection params): the subscription runs as alice."""
    token = cluster.token("alice")
    name = cluster.get_json("workloads", "-n", "team-a", user="alice")["items"][0]["metadata"][
        "name"
    ]
    subscription = (
        f'subscription Live {{ workload(namespace: "team-a", name: "{name}") {{ type name }} }}'
    )
    sockets: list[Any] = []
    sent: list[str] = []

    def opened(socket: Any) -> None:
        sockets.append(socket)
        socket.on("framesent", lambda payload: sent.append(str(payload)))

    page = offline.page
    page.on("websocket", opened)
    page.goto(served.url + "/graphql")
    page.wait_for_selector(".graphiql-query-editor .CodeMirror", timeout=READY_SECONDS * 1000)
    page.evaluate(
        "(text) => document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror"
        ".setValue(text)",
        subscription,
    )
    paste_headers(page, {"Authorization": f"Bearer {token}"})
    page.click(".graphiql-execute-button")
    page.wait_for_function(
        "(name) => document.querySelector('.graphiql-response')?.innerText.includes(name)",
        arg=name,
        timeout=READY_SECONDS * 1000,
    )
    response = page.evaluate("() => document.querySelector('.graphiql-response').innerText")
    assert offline.refused_by_policy() == []  # connect-src 'self' covers the WebSocket
    assert "INITIAL" in response, response
    assert "errors" not in response, response
    assert sockets, "GraphiQL did not open a WebSocket"
    init = [json.loads(frame) for frame in sent if "connection_init" in frame]
    assert init, sent
    assert init[0]["payload"]["Authorization"] == f"Bearer {token}"


def logged(served: Process, request_id: str) -> list[dict[str, Any]]:
    """The access-log lines of `request_id`, once there is one (the line is written after the
    response is sent)."""
    return wait_until(
        f"an access-log line for {request_id}",
        lambda: [e for e in served.log_lines() if e.get("requestId") == request_id],
    )


def test_one_json_access_line_per_request_with_its_request_id(
    served: Process, cluster: Cluster
) -> None:
    token = cluster.token("grace")
    response = httpx.post(
        served.url + "/graphql",
        json={"query": "query WhoAmI { viewer { username } }"},
        headers={"Authorization": f"Bearer {token}", "X-Request-Id": "trace-abc.123"},
        timeout=30,
    )
    assert response.status_code == 200
    assert response.headers["x-request-id"] == "trace-abc.123"
    (line,) = logged(served, "trace-abc.123")
    assert line["operationName"] == "WhoAmI"
    assert line["operationType"] == "query"
    assert line["outcome"] == "OK"
    assert line["username"] == "grace"
    assert line["apiCalls"] >= 1
    assert line["durationMs"] > 0
    assert token not in served.log.read_text()


def test_a_request_id_is_generated_when_missing_or_unusable(
    served: Process, cluster: Cluster
) -> None:
    token = cluster.token("alice")
    plain = httpx.post(
        served.url + "/graphql",
        json={"query": "{ viewer { username } }"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    forged = httpx.post(
        served.url + "/graphql",
        json={"query": "{ viewer { username } }"},
        headers={"Authorization": f"Bearer {token}", "X-Request-Id": 'x" injected=1 ' + "y" * 200},
        timeout=30,
    )
    generated = {plain.headers["x-request-id"], forged.headers["x-request-id"]}
    assert all(len(rid) == 32 and rid.isalnum() for rid in generated)
    assert len(generated) == 2
    refused = httpx.post(
        served.url + "/graphql", json={"query": "{ viewer { username } }"}, timeout=30
    )
    assert refused.status_code == 401
    (line,) = logged(served, refused.headers["x-request-id"])
    assert line["outcome"] == "UNAUTHENTICATED"
    assert line["username"] is None


def _samples(served: Process) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(served.metrics_url + "/metrics", timeout=30).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_parse_and_move_when_queries_run(served: Process, cluster: Cluster) -> None:
    # `serve --metrics-port`: /metrics only there, a 404 on the API's port.
    assert httpx.get(served.url + "/metrics").status_code == 404
    before = _samples(served)
    token = cluster.token("alice")
    for _ in range(3):
        httpx.post(
            served.url + "/graphql",
            json={"query": '{ workloads(first: 5, namespace: "team-a") { nodes { name } } }'},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
    httpx.post(
        served.url + "/graphql",
        json={"query": '{ workloads(first: 5, namespace: "team-b") { nodes { name } } }'},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    after = _samples(served)

    def moved(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert moved("kueue_graphql_requests_total", operation_type="query", outcome="OK") == 3
    assert moved("kueue_graphql_requests_total", operation_type="query", outcome="FORBIDDEN") == 1
    assert (
        moved("kueue_graphql_api_calls_total", verb="list", resource="workloads", status="200") >= 1
    )
    assert (
        moved(
            "kueue_graphql_api_calls_total",
            verb="create",
            resource="subjectaccessreviews",
            status="201",
        )
        >= 1
    )
    # Three lists of team-a's Workloads were read: their bodies are counted, in bytes.
    assert moved("kueue_graphql_api_response_bytes_total", verb="list", resource="workloads") > 300
    assert moved("kueue_graphql_token_reviews_total", result="cache_hit") >= 3
    assert moved("kueue_graphql_access_decisions_total", result="cache_hit") >= 2
    assert moved("kueue_graphql_request_duration_seconds_count", operation_type="query") == 4
    # No label value names a user, a namespace, an object or a token.
    values = {value for (_, labels) in after for _, value in labels}
    for secret in ("alice", "team-a", "team-b", token):
        assert secret not in values
