"""The WebSocket protocols' handlers (strawberry's), behind a gate for what clients send.

Every text frame is decoded with bounded cost (size cap, nesting limit) and checked against its
protocol's message shape before strawberry's handler sees it (http/ws_messages.py). What does
not fit closes the socket with a code and a reason, and costs one DEBUG line, never an ERROR
traceback:

- over the document size cap (`--max-body-bytes`): 1009 (normally refused earlier by uvicorn's
  protocol, with the same code, before the frame is even decompressed past the cap);
- not JSON, nested deeper than `--max-json-depth`, not an object, an unknown `type`, an
  operation without a string `id` (1-64 characters) or `payload.query`, variables that are not an
  object, an over-long operationName: 4400;
- more than MAX_MESSAGES_BEFORE_INIT messages (pings, pongs) before `connection_init`: 4429.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, Protocol, cast

from starlette.websockets import WebSocketDisconnect, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import NonTextMessageReceived
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import Message
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.subscriptions.protocols.graphql_ws.types import OperationMessage

from kueue_graphql.context import RequestContext
from kueue_graphql.http.document_size import MESSAGE_TOO_BIG_CLOSE_CODE
from kueue_graphql.http.ws_messages import (
    LEGACY_WS_TYPES,
    TRANSPORT_WS_TYPES,
    MalformedMessageError,
    MessageLimits,
    MessageTooLargeError,
    check_message,
    decode_frame,
)

log = logging.getLogger(__name__)

# graphql-transport-ws: 4400 "bad request"; 4429 "too many" (its code for a second
# connection_init, a client misbehaving before it is known).
BAD_REQUEST_CLOSE_CODE = 4400
TOO_MANY_MESSAGES_CLOSE_CODE = 4429
# A client needs none before connection_init (graphql-ws clients send their first ping after
# the ack); a few are tolerated. The init itself must come within the view's
# connection_init_wait_timeout, so this bounds what an unauthenticated socket can make the
# server answer.
MAX_MESSAGES_BEFORE_INIT = 10
# RFC 6455: a close frame's reason is at most 123 bytes.
MAX_CLOSE_REASON_BYTES = 123


class LimitedView(Protocol):
    message_limits: MessageLimits


@dataclass(frozen=True)
class RefusedFrame:
    """A frame refused while decoding: what the handler closes the socket with."""

    code: int
    reason: str


class BoundedWebSocketAdapter(ASGIWebSocketAdapter):
    """strawberry's ASGI adapter, whose frames are decoded within the limits: a frame that is
    not yields a RefusedFrame instead of raising inside the handler."""

    async def iter_json(
        self, *, ignore_parsing_errors: bool = False
    ) -> AsyncGenerator[object, None]:
        limits = cast(LimitedView, self.view).message_limits
        try:
            while self.ws.application_state != WebSocketState.DISCONNECTED:
                text = await self.ws.receive_text()
                decoded: object
                try:
                    decoded = decode_frame(text, limits)
                except MessageTooLargeError as error:
                    decoded = RefusedFrame(MESSAGE_TOO_BIG_CLOSE_CODE, str(error))
                except MalformedMessageError as error:
                    decoded = RefusedFrame(BAD_REQUEST_CLOSE_CODE, str(error))
                yield decoded
        except KeyError as error:
            raise NonTextMessageReceived from error
        except WebSocketDisconnect:
            pass

    async def close(self, code: int, reason: str) -> None:
        # strawberry puts texts of the client's into reasons (a syntax error quoting the
        # document); over 123 bytes the close frame could not be sent at all.
        encoded = reason.encode()[:MAX_CLOSE_REASON_BYTES]
        await super().close(code, encoded.decode(errors="ignore"))


class MessageGate:
    """One connection's check of each message before its handler acts on it."""

    def __init__(self, limits: MessageLimits, types: frozenset[str]) -> None:
        self.limits = limits
        self.types = types
        self.before_init = 0

    def refusal(self, message: object, *, initialised: bool) -> RefusedFrame | None:
        if isinstance(message, RefusedFrame):
            return message
        try:
            checked = check_message(message, self.limits, self.types)
        except MalformedMessageError as error:
            return RefusedFrame(BAD_REQUEST_CLOSE_CODE, str(error))
        if not initialised and checked["type"] != "connection_init":
            self.before_init += 1
            if self.before_init > MAX_MESSAGES_BEFORE_INIT:
                return RefusedFrame(
                    TOO_MANY_MESSAGES_CLOSE_CODE,
                    f"more than {MAX_MESSAGES_BEFORE_INIT} messages before connection_init",
                )
        return None


async def refuse(websocket: Any, refused: RefusedFrame) -> None:
    log.debug("WebSocket closed with %d: %s", refused.code, refused.reason)
    await websocket.close(code=refused.code, reason=refused.reason)


class TransportWSHandler(BaseGraphQLTransportWSHandler[RequestContext, None]):
    """graphql-transport-ws, each message through the gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limits = cast(LimitedView, self.view).message_limits
        self.gate = MessageGate(limits, TRANSPORT_WS_TYPES)

    async def handle_message(self, message: Message) -> None:
        refused = self.gate.refusal(message, initialised=self.connection_init_received)
        if refused is not None:
            await refuse(self.websocket, refused)
            return
        await super().handle_message(message)


class LegacyWSHandler(BaseGraphQLWSHandler[RequestContext, None]):
    """The legacy graphql-ws protocol, each message through the same gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limits = cast(LimitedView, self.view).message_limits
        self.gate = MessageGate(limits, LEGACY_WS_TYPES)

    async def handle_message(self, message: OperationMessage) -> None:
        refused = self.gate.refusal(message, initialised=self.connection_acknowledged)
        if refused is not None:
            await refuse(self.websocket, refused)
            return
        await super().handle_message(message)
