"""`viewer`: who the service thinks the caller is."""

from __future__ import annotations

import strawberry

from kueue_graphql.graph.common import JSON, Info, as_json


@strawberry.type(description="The caller, as authenticated (TokenReview or the kubeconfig).")
class Viewer:
    username: str
    uid: str | None
    groups: list[str]
    extra: JSON


@strawberry.type
class ViewerQuery:
    @strawberry.field
    async def viewer(self, info: Info) -> Viewer | None:
        identity = await info.context.identity()
        return Viewer(
            username=identity.username,
            uid=identity.uid or None,
            groups=list(identity.groups),
            extra=as_json(identity.extra_dict),
        )
