"""GraphiQL without internet: its JavaScript and CSS served by the service itself.

Strawberry's GraphiQL page (strawberry/static/graphiql.html) loads seven pinned files from
unpkg.com; a browser that cannot reach unpkg.com (an air-gapped cluster) would stay at
"Loading...". The wheel carries the files (kueue_graphql/http/graphiql_assets/, fetched at build
time by `make graphiql-assets` with npm and checked against graphiql_assets.sha256; the wheel
build refuses to run without them, hatch_build.py). They are served under /graphql/assets/, the
page points at them, and its Content-Security-Policy lets it load nothing from another origin.
`serve --graphiql-assets DIR` serves the same file names from DIR instead. The page keeps
strawberry's `integrity` (SRI) hashes, so a browser refuses a file that differs from the pinned
one.
"""

from __future__ import annotations

import base64
import hashlib
import re
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
# Where the wheel carries the files (git-ignored in a source checkout: `make graphiql-assets`).
PACKAGED_ASSETS = Path(__file__).resolve().parent / "graphiql_assets"
# The SHA-256 of each file ('<hex>  <name>' lines), committed: checked by the fetch and by the
# wheel build.
ASSET_SUMS = Path(__file__).resolve().parent / "graphiql_assets.sha256"

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
# Their licences (all MIT), packaged beside them and never served: each package's LICENSE, or
# for @graphiql/plugin-explorer, which ships none, its package.json ("license": "MIT").
GRAPHIQL_LICENSES: dict[str, str] = {
    "react@18.2.0/LICENSE": "react-18.2.0.LICENSE",
    "react-dom@18.2.0/LICENSE": "react-dom-18.2.0.LICENSE",
    "js-cookie@3.0.5/LICENSE": "js-cookie-3.0.5.LICENSE",
    "graphiql@3.8.3/LICENSE": "graphiql-3.8.3.LICENSE",
    "@graphiql/plugin-explorer@1.0.2/package.json": "graphiql-plugin-explorer-1.0.2.package.json",
}
# The names are content-addressed by version (and SRI-checked): a browser may keep them.
ASSET_HEADERS = {
    "Cache-Control": "public, max-age=31536000, immutable",
    "X-Content-Type-Options": "nosniff",
}


class GraphiQLAssetsError(Exception):
    """--graphiql-assets cannot be honoured; the server refuses to start."""


def assets_directory(override: Path | None) -> Path:
    """--graphiql-assets DIR if given, else the files packaged with kueue-graphql."""
    return PACKAGED_ASSETS if override is None else override


def check_assets(directory: Path) -> None:
    missing = [name for name in GRAPHIQL_ASSETS.values() if not (directory / name).is_file()]
    if not missing:
        return
    if directory == PACKAGED_ASSETS:
        raise GraphiQLAssetsError(
            f"GraphiQL's files are not in this installation ({directory}): missing "
            f"{', '.join(missing)}. A wheel always carries them; in a source checkout fetch "
            f"them with `{FETCH_COMMAND}` (npm pack from the npm registry), or pass "
            "--graphiql-assets DIR, or --no-graphiql"
        )
    raise GraphiQLAssetsError(
        f"--graphiql-assets {directory}: missing {', '.join(missing)}; fetch them with "
        f"`uv run python scripts/fetch_graphiql_assets.py {directory}` (npm pack from the npm "
        "registry), or unset --graphiql-assets to serve the packaged copies"
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
        response = await super().get_response(path, scope)
        response.headers.update(ASSET_HEADERS)
        return response


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


# GraphiQL 3.8.3 (@graphiql/react's SchemaContextProvider, packages/graphiql-react/src/schema.tsx)
# introspects on mount and again whenever its `fetcher` prop changes, each time with the Headers
# editor's current text. On mount that text is still empty, so the first introspection goes out
# without the pasted Authorization header (401, "Error fetching schema" until Re-fetch). The page
# hands GraphiQL a new fetcher (the same transport) whenever the headers, parsed, settle on a new
# value: the schema is fetched again with them, and the token stays out of storage.
_SETTLED_HEADERS = """
      function kueueGraphqlHeadersKey(text) {
        try {
          const parsed = JSON.parse(text && text.trim() ? text : "{}");
          if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
            return JSON.stringify(parsed);
          }
        } catch (notJson) {}
        return null;
      }
      function useKueueGraphqlSettledHeaders(headers) {
        const key = kueueGraphqlHeadersKey(headers);
        const [settled, setSettled] = React.useState(key);
        React.useEffect(() => {
          if (key === null || key === settled) return undefined;
          const timer = setTimeout(() => setSettled(key), 300);
          return () => clearTimeout(timer);
        }, [key, settled]);
        return settled;
      }

      function GraphiQLWithExplorer() {"""

_SCHEMA_FETCHER = """        const settledHeaders = useKueueGraphqlSettledHeaders(headers);
        const schemaFetcher = React.useMemo(
          () => (params, options) => fetcher(params, options),
          [settledHeaders],
        );

        const explorerPlugin = GraphiQLPluginExplorer.explorerPlugin();"""


def schema_follows_headers_page(html: str) -> str:
    """Strawberry's GraphiQL page fetching the schema again, with the pasted headers, once
    they change."""
    marker = "\n      function GraphiQLWithExplorer() {"
    plugin = "        const explorerPlugin = GraphiQLPluginExplorer.explorerPlugin();"
    prop = "          fetcher: fetcher,"
    if any(html.count(part) != 1 for part in (marker, plugin, prop)):
        raise GraphiQLAssetsError(
            "strawberry's GraphiQL page changed: kueue_graphql/http/graphiql.py cannot make "
            "its schema fetch follow the pasted headers; run with --no-graphiql"
        )
    html = html.replace(marker, _SETTLED_HEADERS, 1).replace(plugin, _SCHEMA_FETCHER, 1)
    return html.replace(prop, "          fetcher: schemaFetcher,", 1)


def _sha256_sources(html: str, element: str) -> str:
    """CSP hash sources of the page's inline <script> or <style> elements."""
    bodies = re.findall(rf"<{element}>(.*?)</{element}>", html, flags=re.DOTALL)
    return " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in bodies
    )


def content_security_policy(html: str) -> str:
    """The page's Content-Security-Policy: scripts, styles, fonts and connections (queries,
    WebSocket subscriptions) from its own origin only; the page's own inline script and style
    by their hashes; data: images (the favicon) and fonts (GraphiQL's CSS embeds them)."""
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src 'self' {_sha256_sources(html, 'script')}",
            f"style-src 'self' {_sha256_sources(html, 'style')}",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


def graphiql_page(html: str) -> str:
    """Strawberry's GraphiQL page as served: local files, no stored headers, the schema fetched
    with the pasted headers."""
    return schema_follows_headers_page(headerless_page(local_asset_page(html)))
