"""The admission map's page and files as the server hands them out (no cluster: the page reads
nothing from it): a strict CSP with no inline script, the token never echoed, bad paths refused
with a 400 that says what to write, only the allow-listed files served, a missing layout
library refusing startup, the pinned versions those of the lock file."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import NoDeprecatedCustomRule, parse, specified_rules, validate

from kueue_graphql.graph.schema import build_schema
from kueue_graphql.http import ServerSettings, build_app, map_assets
from kueue_graphql.http.map_assets import (
    OWN_DIRECTORY,
    OWN_FILES,
    VENDOR_FILES,
    VENDOR_LICENSES,
    MapAssetsError,
)
from kueue_graphql.http.services import build_services
from tests.unit.apiserver_stub import Stub, apiserver_stub

REPO = Path(__file__).resolve().parents[2]
TOKEN = "secret-token-never-echoed"


def refuse_everything(method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    return 500, {"message": "the stub must not be called"}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with apiserver_stub(refuse_everything) as stub:
        yield client_for(stub, ServerSettings())


def client_for(stub: Stub, settings: ServerSettings) -> httpx.AsyncClient:
    app = build_app(settings, kube=stub.kube)
    app.state.services = build_services(stub.kube, settings)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_the_page_has_a_strict_policy_and_no_inline_script(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/why/team-a/job/too-big-3x1cpu")
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy
    assert "style-src 'self';" in policy
    assert "unsafe" not in policy
    assert response.headers["cache-control"] == "private, no-store"
    assert re.findall(r"<script(?![^>]*\ssrc=)[^>]*>", response.text) == []
    assert re.findall(r"\sstyle=|\son[a-z]+=", response.text) == []
    assert 'auth="token"' in response.text
    # Every file it loads is served, relative to the page (works under a path prefix).
    for url in re.findall(r'(?:src|href)="\.\./\.\./\.\./([^"]+)"', response.text):
        assert (await client.get("/" + url)).status_code == 200, url


async def test_an_auth_proxys_header_is_noted_never_echoed(client: httpx.AsyncClient) -> None:
    response = await client.get(
        "/why/team-a/job/too-big-3x1cpu", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 200
    assert 'auth="proxy"' in response.text
    assert TOKEN not in response.text
    assert TOKEN not in json.dumps(dict(response.headers))
    assert response.headers["vary"] == "Authorization"


@pytest.mark.parametrize(
    "path",
    [
        "/why/Team-A/job/x",
        "/why/team-a/job-set/x",
        "/why/team-a/job/" + "a" * 254,
        "/why/team-a/job/%3Cscript%3E",
    ],
)
async def test_a_bad_path_gets_a_400_that_says_what_to_write(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 400
    assert "/why/<namespace>/<kind>/<name>" in response.text
    assert "<script" not in response.text


@pytest.mark.parametrize(
    "name",
    [
        *VENDOR_LICENSES.values(),
        "map_assets.py",
        "..%2Fmap_assets.py",
        "admission_map_vendor.sha256",
        "package.json",
    ],
)
async def test_only_the_listed_files_are_served(client: httpx.AsyncClient, name: str) -> None:
    assert (await client.get(f"/admission-map/{name}")).status_code == 404


async def test_the_listed_files_are_served_with_their_types(client: httpx.AsyncClient) -> None:
    types = {".js": "text/javascript", ".css": "text/css", ".graphql": "application/graphql"}
    for name in (*OWN_FILES, *VENDOR_FILES.values()):
        response = await client.get(f"/admission-map/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-type"].startswith(types[Path(name).suffix]), name
        assert response.headers["x-content-type-options"] == "nosniff"


def test_a_missing_layout_library_refuses_startup_and_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(map_assets, "VENDOR_DIRECTORY", tmp_path)
    with pytest.raises(MapAssetsError) as refused:
        build_app(ServerSettings())
    message = str(refused.value)
    assert "cytoscape-3.35.0.min.js missing" in message
    assert "make map-assets" in message
    assert "--no-admission-map" in message
    build_app(ServerSettings(admission_map=False))  # no map, no files needed


def test_the_served_versions_are_the_lock_files() -> None:
    lock = json.loads((REPO / "web" / "admission-map" / "package-lock.json").read_text())
    for source, local in {**VENDOR_FILES, **VENDOR_LICENSES}.items():
        package = source.split("/", 1)[0]
        version = lock["packages"][f"node_modules/{package}"]["version"]
        assert local.startswith(f"{package}-{version}."), (local, version)


def test_the_maps_document_is_valid_and_uses_nothing_deprecated() -> None:
    """The one document the element subscribes with (a schema rename shows here first)."""
    document = parse((OWN_DIRECTORY / "admission-map.graphql").read_text())
    assert (
        validate(build_schema()._schema, document, [*specified_rules, NoDeprecatedCustomRule]) == []
    )
