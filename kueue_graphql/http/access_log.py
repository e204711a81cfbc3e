"""Keeps tokens out of the access log.

uvicorn logs each request line with its query string. A client may put a token there:
`?access_token=` (RFC 6750 allows it; this server never reads it, but it would be logged), or
GraphiQL's `?headers={"Authorization": "Bearer ..."}` link parameter. The filter rewrites the
logged path: the values of parameters with a credential-like name, and any value carrying a
bearer token or a JWT, become `REDACTED`; parameter names and other values stay, so the line is
still useful.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

ACCESS_LOGGER = "uvicorn.access"
REDACTED = "REDACTED"

# Compared after lower-casing, with `-` as `_`.
CREDENTIAL_PARAMETERS = frozenset(
    {
        "access_token",
        "id_token",
        "refresh_token",
        "token",
        "auth",
        "authorization",
        "bearer",
        "headers",
        "password",
        "secret",
        "api_key",
        "apikey",
        "key",
        "client_secret",
        "code",
    }
)
_TOKEN_LIKE = re.compile(r"bearer\s|eyJ[A-Za-z0-9_-]{8,}", re.IGNORECASE)


def _redact_parameter(parameter: str) -> str:
    name, separator, value = parameter.partition("=")
    if not separator:
        return parameter
    normalized = unquote_plus(name).strip().lower().replace("-", "_")
    if normalized in CREDENTIAL_PARAMETERS or _TOKEN_LIKE.search(unquote_plus(value)):
        return f"{name}={REDACTED}"
    return parameter


def redact_path(path: str) -> str:
    """`path?query` with credential values replaced by REDACTED."""
    base, separator, query = path.partition("?")
    if not separator:
        return path
    return base + "?" + "&".join(_redact_parameter(p) for p in query.split("&"))


class RedactQueryTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(
            isinstance(a, str) and "?" in a for a in record.args
        ):
            record.args = tuple(
                redact_path(a) if isinstance(a, str) and "?" in a else a for a in record.args
            )
        return True


def install_access_log_redaction() -> None:
    """Adds the filter to uvicorn's access logger (once)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactQueryTokens) for f in logger.filters):
        logger.addFilter(RedactQueryTokens())
