"""The admission map page, GET /why/<namespace>/<kind>/<name>: a link for chat bots and runbooks.

The page is static HTML with no inline script: <kueue-admission-map> (admission_map/*.js, served
under /admission-map/) does the rest in the browser, through the `diagnosis` subscription. The
server reads nothing from the cluster here and never echoes a token: when the request carries an
Authorization header (an auth proxy put it there), the page only says so (`data-auth="proxy"`),
and the element then sends no token of its own; the proxy adds it to the page's own requests.
"""

from __future__ import annotations

import html
import re

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from kueue_graphql.http.map_assets import PAGE_SCRIPTS

WHY_ROUTE = "/why/{namespace}/{kind}/{name}"
# A DNS-1123 subdomain (namespaces are labels, a subset), and a kind as Kubernetes spells one.
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")

# Scripts, styles and connections (queries, the WebSocket) from this origin only; the graph is
# drawn on a canvas.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Vary": "Authorization",
}

# The element looks for it and, when absent, adds the stylesheet itself (admission-map.js).
STYLESHEET_ID = "__________cytoscape_stylesheet"

# Paths relative to the page (/why/a/b/c), so it also works behind a proxy that adds a prefix.
_UP = "../../../"


def page_html(namespace: str, kind: str, name: str, *, proxied: bool) -> str:
    scripts = "\n".join(
        f'<script src="{_UP}admission-map/{script}"></script>' for script in PAGE_SCRIPTS
    )
    title = html.escape(f"Why: {kind}/{name} in {namespace}")
    attributes = " ".join(
        f'{key}="{html.escape(value)}"'
        for key, value in (
            ("namespace", namespace),
            ("kind", kind),
            ("name", name),
            ("endpoint", f"{_UP}graphql"),
            ("auth", "proxy" if proxied else "token"),
        )
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" id="{STYLESHEET_ID}" href="{_UP}admission-map/admission-map.css">
{scripts}
</head>
<body class="why-page">
<h1>{title}</h1>
<kueue-admission-map {attributes}></kueue-admission-map>
</body>
</html>
"""


async def why_page(request: Request) -> Response:
    namespace, kind, name = (request.path_params[key] for key in ("namespace", "kind", "name"))
    if not (_NAME.fullmatch(namespace) and _NAME.fullmatch(name) and _KIND.fullmatch(kind)):
        return PlainTextResponse(
            "not an object: use /why/<namespace>/<kind>/<name>, e.g. /why/team-a/job/my-job "
            "(namespace and name as Kubernetes spells them, kind letters and digits)",
            status_code=400,
            headers=PAGE_HEADERS,
        )
    proxied = "authorization" in request.headers
    body = page_html(namespace, kind, name, proxied=proxied)
    return HTMLResponse(body, headers=PAGE_HEADERS)
