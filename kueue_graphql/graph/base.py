"""What every Kubernetes object in the graph offers, and how it loads itself lazily.

An object in the graph starts as a reference (kind, namespace, name), sometimes with its JSON
already at hand (from a list). Fields that need more than the name load the object through the
request's DataLoader, so selecting only `name` costs no API call, and selecting many fields
costs one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self

import strawberry
from strawberry.types.base import get_object_definition

from kueue_graphql.graph.common import JSON, Info, as_json, field, reads
from kueue_graphql.graph.node import Node, global_id
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import Resource
from kueue_graphql.kueue.objects import metadata

if TYPE_CHECKING:
    from kueue_graphql.graph.event import Event


@strawberry.interface(description="Fields every Kubernetes object has.")
class KubeObject(Node):
    RESOURCE: ClassVar[Resource]

    ref_name: strawberry.Private[str]
    ref_namespace: strawberry.Private[str | None] = None
    loaded: strawberry.Private[JsonObject | None] = None

    @classmethod
    def from_json(cls, obj: JsonObject) -> Self:
        meta = metadata(obj)
        return cls(
            ref_name=str(meta.get("name", "")), ref_namespace=meta.get("namespace"), loaded=obj
        )

    @classmethod
    def ref(cls, name: str, namespace: str | None = None) -> Self:
        return cls(ref_name=name, ref_namespace=namespace if cls.RESOURCE.namespaced else None)

    async def obj(self, info: Info) -> JsonObject:
        if self.loaded is None:
            self.loaded = await reads(info).get(self.RESOURCE, self.ref_namespace, self.ref_name)
        return self.loaded

    @field(
        description="Global, opaque and stable: from the kind, namespace and name, so it "
        "survives a re-create under the same name. `node(id:)` finds the object again."
    )
    def id(self) -> strawberry.ID:
        type_name = get_object_definition(type(self), strict=True).name
        return global_id(type_name, self.ref_namespace or "", self.ref_name)

    @strawberry.field
    def name(self) -> str:
        return self.ref_name

    @strawberry.field
    def namespace(self) -> str | None:
        return self.ref_namespace

    @strawberry.field
    async def uid(self, info: Info) -> str | None:
        return str(metadata(await self.obj(info)).get("uid", ""))

    @strawberry.field
    async def labels(self, info: Info) -> JSON | None:
        return as_json(dict(metadata(await self.obj(info)).get("labels") or {}))

    @strawberry.field
    async def annotations(self, info: Info) -> JSON | None:
        return as_json(dict(metadata(await self.obj(info)).get("annotations") or {}))

    @strawberry.field
    async def creation_timestamp(self, info: Info) -> str | None:
        value: Any = metadata(await self.obj(info)).get("creationTimestamp")
        return str(value) if value is not None else None

    @field(description="The object's JSON as the API server returned it.")
    async def raw(self, info: Info) -> JSON | None:
        return as_json(await self.obj(info))

    @field(description="core/v1 Events about this object, oldest first.")
    async def events(
        self, info: Info
    ) -> list[Annotated[Event, strawberry.lazy("kueue_graphql.graph.event")]] | None:
        from kueue_graphql.graph.event import Event

        return [Event.from_json(e) for e in await reads(info).events_for(await self.obj(info))]
