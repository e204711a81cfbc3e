"""A subscriber that goes away while a message is on its way is not a server error.

strawberry logs every exception of a WebSocket operation task at ERROR with a traceback
(`strawberry.ws.task`, "Exception in worker task"), including the ones that only say the client
closed its socket while a result was being sent. With 200 subscribers that close at once that
is dozens of tracebacks for an ordinary event. This filter turns those into one DEBUG line and
leaves every other exception as strawberry logs it.
"""

from __future__ import annotations

import logging

from starlette.websockets import WebSocketDisconnect
from strawberry.http.exceptions import WebSocketDisconnected
from uvicorn.protocols.utils import ClientDisconnected

WS_TASK_LOGGER = "strawberry.ws.task"

# starlette's message when a send follows the close it already sent.
_SEND_AFTER_CLOSE = 'Cannot call "send" once a close message has been sent'


def _causes(error: BaseException | None) -> list[BaseException]:
    chain: list[BaseException] = []
    while error is not None and error not in chain and len(chain) < 16:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def is_client_gone(error: BaseException | None) -> bool:
    """Whether an exception (or one it was raised from) says the client closed the socket."""
    return any(
        isinstance(e, WebSocketDisconnected | WebSocketDisconnect | ClientDisconnected)
        or (isinstance(e, RuntimeError) and _SEND_AFTER_CLOSE in str(e))
        for e in _causes(error)
    )


class ClientGoneIsDebug(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.levelno >= logging.ERROR and is_client_gone(error):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            record.msg, record.args = (
                "a subscriber closed its socket during a send: %s",
                (type(error).__name__,),
            )
            record.exc_info, record.exc_text = None, None
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def install_ws_task_log_filter() -> None:
    """Adds the filter to strawberry's WebSocket task logger (once)."""
    logger = logging.getLogger(WS_TASK_LOGGER)
    if not any(isinstance(f, ClientGoneIsDebug) for f in logger.filters):
        logger.addFilter(ClientGoneIsDebug())
