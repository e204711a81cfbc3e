"""Refusals outside of GraphQL execution, shaped as GraphQL errors with a stable
`extensions.code`: the error body, 401 with its RFC 6750 challenge, an over-long
operationName."""

from __future__ import annotations

from cross_web import HTTPException
from starlette.responses import JSONResponse

from kueue_graphql.core.errors import ErrorCode
from kueue_graphql.http.media import ResponseMedia
from kueue_graphql.http.settings import ServerSettings


def graphql_error(
    status: int,
    code: ErrorCode,
    message: str,
    headers: dict[str, str] | None = None,
    media: ResponseMedia | None = None,
) -> JSONResponse:
    """A GraphQL-shaped error answer for requests refused outside of execution (no `data`: it
    was not executed), in the media type the request asked for (application/json if none)."""
    body = {"errors": [{"message": message, "extensions": {"code": code.value}}]}
    response = JSONResponse(body, status_code=status, headers=headers)
    if media is ResponseMedia.GRAPHQL_RESPONSE:
        response.headers["content-type"] = media.content_type
    return response


MISSING_CREDENTIALS = "send `Authorization: Bearer <token>`"
MALFORMED_CREDENTIALS = "the Authorization header must be exactly `Bearer <token>` (one token)"


def unauthenticated(
    message: str,
    *,
    rejected: bool,
    malformed: bool = False,
    media: ResponseMedia | None = None,
) -> JSONResponse:
    # RFC 6750: a challenge, with error="invalid_token" when a token was sent but not accepted
    # and error="invalid_request" when the header is not `Bearer <token>`.
    if malformed:
        challenge = 'Bearer error="invalid_request"'
    elif rejected:
        challenge = 'Bearer error="invalid_token"'
    else:
        challenge = "Bearer"
    return graphql_error(
        401,
        ErrorCode.UNAUTHENTICATED,
        message,
        headers={"WWW-Authenticate": challenge},
        media=media,
    )


def check_operation_name(operation_name: object, settings: ServerSettings) -> None:
    """An over-long operationName is refused before GraphQL would echo it in an error."""
    limit = settings.max_operation_name_length
    if isinstance(operation_name, str) and len(operation_name) > limit:
        raise HTTPException(400, f"operationName is longer than {limit} characters")
