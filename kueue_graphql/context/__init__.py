"""Per-request context: who calls, the request's loaders, its deadline and API-call budget."""

from kueue_graphql.context.live import LiveLimits, LiveRegistry
from kueue_graphql.context.request import LazyIdentity, RequestContext, RequestLimits

__all__ = ["LazyIdentity", "LiveLimits", "LiveRegistry", "RequestContext", "RequestLimits"]
