"""The schema, with the query limits every request is checked against before it runs.

Parsing and validation happen before the caller's token is reviewed (it is reviewed when a
field first needs the caller), so they must be cheap for any document anyone can send:
graphql-core parses at most `max_tokens` tokens, `query_cost` measures the document in one
pass with fragments memoized, and only a document within every limit is validated, with a
deadline. Parsed documents and validation results are cached (LRU, keyed by the query text),
so a client repeating its queries pays for neither again.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import strawberry
from cachetools import LRUCache
from graphql import (
    ASTValidationRule,
    DocumentNode,
    FieldNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    get_operation_ast,
    parse,
)
from graphql import OperationType as AstOperationType
from strawberry.extensions import SchemaExtension
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.schema.schema import validate_document
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from kueue_graphql.core.errors import ErrorCode
from kueue_graphql.graph.cost import ApiCallCount
from kueue_graphql.graph.errors import ErrorCodes, coded_error, log_errors
from kueue_graphql.graph.pagination import PageArgumentsCheck
from kueue_graphql.graph.push import pushed
from kueue_graphql.graph.query import Query
from kueue_graphql.graph.query_cost import (
    QueryLimits,
    QueryRefusedError,
    ValidationDeadline,
    ValidationDeadlineError,
    measure_document,
    validation_deadline,
)
from kueue_graphql.graph.subscription import Subscription

__all__ = ["QueryLimits", "build_schema", "schema_sdl"]

# Distinct query texts whose parse and validation results are kept.
DOCUMENT_CACHE_SIZE = 256

ValidationKey = tuple[str, tuple[type[ASTValidationRule], ...]]


class DocumentChecks:
    """Parse and validate with the limits, cached; one per schema, shared by every request."""

    def __init__(self, limits: QueryLimits) -> None:
        self.limits = limits
        self.parsed: LRUCache[str, DocumentNode] = LRUCache(maxsize=DOCUMENT_CACHE_SIZE)
        self.validated: LRUCache[ValidationKey, list[GraphQLError]] = LRUCache(
            maxsize=DOCUMENT_CACHE_SIZE
        )

    def parse(self, query: str) -> DocumentNode:
        """Raises graphql-core's GraphQLError for a syntax error or too many tokens."""
        document = self.parsed.get(query)
        if document is None:
            document = parse(query, max_tokens=self.limits.max_tokens)
            self.parsed[query] = document
        return document

    def validate(
        self,
        schema: GraphQLSchema,
        query: str,
        document: DocumentNode,
        rules: tuple[type[ASTValidationRule], ...],
    ) -> list[GraphQLError]:
        key = (query, rules)
        errors = self.validated.get(key)
        if errors is not None:
            return errors
        deadline = time.perf_counter() + self.limits.max_analysis_seconds
        try:
            measure_document(document, self.limits, deadline=deadline)
        except QueryRefusedError as refused:
            errors = [GraphQLError(refused.message)]
        else:
            token = validation_deadline.set(deadline)
            try:
                errors = validate_document(schema, document, (*rules, ValidationDeadline))
            except ValidationDeadlineError:
                # Not cached: whether it finishes in time depends on the machine's load.
                budget_ms = self.limits.max_analysis_seconds * 1000
                message = f"the query is too expensive to validate (over {budget_ms:.0f} ms)"
                return [GraphQLError(message)]
            finally:
                validation_deadline.reset(token)
        self.validated[key] = errors
        return errors


class QueryLimitsCheck(SchemaExtension):
    """Parses and validates through the schema's DocumentChecks (per-request instance, shared
    caches), refusing a document over a limit before any resolver, API call or TokenReview."""

    def __init__(self, checks: DocumentChecks) -> None:
        self.checks = checks

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        # Strawberry parses itself when this leaves no document (a syntax error or too many
        # tokens): with the same limit, so it reports the same error.
        context.parse_options["max_tokens"] = self.checks.limits.max_tokens
        if context.query and context.graphql_document is None:
            with contextlib.suppress(GraphQLError):
                context.graphql_document = self.checks.parse(context.query)
        yield

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if (
            context.query
            and context.graphql_document is not None
            and context.pre_execution_errors is None
        ):
            context.pre_execution_errors = self.checks.validate(
                context.schema._schema,
                context.query,
                context.graphql_document,
                context.validation_rules,
            )
        yield


class ServiceSchema(strawberry.Schema):
    # Set by build_schema: the shared document cache and each subscription's send queue.
    checks: DocumentChecks
    send_queue: int

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # Strawberry calls this with the original errors, before ErrorCodes masks them. Its
        # default logs each one at ERROR with a traceback, FORBIDDEN and NOT_FOUND included.
        log_errors(errors)

    async def execute(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        # execute() serves plain HTTP requests; subscriptions stream over WebSocket. Without
        # this, a subscription POSTed as a query ran its generator as a field: INTERNAL.
        allowed = kwargs.get("allowed_operation_types")
        if allowed is not None:
            kwargs["allowed_operation_types"] = set(allowed) - {OperationType.SUBSCRIPTION}
        try:
            return await super().execute(*args, **kwargs)
        except InvalidOperationTypeError as error:
            if error.operation_type is not OperationType.SUBSCRIPTION:
                raise
            return ExecutionResult(
                data=None,
                errors=[
                    GraphQLError(
                        "subscriptions are served over WebSocket (protocol graphql-transport-ws)"
                        " at /graphql, not over a plain HTTP request",
                        extensions={"code": ErrorCode.BAD_REQUEST.value},
                    )
                ],
            )

    async def stream(self, query: str | None, *args: Any, **kwargs: Any) -> Any:
        # Streamed results (subscriptions) bypass the extensions' on_operation, so their
        # errors get the same stable `extensions.code` here as a query's.
        results = await super().stream(query, *args, **kwargs)
        if not isinstance(results, AsyncGenerator):
            return results
        field = self._subscription_field(query, kwargs.get("operation_name"))
        if field is None:
            return _coded(results)
        # A subscription: computed ahead into its bounded send queue (graph/push.py).
        return pushed(_coded(results), field, self.send_queue)

    def _subscription_field(self, query: str | None, operation_name: object) -> str | None:
        """The root field of a subscription document (cached parse), else None."""
        if not query:
            return None
        try:
            document = self.checks.parse(query)
        except GraphQLError:
            return None
        name = operation_name if isinstance(operation_name, str) else None
        operation = get_operation_ast(document, name)
        if not isinstance(operation, OperationDefinitionNode):
            return None
        if operation.operation is not AstOperationType.SUBSCRIPTION:
            return None
        for selection in operation.selection_set.selections:
            if isinstance(selection, FieldNode):
                return selection.name.value
        return None


async def _coded(results: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
    try:
        async for result in results:
            if isinstance(result, ExecutionResult) and result.errors:
                log_errors(result.errors)
                result.errors = [coded_error(e) for e in result.errors]
            yield result
    finally:
        await results.aclose()


def build_schema(limits: QueryLimits | None = None, *, send_queue: int = 16) -> strawberry.Schema:
    checks = DocumentChecks(limits or QueryLimits())
    schema = ServiceSchema(
        query=Query,
        subscription=Subscription,
        # Factories, not instances: a shared extension instance would carry one request's
        # state into another running concurrently. The document caches are shared on purpose.
        extensions=[
            functools.partial(QueryLimitsCheck, checks),
            ErrorCodes,
            ApiCallCount,
            PageArgumentsCheck,
        ],
        config=StrawberryConfig(auto_camel_case=True),
    )
    schema.checks = checks
    schema.send_queue = send_queue
    return schema


def schema_sdl() -> str:
    return build_schema().as_str() + "\n"
