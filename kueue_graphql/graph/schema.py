"""The schema, with the query limits every request is checked against before it runs."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaxAliasesLimiter, MaxTokensLimiter, QueryDepthLimiter
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.exceptions import InvalidOperationTypeError
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType

from kueue_graphql.core.errors import ErrorCode
from kueue_graphql.graph.cost import ApiCallCount
from kueue_graphql.graph.errors import ErrorCodes, coded_error, log_errors
from kueue_graphql.graph.pagination import PageArgumentsCheck
from kueue_graphql.graph.query import Query
from kueue_graphql.graph.subscription import Subscription


@dataclass(frozen=True)
class QueryLimits:
    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 2000


class ServiceSchema(strawberry.Schema):
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

    async def stream(self, *args: Any, **kwargs: Any) -> Any:
        # Streamed results (subscriptions) bypass the extensions' on_operation, so their
        # errors get the same stable `extensions.code` here as a query's.
        results = await super().stream(*args, **kwargs)
        if not isinstance(results, AsyncGenerator):
            return results
        return _coded(results)


async def _coded(results: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
    try:
        async for result in results:
            if isinstance(result, ExecutionResult) and result.errors:
                log_errors(result.errors)
                result.errors = [coded_error(e) for e in result.errors]
            yield result
    finally:
        await results.aclose()


def build_schema(limits: QueryLimits | None = None) -> strawberry.Schema:
    limits = limits or QueryLimits()
    return ServiceSchema(
        query=Query,
        subscription=Subscription,
        # Factories, not instances: a shared extension instance would carry one request's
        # state into another running concurrently.
        extensions=[
            functools.partial(QueryDepthLimiter, max_depth=limits.max_depth),
            functools.partial(MaxAliasesLimiter, max_alias_count=limits.max_aliases),
            functools.partial(MaxTokensLimiter, max_token_count=limits.max_tokens),
            ErrorCodes,
            ApiCallCount,
            PageArgumentsCheck,
        ],
        config=StrawberryConfig(auto_camel_case=True),
    )


def schema_sdl() -> str:
    return build_schema().as_str() + "\n"
