"""GraphiQL's JavaScript and CSS from the service (the packaged copies, or `--graphiql-assets DIR`),
never from unpkg.com; the page's Content-Security-Policy allows its own origin only; the wheel
carries the files."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import strawberry

from kueue_graphql.cli import _parser, main
from kueue_graphql.cli.serve import settings_from
from kueue_graphql.http import ServerSettings, build_app, graphiql
from kueue_graphql.http.graphiql import (
    GRAPHIQL_ASSETS,
    GRAPHIQL_LICENSES,
    PACKAGED_ASSETS,
    GraphiQLAssetsError,
)
from kueue_graphql.http.map_assets import OWN_FILES, VENDOR_SUMS
from kueue_graphql.http.services import build_services
from kueue_graphql.http.vendored import expected_sums
from tests.unit.apiserver_stub import Stub, apiserver_stub

REPO = Path(__file__).resolve().parents[2]
HTML = {"Accept": "text/html"}
VENDOR_SUMS_NAMES = tuple(expected_sums(VENDOR_SUMS))
LOCAL_URL = re.compile(r'(?:src|href)="(graphql/assets/[^"]+)"')


def refuse_everything(method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    return 500, {"message": "the stub must not be called"}


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    async with apiserver_stub(refuse_everything) as running:
        yield running


@pytest.fixture
def assets(tmp_path: Path) -> Path:
    for name in GRAPHIQL_ASSETS.values():
        (tmp_path / name).write_text(f"/* {name} */\n")
    (tmp_path / "secret.txt").write_text("not an asset")
    return tmp_path


def client_for(stub: Stub, settings: ServerSettings) -> httpx.AsyncClient:
    app = build_app(settings, kube=stub.kube)
    app.state.services = build_services(stub.kube, settings)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def test_the_table_is_what_strawberrys_page_loads() -> None:
    page = Path(strawberry.__file__).parent / "static" / "graphiql.html"
    loaded = set(re.findall(r'"https://unpkg\.com/([^"]+)"', page.read_text()))
    assert loaded == set(GRAPHIQL_ASSETS)


async def test_page_loads_only_local_assets_served_with_content_types(
    stub: Stub, assets: Path
) -> None:
    async with client_for(stub, ServerSettings(graphiql_assets=assets)) as client:
        page = await client.get("/graphql", headers=HTML)
        assert page.status_code == 200
        assert "unpkg.com" not in page.text
        urls = LOCAL_URL.findall(page.text)
        assert sorted(urls) == sorted(f"graphql/assets/{n}" for n in GRAPHIQL_ASSETS.values())
        for url in urls:
            # The page is /graphql, so the relative URL resolves to /graphql/assets/...
            response = await client.get("/" + url)
            assert response.status_code == 200, url
            name = url.rsplit("/", 1)[1]
            assert response.text == f"/* {name} */\n"
            expected = "text/css" if name.endswith(".css") else "text/javascript"
            assert response.headers["content-type"].startswith(expected), url
        # Only the listed files: not anything else that lies in DIR, nor outside it.
        for other in ("secret.txt", "../secret.txt", "%2e%2e/%2e%2e/etc/passwd"):
            assert (await client.get(f"/graphql/assets/{other}")).status_code == 404
    assert stub.requests == []


async def test_by_default_the_packaged_files_are_served_and_nothing_external(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        page = await client.get("/graphql", headers=HTML)
        assert page.status_code == 200
        # Every URL in the page is relative (this origin) or data:; none names another origin.
        for url in re.findall(r'(?:src|href)="([^"]*)"', page.text):
            assert url.startswith(("graphql/assets/", "data:")), url
        assert "unpkg.com" not in page.text
        for name in GRAPHIQL_ASSETS.values():
            response = await client.get(f"/graphql/assets/{name}")
            assert response.status_code == 200, name
            assert response.content == (PACKAGED_ASSETS / name).read_bytes()
            expected = "text/css" if name.endswith(".css") else "text/javascript"
            assert response.headers["content-type"].startswith(expected), name
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "immutable" in response.headers["cache-control"]
        # The licences are packaged, not served.
        assert (await client.get("/graphql/assets/graphiql-3.8.3.LICENSE")).status_code == 404
    assert stub.requests == []


async def test_the_page_policy_allows_its_own_origin_only(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        page = await client.get("/graphql", headers=HTML)
    policy = dict(
        (directive.split()[0], directive.split()[1:])
        for directive in page.headers["content-security-policy"].split("; ")
    )
    assert policy["default-src"] == ["'none'"]
    for sources in policy.values():
        for source in sources:
            assert source in ("'self'", "'none'", "data:") or source.startswith("'sha256-"), source
    # The page's one inline script and one inline style are allowed by their hashes, nothing else.
    for element, directive in (("script", "script-src"), ("style", "style-src")):
        (body,) = re.findall(rf"<{element}>(.*?)</{element}>", page.text, flags=re.DOTALL)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert policy[directive] == ["'self'", f"'sha256-{digest}'"]
    assert policy["connect-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]


async def test_the_schema_fetcher_follows_the_pasted_headers(stub: Stub) -> None:
    """GraphiQL introspects again when its fetcher changes; the page makes a new one when the
    headers settle (tests/service/test_browser.py watches it work in Chromium)."""
    async with client_for(stub, ServerSettings()) as client:
        page = (await client.get("/graphql", headers=HTML)).text
    assert "fetcher: schemaFetcher," in page
    assert "[settledHeaders]" in page
    assert "shouldPersistHeaders: false" in page


def test_packaged_files_missing_refuse_startup_and_say_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(graphiql, "PACKAGED_ASSETS", tmp_path)
    with pytest.raises(GraphiQLAssetsError) as refused:
        build_app(ServerSettings())
    message = str(refused.value)
    assert "not in this installation" in message
    assert "make graphiql-assets" in message
    assert "--no-graphiql" in message
    build_app(ServerSettings(graphiql=False))  # no page, no files needed


def test_the_wheel_carries_the_files(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    command = [uv] if uv else [sys.executable, "-m", "uv"]
    subprocess.run(
        [*command, "build", "--wheel", "--out-dir", str(tmp_path), "--quiet"],
        cwd=REPO,
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = {
            name.rsplit("/", 1)[1]: archive.read(name)
            for name in archive.namelist()
            if name.startswith("kueue_graphql/http/graphiql_assets/")
        }
    # The files the page loads and their licences (MIT: the notice goes with the copies).
    assert sorted(packaged) == sorted([*GRAPHIQL_ASSETS.values(), *GRAPHIQL_LICENSES.values()])
    assert b"MIT" in packaged["graphiql-3.8.3.LICENSE"]
    for name, content in packaged.items():
        assert content == (PACKAGED_ASSETS / name).read_bytes(), name
    # The same hook packages the admission map's layout library; its own files are package data.
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    http = "kueue_graphql/http/"
    assert {f"{http}admission_map_vendor/{name}" for name in VENDOR_SUMS_NAMES} <= names
    assert {f"{http}admission_map/{name}" for name in OWN_FILES} <= names


def test_a_missing_file_refuses_startup(assets: Path) -> None:
    (assets / "graphiql-3.8.3.min.js").unlink()
    with pytest.raises(GraphiQLAssetsError) as refused:
        build_app(ServerSettings(graphiql_assets=assets))
    message = str(refused.value)
    assert "missing graphiql-3.8.3.min.js" in message
    assert "scripts/fetch_graphiql_assets.py" in message


def test_serve_refuses_to_start_and_says_why(
    assets: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (assets / "react-18.2.0.production.min.js").unlink()
    monkeypatch.setenv("KUEUE_GRAPHQL_GRAPHIQL_ASSETS", str(assets))
    assert settings_from(_parser().parse_args(["serve"])).graphiql_assets == assets
    assert main(["serve", "--port", "1"]) == 2  # before binding anything
    err = capsys.readouterr().err
    assert "missing react-18.2.0.production.min.js" in err
    assert "scripts/fetch_graphiql_assets.py" in err
