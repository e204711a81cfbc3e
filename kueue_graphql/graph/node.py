"""Relay's `Node` interface: every entity has a global `id` that `node(id:)` finds again.

Entities are the Kubernetes objects (KubeObject), cohorts and diagnoses: what a client caches
by identity. Value types (quantities, conditions, quota lines, taints...) have no id; a
normalising cache (Apollo's InMemoryCache, Relay's store) keeps them inside their entity. The
id's format is core/global_ids.py's; the root fields that read ids are graph/node_query.py's.
"""

from __future__ import annotations

import strawberry

from kueue_graphql.core.global_ids import encode_id
from kueue_graphql.graph.common import field


@strawberry.interface(
    description="An object with a global id: `node(id:)` finds it again (Relay's object "
    "identification). Ids are opaque: store and send them back, never build or parse them."
)
class Node:
    @field(
        description="Global, opaque and stable: the same object (by kind, namespace and name) "
        "has the same id, also after it was deleted and created again."
    )
    def id(self) -> strawberry.ID:
        raise NotImplementedError  # every implementing type resolves its own


def global_id(type_name: str, *keys: str) -> strawberry.ID:
    return strawberry.ID(encode_id(type_name, *keys))
