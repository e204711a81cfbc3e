"""The one size cap on a GraphQL request, however it arrives.

A document (with its variables) comes as a POST body (queries, multipart subscriptions), as a
GET query string (queries; on by default, `--no-allow-get-queries` turns them off), or as a
WebSocket message (graphql-transport-ws `subscribe`, legacy graphql-ws `start`). Each transport
refuses one over `document_size_limit(settings)` bytes before anything parses it: the body
middleware (HTTP 413), the GET gate (HTTP 414), uvicorn's WebSocket protocol (`ws_max_size`:
the message as decompressed by permessage-deflate, so a small compressed frame cannot inflate
past the cap; close 1009) and the WebSocket message decoder (close 1009, for a server that runs
the app without our uvicorn configuration). Comments and whitespace count: they are what a
padded document is made of, and graphql-core's lexer walks every character.
"""

from __future__ import annotations

from kueue_graphql.http.settings import ServerSettings

# RFC 6455: the message is too big to process.
MESSAGE_TOO_BIG_CLOSE_CODE = 1009


def document_size_limit(settings: ServerSettings) -> int:
    """Bytes a request's JSON body, GET query string or WebSocket message may have."""
    return settings.max_body_bytes


def too_large(what: str, limit: int) -> str:
    """The refusal's message (`what`: "request body", "query string", "message")."""
    return f"{what} over {limit} bytes (--max-body-bytes)"
