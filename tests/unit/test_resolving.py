"""graph/resolving.py: async resolvers run at once, up to their first real wait.

A small graphql-core schema with the shapes the service's resolvers have: a field whose
coroutine finishes without waiting, fields that share one DataLoader load (one Future awaited
by several fields before any Task holds it), a field that fails before its first wait and one
that fails after it, and a field cancelled while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import strawberry
from graphql import (
    GraphQLField,
    GraphQLInt,
    GraphQLList,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
    graphql,
)
from strawberry.dataloader import DataLoader

from kueue_graphql.graph.resolving import call_resolvers_directly, resolve_eagerly, wire_resolvers


def build(loader: DataLoader[int, int], waits: dict[str, Any]) -> GraphQLSchema:
    async def ready(_root: Any, _info: Any) -> str:
        return "ready"

    async def loaded(root: int, _info: Any) -> int:
        return await loader.load(root)

    async def fails_at_once(_root: Any, _info: Any) -> str:
        raise ValueError("refused before any wait")

    async def fails_later(root: int, _info: Any) -> str:
        await loader.load(root)
        raise ValueError("refused after a wait")

    async def waits_forever(_root: Any, _info: Any) -> str:
        waits["started"].set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            waits["cancelled"] = True
            raise
        return "never"

    async def items(_root: Any, _info: Any) -> list[int]:
        return [1, 2, 1]

    item = GraphQLObjectType(
        "Item",
        {
            "ready": GraphQLField(GraphQLString, resolve=ready),
            "loaded": GraphQLField(GraphQLInt, resolve=loaded),
            "again": GraphQLField(GraphQLInt, resolve=loaded),
            "failsAtOnce": GraphQLField(GraphQLString, resolve=fails_at_once),
            "failsLater": GraphQLField(GraphQLString, resolve=fails_later),
        },
    )
    query = GraphQLObjectType(
        "Query",
        {
            "items": GraphQLField(GraphQLList(item), resolve=items),
            "waitsForever": GraphQLField(GraphQLString, resolve=waits_forever),
        },
    )
    schema = GraphQLSchema(query)
    resolve_eagerly(schema)
    return schema


async def test_fields_resolve_as_before_with_one_batch_for_shared_loads() -> None:
    batches: list[list[int]] = []

    async def load(keys: list[int]) -> list[int]:
        batches.append(list(keys))
        await asyncio.sleep(0)
        return [key * 10 for key in keys]

    schema = build(DataLoader(load_fn=load), {})
    result = await graphql(
        schema, "{ items { ready loaded again failsAtOnce failsLater } }", root_value=None
    )
    assert result.data == {
        "items": [
            {"ready": "ready", "loaded": 10, "again": 10, "failsAtOnce": None, "failsLater": None},
            {"ready": "ready", "loaded": 20, "again": 20, "failsAtOnce": None, "failsLater": None},
            {"ready": "ready", "loaded": 10, "again": 10, "failsAtOnce": None, "failsLater": None},
        ]
    }
    # Six fields (three items x loaded/again, plus failsLater) awaited shared Futures: one batch.
    assert batches == [[1, 2]]
    errors = sorted((".".join(map(str, e.path or [])), e.message) for e in result.errors or [])
    assert errors == [
        ("items.0.failsAtOnce", "refused before any wait"),
        ("items.0.failsLater", "refused after a wait"),
        ("items.1.failsAtOnce", "refused before any wait"),
        ("items.1.failsLater", "refused after a wait"),
        ("items.2.failsAtOnce", "refused before any wait"),
        ("items.2.failsLater", "refused after a wait"),
    ]


async def test_a_field_finishing_without_a_wait_needs_no_task() -> None:
    created: list[Any] = []
    loop = asyncio.get_running_loop()
    factory = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coroutine: Any, **kwargs: Any) -> Any:
        created.append(coroutine)
        return asyncio.Task(coroutine, loop=loop, **kwargs)

    async def load(keys: list[int]) -> list[int]:
        return keys

    schema = build(DataLoader(load_fn=load), {})
    loop.set_task_factory(counting)
    try:
        result = await graphql(schema, "{ items { ready } }")
    finally:
        loop.set_task_factory(factory)
    assert result.errors is None
    assert result.data == {"items": [{"ready": "ready"}] * 3}
    assert created == []


async def test_a_field_cancelled_while_it_waits_is_cancelled() -> None:
    waits: dict[str, Any] = {"started": asyncio.Event(), "cancelled": False}

    async def load(keys: list[int]) -> list[int]:
        return keys

    schema = build(DataLoader(load_fn=load), waits)
    running = asyncio.ensure_future(graphql(schema, "{ waitsForever }"))
    await asyncio.wait_for(waits["started"].wait(), 5)
    await asyncio.sleep(0)
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert waits["cancelled"] is True


@strawberry.type
class Box:
    size: int

    @strawberry.field
    def doubled(self) -> int:
        return self.size * 2

    @strawberry.field
    async def context_size(self, info: strawberry.Info) -> int:
        return int(info.context["factor"]) * self.size

    @strawberry.field
    def scaled(self, by: int = 3) -> int:
        return self.size * by


@strawberry.type
class BoxQuery:
    @strawberry.field
    def boxes(self) -> list[Box]:
        return [Box(size=1), Box(size=2)]


async def test_resolvers_without_arguments_are_called_directly_with_the_same_answers() -> None:
    plain = strawberry.Schema(query=BoxQuery)
    wired = strawberry.Schema(query=BoxQuery)
    wire_resolvers(wired)
    box = wired._schema.type_map["Box"]
    strawberry_resolvers = strawberry.Schema(query=BoxQuery)._schema.type_map["Box"]
    # Argument-less resolvers (with and without info) no longer go through strawberry's layer;
    # the one with an argument still does (its argument is converted there), run eagerly.
    for name in ("doubled", "contextSize"):
        assert box.fields[name].resolve.__name__ in ("with_info", "without_info", "eager")
        assert box.fields[name].resolve is not strawberry_resolvers.fields[name].resolve
    document = "{ boxes { size doubled contextSize scaled scaledBy5: scaled(by: 5) } }"
    answers = [
        await schema.execute(document, context_value={"factor": 10}) for schema in (plain, wired)
    ]
    assert answers[0].errors is None
    assert answers[1].errors is None
    assert answers[1].data == answers[0].data
    assert answers[1].data == {
        "boxes": [
            {"size": 1, "doubled": 2, "contextSize": 10, "scaled": 3, "scaledBy5": 5},
            {"size": 2, "doubled": 4, "contextSize": 20, "scaled": 6, "scaledBy5": 10},
        ]
    }


def test_direct_calls_skip_fields_with_arguments() -> None:
    wired = strawberry.Schema(query=BoxQuery)
    before = wired._schema.type_map["Box"].fields["scaled"].resolve
    call_resolvers_directly(wired)
    assert wired._schema.type_map["Box"].fields["scaled"].resolve is before
    assert wired._schema.type_map["Box"].fields["doubled"].resolve.__name__ == "without_info"
    assert wired._schema.type_map["Box"].fields["contextSize"].resolve.__name__ == "with_info"
