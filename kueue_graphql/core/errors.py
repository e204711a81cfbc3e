"""Errors the service reports to callers, each with a stable `extensions.code`.

Resolvers raise these; the GraphQL layer turns them into errors carrying `code`. Anything else
is an unexpected exception and gets masked, so internals never leak into responses.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    UNAVAILABLE = "UNAVAILABLE"
    BAD_REQUEST = "BAD_REQUEST"
    # A subscriber that does not read what is pushed: its bounded send queue overflowed.
    SLOW_CONSUMER = "SLOW_CONSUMER"
    INTERNAL = "INTERNAL"
    # Persisted queries (http/persisted.py): a hash this server has not stored (send the query
    # with it), persisted queries turned off, a document outside the operator's trusted list.
    PERSISTED_QUERY_NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
    PERSISTED_QUERY_NOT_SUPPORTED = "PERSISTED_QUERY_NOT_SUPPORTED"
    PERSISTED_QUERY_NOT_ALLOWED = "PERSISTED_QUERY_NOT_ALLOWED"


class ServiceError(Exception):
    """An error whose message is safe to show to the caller."""

    code: ErrorCode = ErrorCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnauthenticatedError(ServiceError):
    code = ErrorCode.UNAUTHENTICATED


class BadRequestError(ServiceError):
    code = ErrorCode.BAD_REQUEST


class SlowConsumerError(ServiceError):
    code = ErrorCode.SLOW_CONSUMER


class UnavailableError(ServiceError):
    code = ErrorCode.UNAVAILABLE


class NotFoundError(ServiceError):
    code = ErrorCode.NOT_FOUND

    def __init__(self, resource: str, name: str, namespace: str | None = None) -> None:
        where = f" in namespace {namespace}" if namespace else ""
        super().__init__(f"{resource} {name!r} not found{where}")
        self.resource = resource
        self.name = name
        self.namespace = namespace


class ForbiddenError(ServiceError):
    """The caller may not perform `verb` on `resource` (in `namespace`, named `name`)."""

    code = ErrorCode.FORBIDDEN

    def __init__(
        self,
        verb: str,
        group: str,
        resource: str,
        namespace: str | None = None,
        name: str | None = None,
        *,
        namespaced: bool = False,
    ) -> None:
        qualified = f"{resource}.{group}" if group else resource
        target = f" {name!r}" if name else ""
        if namespace:
            scope = f" in namespace {namespace!r}"
        elif namespaced:
            scope = " across all namespaces"
        else:
            scope = " (cluster-scoped)"
        super().__init__(f"forbidden: you may not {verb} {qualified}{target}{scope}")
        self.verb = verb
        self.group = group
        self.resource = resource
        self.namespace = namespace
        self.name = name
