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

from kueue_graphql.graph.resolving import resolve_eagerly


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
