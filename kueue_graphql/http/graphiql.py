"""GraphiQL without internet: its JavaScript and CSS served by the service itself.

Strawberry's GraphiQL page (strawberry/static/graphiql.html) loads seven pinned files from
unpkg.com; a browser that cannot reach unpkg.com (an air-gapped cluster) stays at "Loading...".
With `serve --graphiql-assets DIR` the files are read from DIR (`make graphiql-assets` fetches
them from the npm registry), served under /graphql/assets/, and the page points at them. The
page keeps strawberry's `integrity` (SRI) hashes, so a browser refuses a file that differs from
the pinned one.
"""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

UNPKG = "https://unpkg.com/"
ASSETS_MOUNT = "/graphql/assets"
# Relative to the page (/graphql), so it also works behind a proxy that adds a path prefix.
ASSETS_URL = "graphql/assets/"
FETCH_COMMAND = "make graphiql-assets"

# What strawberry's page loads from unpkg.com (package@version/path) -> the file in DIR.
# Flat names, valid as ConfigMap keys; the version in the name keeps a stale file from passing.
GRAPHIQL_ASSETS: dict[str, str] = {
    "react@18.2.0/umd/react.production.min.js": "react-18.2.0.production.min.js",
    "react-dom@18.2.0/umd/react-dom.production.min.js": "react-dom-18.2.0.production.min.js",
    "js-cookie@3.0.5/dist/js.cookie.min.js": "js-cookie-3.0.5.min.js",
    "graphiql@3.8.3/graphiql.min.css": "graphiql-3.8.3.min.css",
    "graphiql@3.8.3/graphiql.min.js": "graphiql-3.8.3.min.js",
    "@graphiql/plugin-explorer@1.0.2/dist/style.css": "graphiql-plugin-explorer-1.0.2.css",
    "@graphiql/plugin-explorer@1.0.2/dist/index.umd.js": "graphiql-plugin-explorer-1.0.2.umd.js",
}


class GraphiQLAssetsError(Exception):
    """--graphiql-assets cannot be honoured; the server refuses to start."""


def check_assets(directory: Path) -> None:
    missing = [name for name in GRAPHIQL_ASSETS.values() if not (directory / name).is_file()]
    if missing:
        raise GraphiQLAssetsError(
            f"--graphiql-assets {directory}: missing {', '.join(missing)}; fetch them with "
            f"`{FETCH_COMMAND}` (npm pack from the npm registry, into .cache/graphiql-assets) "
            "or unset --graphiql-assets to load GraphiQL from unpkg.com"
        )


def local_asset_page(html: str) -> str:
    """Strawberry's GraphiQL page with every unpkg.com URL pointing at the served files."""
    for remote, local in GRAPHIQL_ASSETS.items():
        html = html.replace(UNPKG + remote, ASSETS_URL + local)
    if UNPKG in html:
        # A strawberry upgrade changed what the page loads: refuse rather than half-work.
        raise GraphiQLAssetsError(
            "strawberry's GraphiQL page loads files missing from GRAPHIQL_ASSETS "
            "(kueue_graphql/http/graphiql.py): " + html[html.index(UNPKG) :].split('"')[0]
        )
    return html


class GraphiQLAssets(StaticFiles):
    """The files of GRAPHIQL_ASSETS in `directory`, and nothing else that may lie there."""

    def __init__(self, directory: Path) -> None:
        check_assets(directory)
        super().__init__(directory=directory)

    async def get_response(self, path: str, scope: Scope) -> Response:
        if path not in GRAPHIQL_ASSETS.values():
            raise HTTPException(status_code=404)
        return await super().get_response(path, scope)


# GraphiQL writes its tabs (`graphiql:tabState`) and its history (`graphiql:queries`) to
# localStorage with each entry's headers, whatever shouldPersistHeaders says; a bearer token
# would outlive the page. This storage strips every "headers" field before writing, and never
# writes a key that is only headers.
_HEADERLESS_STORAGE = """
      function kueueGraphqlWithoutHeaders(value) {
        if (Array.isArray(value)) return value.map(kueueGraphqlWithoutHeaders);
        if (value && typeof value === "object") {
          const kept = {};
          for (const [key, item] of Object.entries(value)) {
            if (key !== "headers") kept[key] = kueueGraphqlWithoutHeaders(item);
          }
          return kept;
        }
        return value;
      }
      const kueueGraphqlStorage = {
        getItem: (key) => window.localStorage.getItem(key),
        setItem: (key, value) => {
          if (/headers/i.test(key)) return;
          let kept = value;
          try {
            kept = JSON.stringify(kueueGraphqlWithoutHeaders(JSON.parse(value)));
          } catch (notJson) {}
          window.localStorage.setItem(key, kept);
        },
        removeItem: (key) => window.localStorage.removeItem(key),
        clear: () => window.localStorage.clear(),
        get length() {
          return window.localStorage.length;
        },
      };

      function GraphiQLWithExplorer() {"""


def headerless_page(html: str) -> str:
    """Strawberry's GraphiQL page with no header (no bearer token) ever stored by the browser."""
    marker, persist = "\n      function GraphiQLWithExplorer() {", "shouldPersistHeaders: true,"
    if marker not in html or persist not in html:
        # A strawberry upgrade changed the page: refuse rather than store tokens.
        raise GraphiQLAssetsError(
            "strawberry's GraphiQL page changed: kueue_graphql/http/graphiql.py cannot keep "
            "headers out of localStorage; run with --no-graphiql"
        )
    html = html.replace(marker, _HEADERLESS_STORAGE, 1)
    return html.replace(
        persist, "shouldPersistHeaders: false,\n          storage: kueueGraphqlStorage,", 1
    )
