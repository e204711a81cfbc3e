"""Every GraphQL error carries a stable `extensions.code`; unexpected ones are masked.

Service errors keep their message (written to be shown) and get their code; errors raised by
GraphQL itself before execution (syntax, validation, variable values, the depth/alias/token
limits) are BAD_REQUEST; anything else is a bug or an unforeseen failure: its details go to the
log, the caller sees "Unexpected error." with code INTERNAL.

Logging (`log_errors`, the schema's `process_errors`): an error with a stable code is a normal
answer (a denied field, a missing object, a bad query) and gets one DEBUG line with its code and
path, no message (it names the caller's objects) and no traceback; only unexpected exceptions are
logged at ERROR with their traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from kueue_graphql.core.errors import ErrorCode, ForbiddenError, ServiceError

log = logging.getLogger(__name__)


def _is_pre_execution(error: GraphQLError) -> bool:
    # Raised by GraphQL itself before execution; a variable of the wrong type carries the
    # scalar's own GraphQLError as its original error.
    original = error.original_error
    return original is None or (isinstance(original, GraphQLError) and error.path is None)


def error_code(error: GraphQLError) -> ErrorCode:
    """The code the caller will see for `error` (INTERNAL: unexpected, masked)."""
    original = error.original_error
    if isinstance(original, ServiceError):
        return original.code
    if _is_pre_execution(error):
        return ErrorCode.BAD_REQUEST
    return ErrorCode.INTERNAL


def _path(error: GraphQLError) -> str:
    return ".".join(str(segment) for segment in error.path) if error.path else "-"


def log_errors(errors: Iterable[GraphQLError]) -> None:
    """One line per error: DEBUG for coded (expected) errors, ERROR with the traceback for
    unexpected ones. Replaces strawberry's default, which logs every error at ERROR."""
    for error in errors:
        code = error_code(error)
        if code is ErrorCode.INTERNAL:
            log.error("unexpected error at %s", _path(error), exc_info=error.original_error)
        else:
            log.debug("error %s at %s", code.value, _path(error))


def coded_error(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if original is None and (error.extensions or {}).get("code"):
        # Already coded (a streamed result is coded as it is produced, and again by the
        # operation's extension when the stream ends): keep its code.
        return error
    if isinstance(original, ServiceError):
        extensions: dict[str, object] = {"code": original.code.value}
        if isinstance(original, ForbiddenError):
            extensions.update(
                {
                    "verb": original.verb,
                    "group": original.group,
                    "resource": original.resource,
                    "namespace": original.namespace,
                    "name": original.name,
                }
            )
        message = original.message
    elif _is_pre_execution(error):
        extensions = {"code": ErrorCode.BAD_REQUEST.value}
        message = error.message
    else:
        # Logged (with the traceback) by `log_errors`, before this masking.
        extensions = {"code": ErrorCode.INTERNAL.value}
        message = "Unexpected error."
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions=extensions,
    )


class ErrorCodes(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        errors = getattr(result, "errors", None)
        if result is not None and errors:
            result.errors = [coded_error(e) for e in errors]
