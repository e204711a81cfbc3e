"""The admission map's files (/why/<namespace>/<kind>/<name> and <kueue-admission-map>): its own
script, style and GraphQL document (kueue_graphql/http/admission_map/, committed) and the layout
library (cytoscape with cytoscape-dagre, which bundles dagre), fetched at build time by
`make map-assets` with `npm ci` from web/admission-map/package-lock.json, checked against
admission_map_vendor.sha256 and packaged into the wheel (hatch_build.py). They are served under
/admission-map/ from an allow list; nothing else that lies in those directories is."""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from kueue_graphql.http.vendored import mismatches

HERE = Path(__file__).resolve().parent
OWN_DIRECTORY = HERE / "admission_map"
VENDOR_DIRECTORY = HERE / "admission_map_vendor"
VENDOR_SUMS = HERE / "admission_map_vendor.sha256"
MAP_ROUTE = "/admission-map/{file}"
FETCH_COMMAND = "make map-assets"

# node_modules path -> the flat name served and packaged (the version in the name keeps a stale
# file from passing; the versions are those of web/admission-map/package-lock.json).
VENDOR_FILES: dict[str, str] = {
    "cytoscape/dist/cytoscape.min.js": "cytoscape-3.35.0.min.js",
    "cytoscape-dagre/dist/cytoscape-dagre.min.js": "cytoscape-dagre-4.0.1.min.js",
}
# Their licences (MIT), packaged beside them and never served.
VENDOR_LICENSES: dict[str, str] = {
    "cytoscape/LICENSE": "cytoscape-3.35.0.LICENSE",
    "cytoscape-dagre/LICENSE": "cytoscape-dagre-4.0.1.LICENSE",
}
# The element's own scripts, in load order: the model, the WebSocket client, the element.
OWN_SCRIPTS = ("map-model.js", "map-socket.js", "admission-map.js")
OWN_FILES = (*OWN_SCRIPTS, "admission-map.css", "admission-map.graphql")
# The page loads these, in this order (the layout library before the element that uses it).
PAGE_SCRIPTS = (*VENDOR_FILES.values(), *OWN_SCRIPTS)

_MEDIA = {".js": "text/javascript", ".css": "text/css", ".graphql": "application/graphql"}
_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"}


class MapAssetsError(Exception):
    """The layout library is not in this installation; the server refuses to start."""


def check_vendor_files() -> None:
    problems = mismatches(VENDOR_DIRECTORY, VENDOR_SUMS)
    if problems:
        raise MapAssetsError(
            f"the admission map's layout library is not in this installation "
            f"({VENDOR_DIRECTORY}): {'; '.join(problems)}. A wheel always carries it; in a "
            f"source checkout fetch it with `{FETCH_COMMAND}` (npm ci), or pass "
            "--no-admission-map"
        )


def served_path(name: str) -> Path | None:
    if name in OWN_FILES:
        return OWN_DIRECTORY / name
    if name in VENDOR_FILES.values():
        return VENDOR_DIRECTORY / name
    return None


async def map_asset(request: Request) -> Response:
    """GET /admission-map/<file>: an allow-listed file, or 404."""
    path = served_path(request.path_params["file"])
    if path is None:
        raise HTTPException(status_code=404)
    return FileResponse(path, media_type=_MEDIA[path.suffix], headers=_HEADERS)
