"""Reports what a request cost in Kubernetes API calls, in the response's `extensions`.

Callers see the price of their query (and can trim it); tests and operators can check that a
query stays cheap.
"""

from __future__ import annotations

from typing import Any

from strawberry.extensions import SchemaExtension

from kueue_graphql.context import RequestContext


class ApiCallCount(SchemaExtension):
    def get_results(self) -> dict[str, Any]:
        context = self.execution_context.context
        if not isinstance(context, RequestContext):
            return {}
        return {"apiCalls": len(context.meter.calls)}
