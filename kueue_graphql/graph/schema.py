"""The schema, with the query limits every request is checked against before it runs.

Parsing and validation happen before the caller's token is reviewed (it is reviewed when a
field first needs the caller), so they must be cheap for any document anyone can send:
graphql-core parses at most `max_tokens` tokens, `query_cost` measures the document in one
pass with fragments memoized and counts the work of analysing it in units, and only a document
within every limit is validated. Every decision is a function of the text and the limits, never
of a clock; a wall-clock backstop (`max_analysis_seconds`, seconds) stops only an analysis that
runs far past anything the units allow. Validation results are cached (LRU, keyed by the
query text), and so are the parsed documents of queries that validated, so a client repeating
its queries pays for neither again.

What is cached must stay small for the garbage collector: a parsed document is about ten
objects per token, and each full collection walks every object the process holds. When every
parsed document was kept (256 of them), 300 distinct 1,900-field documents, sent with any
token, left 2.5 million objects behind and full collections of 0.7 s on the one event loop.
So refused documents are never kept (their errors are kept without their AST nodes), and the
kept documents are bounded by the total length of their text.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
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
from kueue_graphql.graph.operation_choice import OperationNameRequired
from kueue_graphql.graph.pagination import check_page_arguments_first
from kueue_graphql.graph.push import pushed
from kueue_graphql.graph.quantity import DECIMAL_SCALAR
from kueue_graphql.graph.query import Query
from kueue_graphql.graph.query_cost import (
    AnalysisStoppedError,
    Backstop,
    QueryLimits,
    QueryRefusedError,
    ValidationBackstop,
    measure_document,
    validation_backstop,
)
from kueue_graphql.graph.resolving import wire_resolvers
from kueue_graphql.graph.subscription import Subscription

__all__ = ["QueryLimits", "build_schema", "schema_sdl"]

# Distinct query texts whose validation results are kept (errors without AST nodes).
DOCUMENT_CACHE_SIZE = 256
# Total characters of the query texts whose parsed documents are kept (documents that
# validated only): about 100,000 AST objects at most.
PARSED_CACHE_CHARACTERS = 256 * 1024

ValidationKey = tuple[str, tuple[type[ASTValidationRule], ...]]


@dataclass(frozen=True)
class Analysis:
    """A query text's parse and validation: the document and the errors that refuse it (empty:
    it may run)."""

    document: DocumentNode
    errors: list[GraphQLError]


# Documents not seen before are analysed here, one at a time and in order of arrival, off the
# event loop: while a bomb is parsed and refused, the loop still answers /healthz and requests
# whose documents are cached (the GIL passes between threads every few ms,
# sys.getswitchinterval()). One thread, so concurrent bombs queue behind each other instead of
# sharing the loop's GIL time among themselves.
_analysis_thread: ThreadPoolExecutor | None = None


def _analysis_executor() -> ThreadPoolExecutor:
    global _analysis_thread
    if _analysis_thread is None:
        _analysis_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphql-analysis")
    return _analysis_thread


class DocumentChecks:
    """Parse and validate with the limits, cached; one per schema, shared by every request.
    The caches are read and written on the event loop only; the analysis thread runs pure
    functions of the text."""

    def __init__(self, limits: QueryLimits) -> None:
        self.limits = limits
        self.parsed: LRUCache[str, DocumentNode] = LRUCache(
            maxsize=PARSED_CACHE_CHARACTERS, getsizeof=_text_length
        )
        # Refusals only: a valid document is known by being in `parsed`.
        self.validated: LRUCache[ValidationKey, Analysis] = LRUCache(maxsize=DOCUMENT_CACHE_SIZE)

    def cached(self, query: str, rules: tuple[type[ASTValidationRule], ...]) -> Analysis | None:
        refused = self.validated.get((query, rules))
        if refused is not None:
            return refused
        document = self.parsed.get(query)
        return None if document is None else Analysis(document, [])

    async def check(
        self, schema: GraphQLSchema, query: str, rules: tuple[type[ASTValidationRule], ...]
    ) -> Analysis:
        """The document to run (or, when refused, a stand-in of the same operations) and the
        errors refusing it."""
        found = self.cached(query, rules)
        if found is not None:
            return found
        loop = asyncio.get_running_loop()
        backstop = Backstop()
        timers: list[asyncio.TimerHandle] = []

        def arm() -> None:
            timers.append(loop.call_later(self.limits.max_analysis_seconds, backstop.set))

        def analyse() -> tuple[DocumentNode | None, list[GraphQLError]]:
            # The backstop's time starts when the analysis does, not while it waits its turn.
            with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
                loop.call_soon_threadsafe(arm)
            return self.analyse(schema, query, rules, backstop)

        try:
            document, errors = await loop.run_in_executor(_analysis_executor(), analyse)
        finally:
            # arm() ran before this: the thread scheduled it before its result. (When this
            # request is cancelled first, the timer still stops the analysis running on.)
            for timer in timers:
                timer.cancel()
        if errors:
            # Nothing of the refused document is kept: its errors keep their message and
            # positions in the query text, not its AST nodes, and a stand-in keeps its
            # operations' names and types (strawberry answers by type: a subscription POSTed
            # over HTTP is told to use WebSocket). A document the backstop stopped is not kept
            # (whether it finishes in time depends on the machine's load).
            refused = Analysis(stand_in(document), [detached(e) for e in errors])
            if not any(e.message.startswith(_OUT_OF_TIME) for e in errors):
                self.validated[(query, rules)] = refused
            return refused
        assert document is not None  # parsed, since nothing refused it
        if len(query) <= PARSED_CACHE_CHARACTERS // 16:
            self.parsed[query] = document
        return Analysis(document, [])

    def analyse(
        self,
        schema: GraphQLSchema,
        query: str,
        rules: tuple[type[ASTValidationRule], ...],
        backstop: Backstop | None = None,
    ) -> tuple[DocumentNode | None, list[GraphQLError]]:
        """Parse, measure and validate `query`: refused by the tokens, the measured limits and
        the analysis units, whatever the machine and its load (no clock is read), or stopped
        once `backstop` is set."""
        try:
            document = parse(query, max_tokens=self.limits.max_tokens)
        except GraphQLError as error:
            return None, [error]
        try:
            measure_document(document, self.limits, backstop=backstop)
        except QueryRefusedError as refused:
            return document, [GraphQLError(refused.message)]
        except AnalysisStoppedError:
            return document, [self.out_of_time()]
        token = validation_backstop.set(backstop)
        try:
            errors = validate_document(schema, document, (*rules, ValidationBackstop))
        except AnalysisStoppedError:
            return document, [self.out_of_time()]
        finally:
            validation_backstop.reset(token)
        return document, errors

    def out_of_time(self) -> GraphQLError:
        return GraphQLError(
            f"{_OUT_OF_TIME}: analysing it was stopped after "
            f"{self.limits.max_analysis_seconds:g} s, the server's backstop (the server is "
            "overloaded, or the query costs more than its units show); retry later, or select "
            "fewer fields"
        )


_OUT_OF_TIME = "the query took too long to analyse"


def stand_in(document: DocumentNode | None) -> DocumentNode:
    """What a refused document is replaced by, so that strawberry neither parses the text again
    nor validates it (the refusal is set as its pre-execution errors): the same operations,
    each selecting `__typename` (a query when the text did not parse)."""
    operations = [
        f"{d.operation.value} {d.name.value if d.name else ''} {{ __typename }}"
        for d in (document.definitions if document is not None else ())
        if isinstance(d, OperationDefinitionNode)
    ]
    return parse(" ".join(operations) or "{ __typename }")


def _text_length(document: DocumentNode) -> int:
    return len(document.loc.source.body) if document.loc is not None else 1


def detached(error: GraphQLError) -> GraphQLError:
    """The error as the caller sees it (message, locations, extensions), without the AST."""
    return GraphQLError(
        error.message,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=error.extensions,
    )


class QueryLimitsCheck(SchemaExtension):
    """Parses and validates through the schema's DocumentChecks (per-request instance, shared
    caches), refusing a document over a limit before any resolver, API call or TokenReview."""

    def __init__(self, checks: DocumentChecks) -> None:
        self.checks = checks

    async def on_parse(self) -> AsyncIterator[None]:
        context = self.execution_context
        context.parse_options["max_tokens"] = self.checks.limits.max_tokens
        if context.query and context.graphql_document is None:
            analysis = await self.checks.check(
                context.schema._schema, context.query, tuple(context.validation_rules)
            )
            context.graphql_document = analysis.document
            # Set here, so strawberry's own validation does not run again (an empty list: the
            # document is valid).
            context.pre_execution_errors = analysis.errors
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
                        " at /graphql, or over HTTP when the request asks for a stream with "
                        '`Accept: multipart/mixed;subscriptionSpec="1.0"`; not over a plain '
                        "HTTP request",
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
        # Streaming starts after validation, so the document is normally in the cache; one
        # evicted meanwhile passed the limits and parses within them.
        document = self.checks.parsed.get(query)
        if document is None:
            try:
                document = parse(query, max_tokens=self.checks.limits.max_tokens)
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
            # After the parse above: refuses several operations without an operationName.
            OperationNameRequired,
            ErrorCodes,
            ApiCallCount,
        ],
        config=StrawberryConfig(auto_camel_case=True, scalar_map={Decimal: DECIMAL_SCALAR}),
    )
    schema.checks = checks
    schema.send_queue = send_queue
    check_page_arguments_first(schema._schema)
    wire_resolvers(schema)
    return schema


def schema_sdl() -> str:
    return build_schema().as_str() + "\n"
