"""What a WebSocket message must be before a protocol handler sees it.

strawberry's handlers index into each message as the protocol says it should be (`message["type"]`,
`message["payload"]["query"]`), so a message of another shape (`[]`, `1`, `"x"`, `null`, an id
that is a list) raised TypeError inside them: an ERROR traceback per message and a socket
dropped without a close code, before any token was checked. Here a message is decoded with
bounded cost (http/json_input.py) and checked against its protocol's shape; what does not fit is
described in one sentence, which the handler sends as the close reason (4400).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kueue_graphql.core.errors import ErrorCode
from kueue_graphql.http.document_size import too_large
from kueue_graphql.http.json_input import JsonInputError, decode_json
from kueue_graphql.http.persisted import TrustedDocuments

# Operation ids are echoed in close reasons ("Subscriber for <id> already exists"), which
# WebSocket caps at 123 bytes; clients use UUIDs (36 characters) or counters.
MAX_OPERATION_ID_LENGTH = 64

# graphql-transport-ws and the legacy graphql-ws: the message types a client may send, and
# those that start an operation (with `id` and `payload.query`) or name one (`id`).
TRANSPORT_WS_TYPES = frozenset({"connection_init", "ping", "pong", "subscribe", "complete"})
LEGACY_WS_TYPES = frozenset({"connection_init", "connection_terminate", "start", "stop"})
STARTS_OPERATION = frozenset({"subscribe", "start"})
NAMES_OPERATION = frozenset({"complete", "stop"})


@dataclass(frozen=True)
class MessageLimits:
    max_bytes: int
    max_json_depth: int
    max_operation_name_length: int
    # `--trusted-documents`: only these documents may start an operation (None: any).
    trusted: TrustedDocuments | None = None


class MessageTooLargeError(ValueError):
    """Over the document size cap (closed with 1009, as the protocol layer does)."""


class MalformedMessageError(ValueError):
    """Not a message of the protocol (closed with 4400); the message says what is wrong."""


def decode_frame(text: str, limits: MessageLimits) -> object:
    """A text frame's JSON, within the size cap and the nesting limit; MessageTooLargeError or
    MalformedMessageError."""
    # Characters are at most bytes: a text longer than the cap in characters is over it.
    if len(text) > limits.max_bytes or len(text.encode()) > limits.max_bytes:
        raise MessageTooLargeError(too_large("message", limits.max_bytes))
    try:
        return decode_json(text, limits.max_json_depth, "the message")
    except JsonInputError as error:
        raise MalformedMessageError(str(error)) from error


def check_message(
    message: object, limits: MessageLimits, types: frozenset[str]
) -> dict[str, object]:
    """`message` when it has the shape of a message of `types`, else MalformedMessageError."""
    if not isinstance(message, dict):
        raise MalformedMessageError('a message must be a JSON object {"type": ...}')
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in types:
        raise MalformedMessageError(f"`type` must be one of {', '.join(sorted(types))}")
    if kind in STARTS_OPERATION or kind in NAMES_OPERATION:
        _check_id(message.get("id"))
    if kind in STARTS_OPERATION:
        _check_operation(message.get("payload"), limits)
    elif "payload" in message and not isinstance(message["payload"], dict | None):
        raise MalformedMessageError("`payload` must be an object")
    return message


def _check_id(op_id: object) -> None:
    if not isinstance(op_id, str) or not 0 < len(op_id) <= MAX_OPERATION_ID_LENGTH:
        raise MalformedMessageError(
            f"`id` must be a string of 1 to {MAX_OPERATION_ID_LENGTH} characters"
        )


def _check_operation(payload: object, limits: MessageLimits) -> None:
    if not isinstance(payload, Mapping):
        raise MalformedMessageError('`payload` must be an object {"query": "..."}')
    query = payload.get("query")
    if not isinstance(query, str):
        raise MalformedMessageError("`payload.query` must be a string")
    for name in ("variables", "extensions"):
        if not isinstance(payload.get(name), dict | None):
            raise MalformedMessageError(f"`payload.{name}` must be an object or null")
    if limits.trusted is not None and not limits.trusted.allows(query):
        raise MalformedMessageError(
            f"{ErrorCode.PERSISTED_QUERY_NOT_ALLOWED.value}: this server runs only the "
            "operator's trusted documents (--trusted-documents)"
        )
    operation_name = payload.get("operationName")
    if not isinstance(operation_name, str | None):
        raise MalformedMessageError("`payload.operationName` must be a string or null")
    if operation_name is not None and len(operation_name) > limits.max_operation_name_length:
        raise MalformedMessageError(
            f"operationName is longer than {limits.max_operation_name_length} characters"
        )
