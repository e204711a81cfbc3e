"""Run each async resolver at once, in the field's own call, up to its first real wait.

Most fields of an object already loaded (from a list, the cache, or an earlier field) are async
only because loading might be needed: `await self.obj(info)` returns at once. graphql-core gives
every awaitable a field returns its own asyncio Task (gathered per object), and a Task costs far
more than the resolver: on the warm admission path they were the largest single cost of
execution. So each resolver's coroutine is started here, synchronously, as Python 3.12's eager
tasks do: one that finishes without waiting returns its value as a synchronous resolver would
(no Task, no event-loop round), and one that does wait (a DataLoader's batch, an API call) is
handed to graphql-core as an awaitable that carries on from where it stopped.

The order of work is unchanged where it matters: the coroutine runs in the caller's context, and
a DataLoader load registered in it is dispatched on the next loop iteration exactly as before,
after the sibling fields have registered theirs (one batch). An exception raised before the
first wait is raised by the field's resolver, which graphql-core reports on that field as it
does any other resolver error.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any

from graphql import GraphQLObjectType, GraphQLSchema

Resolver = Callable[..., Any]


class _Resumed:
    """The rest of a coroutine that stopped at its first wait, as an awaitable.

    `yielded` is what the coroutine's first step yielded (the Future it waits for); awaiting
    this object passes it to the awaiting Task, then relays every send, throw and close to the
    coroutine until it returns."""

    __slots__ = ("_coroutine", "_yielded")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self._coroutine = coroutine
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, yielded = self._coroutine, self._yielded
        if _is_future(yielded):
            # Handed to the awaiting Task now, as Future.__await__ would hand it.
            yielded._asyncio_future_blocking = True
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:
                try:
                    yielded = coroutine.throw(error)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = coroutine.send(sent)
                except StopIteration as done:
                    return done.value


def _eager(resolve: Resolver) -> Resolver:
    if getattr(resolve, "runs_eagerly", False):
        return resolve

    def eager(root: Any, info: Any, **kwargs: Any) -> Any:
        result = resolve(root, info, **kwargs)
        if type(result) is not _CoroutineType:
            return result
        try:
            yielded = result.send(None)
        except StopIteration as done:
            return done.value
        if _is_future(yielded):
            # What a Task does with a Future its coroutine yields: until it is handed to one,
            # another field may await the same Future (a DataLoader's shared load), and
            # Future.__await__ refuses a Future already marked as waited for.
            yielded._asyncio_future_blocking = False
        return _Resumed(result, yielded)

    eager.runs_eagerly = True  # type: ignore[attr-defined]
    return eager


async def _probe() -> None:
    return None


_probe_coroutine = _probe()
_CoroutineType = type(_probe_coroutine)
_probe_coroutine.close()


def _is_future(value: Any) -> bool:
    return getattr(value, "_asyncio_future_blocking", None) is not None


def resolve_eagerly(schema: GraphQLSchema) -> None:
    """Wrap the resolver of every field of every object type, once, when the schema is built.
    The subscription root's fields are left alone: their events come from `subscribe`, and
    each event's resolver only hands it on."""
    subscription = schema.subscription_type
    for named in schema.type_map.values():
        if (
            not isinstance(named, GraphQLObjectType)
            or named.name.startswith("__")
            or named is subscription
        ):
            continue
        for graphql_field in named.fields.values():
            if graphql_field.resolve is not None:
                graphql_field.resolve = _eager(graphql_field.resolve)
