"""The schema, with the query limits every request is checked against before it runs."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import strawberry
from strawberry.extensions import MaxAliasesLimiter, MaxTokensLimiter, QueryDepthLimiter
from strawberry.schema.config import StrawberryConfig

from kueue_graphql.graph.cost import ApiCallCount
from kueue_graphql.graph.errors import ErrorCodes
from kueue_graphql.graph.query import Query


@dataclass(frozen=True)
class QueryLimits:
    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 2000


def build_schema(limits: QueryLimits | None = None) -> strawberry.Schema:
    limits = limits or QueryLimits()
    return strawberry.Schema(
        query=Query,
        # Factories, not instances: a shared extension instance would carry one request's
        # state into another running concurrently.
        extensions=[
            functools.partial(QueryDepthLimiter, max_depth=limits.max_depth),
            functools.partial(MaxAliasesLimiter, max_alias_count=limits.max_aliases),
            functools.partial(MaxTokensLimiter, max_token_count=limits.max_tokens),
            ErrorCodes,
            ApiCallCount,
        ],
        config=StrawberryConfig(auto_camel_case=True),
    )


def schema_sdl() -> str:
    return build_schema().as_str() + "\n"
