"""The schema, with the query limits every request is checked against before it runs."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaxAliasesLimiter, MaxTokensLimiter, QueryDepthLimiter
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from kueue_graphql.graph.cost import ApiCallCount
from kueue_graphql.graph.errors import ErrorCodes, log_errors
from kueue_graphql.graph.pagination import PageArgumentsCheck
from kueue_graphql.graph.query import Query


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


def build_schema(limits: QueryLimits | None = None) -> strawberry.Schema:
    limits = limits or QueryLimits()
    return ServiceSchema(
        query=Query,
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
