"""Reports what a request cost in Kubernetes API calls, in the response's `extensions`.

Callers see the price of their query (and can trim it); tests and operators can check that a
query stays cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from strawberry.extensions import SchemaExtension

from kueue_graphql.context import RequestContext


class ApiCallCount(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        yield
        # Parsed by now (unless it did not parse): record the operation for the access log
        # and the request metrics.
        context = self.execution_context.context
        if isinstance(context, RequestContext):
            context.operation.name = self.execution_context.operation_name
            with contextlib.suppress(RuntimeError):  # a document that did not parse
                context.operation.type = self.execution_context.operation_type.value

    def get_results(self) -> dict[str, Any]:
        context = self.execution_context.context
        if not isinstance(context, RequestContext):
            return {}
        results: dict[str, Any] = {"apiCalls": len(context.meter.calls)}
        # `cache` read mode: how fresh the Kueue objects this answer was built from are.
        cache = context.reads.cache_report()
        if cache is not None:
            results["cache"] = cache
        return results
