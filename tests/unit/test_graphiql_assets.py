"""`--graphiql-assets DIR`: GraphiQL's JavaScript and CSS from the service, not unpkg.com."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import strawberry

from kueue_graphql.cli import _parser, main
from kueue_graphql.cli.serve import settings_from
from kueue_graphql.http import ServerSettings, build_app
from kueue_graphql.http.graphiql import GRAPHIQL_ASSETS, GraphiQLAssetsError
from kueue_graphql.http.services import build_services
from tests.unit.apiserver_stub import Stub, apiserver_stub

HTML = {"Accept": "text/html"}
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
        assert "shouldPersistHeaders: false" in page.text
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


async def test_without_the_option_the_page_loads_from_unpkg(stub: Stub) -> None:
    async with client_for(stub, ServerSettings()) as client:
        page = await client.get("/graphql", headers=HTML)
        assert (await client.get("/graphql/assets/graphiql-3.8.3.min.js")).status_code == 404
    for remote in GRAPHIQL_ASSETS:
        assert f"https://unpkg.com/{remote}" in page.text
    assert "graphql/assets/" not in page.text


def test_a_missing_file_refuses_startup(assets: Path) -> None:
    (assets / "graphiql-3.8.3.min.js").unlink()
    with pytest.raises(GraphiQLAssetsError) as refused:
        build_app(ServerSettings(graphiql_assets=assets))
    message = str(refused.value)
    assert "missing graphiql-3.8.3.min.js" in message
    assert "make graphiql-assets" in message


def test_serve_refuses_to_start_and_says_why(
    assets: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (assets / "react-18.2.0.production.min.js").unlink()
    monkeypatch.setenv("KUEUE_GRAPHQL_GRAPHIQL_ASSETS", str(assets))
    assert settings_from(_parser().parse_args(["serve"])).graphiql_assets == assets
    assert main(["serve", "--port", "1"]) == 2  # before binding anything
    err = capsys.readouterr().err
    assert "missing react-18.2.0.production.min.js" in err
    assert "make graphiql-assets" in err
