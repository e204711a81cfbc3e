"""A document with several operations runs the one `operationName` names, and only then.

strawberry takes a missing operationName as the name of the document's first operation, so a
client that sent two subscriptions (or two queries) and no name got the first one run, silently,
over every transport. GraphQL over HTTP requires the name when a document has several
operations; here the request is refused BAD_REQUEST before anything runs, saying which
operations there are. Over HTTP that is an answer like a validation error's, over WebSocket the
operation's `error` message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from graphql import GraphQLError, OperationDefinitionNode
from strawberry.extensions import SchemaExtension

from kueue_graphql.core.errors import ErrorCode

# Names listed in the refusal, at most (the rest are counted).
LISTED_OPERATIONS = 10


def operation_name_problem(operations: list[str | None], provided: str | None) -> str | None:
    """Why a document with these operation names (None: anonymous) cannot run with
    `provided` as its operationName, or None when it can."""
    if len(operations) < 2 or provided is not None:
        return None
    names = [name or "(anonymous)" for name in operations]
    listed = ", ".join(names[:LISTED_OPERATIONS])
    if len(names) > LISTED_OPERATIONS:
        listed += f" and {len(names) - LISTED_OPERATIONS} more"
    return (
        f"the document has {len(names)} operations ({listed}): send operationName to say "
        "which one to run"
    )


class OperationNameRequired(SchemaExtension):
    """Runs after the document is parsed (QueryLimitsCheck); a refused document keeps its own
    errors."""

    async def on_parse(self) -> AsyncIterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and not context.pre_execution_errors:
            operations = [
                d.name.value if d.name else None
                for d in document.definitions
                if isinstance(d, OperationDefinitionNode)
            ]
            problem = operation_name_problem(operations, context._provided_operation_name)
            if problem is not None:
                context.pre_execution_errors = [
                    GraphQLError(problem, extensions={"code": ErrorCode.BAD_REQUEST.value})
                ]
        yield
