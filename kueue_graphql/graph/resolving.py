"""How the schema's resolvers are called: directly, and each async one at once.

Two wirings, made once when the schema is built (`wire_resolvers`), for the cost of a field:

- **Direct calls.** strawberry wraps every resolver in a generic layer: it converts the field's
  arguments, runs field extensions, builds the resolver's keyword arguments by inspection and
  awaits the result in a coroutine of its own. A resolver with no GraphQL arguments, no field
  extension and no exception handler, that takes `self` (and perhaps `info`), needs none of
  it: it is called as `resolver(source, info=Info(...))`, which is what that layer ends up
  calling. Every other field keeps strawberry's resolver.

- **Eager async resolvers.** Most fields of an object already loaded (from a list, the cache,
  or an earlier field) are async only because loading might be needed: `await self.obj(info)`
  returns at once. graphql-core gives every awaitable a field returns its own asyncio Task
  (gathered per object), and a Task costs far more than the resolver: on the warm admission
  path they were the largest single cost of execution. So each resolver's coroutine is started
  here, synchronously, as Python 3.12's eager tasks do: one that finishes without waiting
  returns its value as a synchronous resolver would (no Task, no event-loop round), and one
  that does wait (a DataLoader's batch, an API call) is handed to graphql-core as an awaitable
  that carries on from where it stopped.

  The order of work is unchanged where it matters: the coroutine runs in the caller's context,
  and a DataLoader load registered in it is dispatched on the next loop iteration exactly as
  before, after the sibling fields have registered theirs (one batch). An exception raised
  before the first wait is raised by the field's resolver, which graphql-core reports on that
  field as it does any other resolver error. What is bound to the running Task (aiohttp's
  timeouts) must not be entered before a first wait: KubeClient sends each call in a Task of
  its own.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from types import CoroutineType
from typing import Any

import strawberry
from graphql import GraphQLObjectType, GraphQLSchema
from strawberry.types.field import StrawberryField

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
        if type(result) is not CoroutineType:
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


def _is_future(value: Any) -> bool:
    return getattr(value, "_asyncio_future_blocking", None) is not None


def _direct(schema: strawberry.Schema, field: StrawberryField) -> Resolver | None:
    """The resolver called without strawberry's generic layer, when nothing in it applies."""
    resolver = field.base_resolver
    if (
        resolver is None
        or field.arguments
        or field.extensions
        or resolver.self_parameter is None
        or resolver.root_parameter is not None
        or resolver.parent_parameter is not None
        or schema.schema_converter._get_field_exception_handlers(field)
    ):
        return None
    function = resolver.wrapped_func
    if isinstance(function, staticmethod | classmethod):
        return None
    info_parameter = resolver.info_parameter
    if info_parameter is None:

        def without_info(source: Any, _info: Any) -> Any:
            return function(source)

        return without_info
    info_name, info_class = info_parameter.name, schema.config.info_class

    def with_info(source: Any, info: Any) -> Any:
        return function(source, **{info_name: info_class(_raw_info=info, _field=field)})

    return with_info


def call_resolvers_directly(schema: strawberry.Schema) -> None:
    """Replace strawberry's generic resolver wrapper where nothing in it applies (`_direct`).
    The subscription root is left alone."""
    graphql_schema = schema._schema
    for named in graphql_schema.type_map.values():
        if (
            not isinstance(named, GraphQLObjectType)
            or named.name.startswith("__")
            or named is graphql_schema.subscription_type
        ):
            continue
        for graphql_field in named.fields.values():
            definition = (graphql_field.extensions or {}).get("strawberry-definition")
            if isinstance(definition, StrawberryField):
                direct = _direct(schema, definition)
                if direct is not None:
                    graphql_field.resolve = direct


def wire_resolvers(schema: strawberry.Schema) -> None:
    """Direct calls first, then every resolver (direct or not) run eagerly."""
    call_resolvers_directly(schema)
    resolve_eagerly(schema._schema)


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
