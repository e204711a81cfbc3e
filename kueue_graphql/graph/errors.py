"""Every GraphQL error carries a stable `extensions.code`; unexpected ones are masked.

Service errors keep their message (written to be shown) and get their code; errors raised by
GraphQL itself before execution (syntax, validation, variable values, the depth/alias/token
limits) are BAD_REQUEST; anything else is a bug or an unforeseen failure: its details go to the
log, the caller sees "Unexpected error." with code INTERNAL.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from kueue_graphql.core.errors import ErrorCode, ForbiddenError, ServiceError

log = logging.getLogger(__name__)


def coded_error(error: GraphQLError) -> GraphQLError:
    original = error.original_error
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
    elif original is None or (isinstance(original, GraphQLError) and error.path is None):
        # Raised by GraphQL itself before execution; a variable of the wrong type carries the
        # scalar's own GraphQLError as its original error.
        extensions = {"code": ErrorCode.BAD_REQUEST.value}
        message = error.message
    else:
        log.error("unexpected error at %s", error.path, exc_info=original)
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
