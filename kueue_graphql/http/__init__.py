"""The HTTP face: POST /graphql, GraphiQL, health and readiness."""

from kueue_graphql.core.modes import AuthMode, ReadMode
from kueue_graphql.http.app import build_app
from kueue_graphql.http.settings import ServerSettings

__all__ = ["AuthMode", "ReadMode", "ServerSettings", "build_app"]
