"""uvicorn's WebSocket protocol, with a slow subscriber closed as one, SLOW_CONSUMER.

A subscriber that stops reading fills the socket's buffers, then uvicorn's (its write buffer
goes over the high-water mark and every send of the app waits). Before, two things could end
that, whichever came first: the subscription's send queue overflowing (graph/push.py), whose
SLOW_CONSUMER message could only be written once the client read again; and uvicorn's keep-alive,
whose ping the client does not answer: close 1011 "keepalive ping timeout", an abnormal close
that looks like a server fault. Here, a connection whose writes have waited
`send_timeout` seconds, or whose keep-alive ping goes unanswered while writes wait, is closed
with SLOW_CONSUMER_CLOSE_CODE and the reason "SLOW_CONSUMER: ...": the close frame goes behind
what is already buffered (a client that reads again gets those messages, then the close), the
app is told at once (its subscriptions end, their watches and slots freed, their sends fail
instead of waiting), and a client that never reads again is dropped `close_timeout` (10 s)
later. A peer that is merely silent (nothing waiting to be sent to it) still gets uvicorn's
keep-alive close.

uvicorn picks this protocol (its websockets sans-I/O one) for every WebSocket connection:
`max_size` (the document size cap) bounds each message after permessage-deflate, so a small
compressed frame cannot inflate past it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import OPEN

# A private-use code (4000-4999) that graphql-ws clients do not treat as fatal: they reconnect
# (with their back-off) and subscribe again, getting the current state first.
SLOW_CONSUMER_CLOSE_CODE = 4008


def slow_consumer_reason(seconds: float) -> str:
    return f"SLOW_CONSUMER: the client did not read what was sent for {seconds:g} s"


def with_slow_consumer_close(send_timeout: float) -> type[WebSocketsSansIOProtocol]:
    """uvicorn's sans-I/O WebSocket protocol closing slow consumers after `send_timeout` s."""

    class SlowConsumerClosingProtocol(WebSocketsSansIOProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.send_timer: asyncio.TimerHandle | None = None

        def pause_writing(self) -> None:
            super().pause_writing()
            if self.send_timer is None:
                self.send_timer = self.loop.call_later(send_timeout, self.close_slow_consumer)

        def resume_writing(self) -> None:
            super().resume_writing()
            self._stop_send_timer()

        def keepalive_timeout(self) -> None:
            if self.transport.get_write_buffer_size() > 0 or not self.writable.is_set():
                self.pong_timer = None
                self.close_slow_consumer()
                return
            super().keepalive_timeout()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_send_timer()
            super().connection_lost(exc)

        def _stop_send_timer(self) -> None:
            if self.send_timer is not None:
                self.send_timer.cancel()
                self.send_timer = None

        def close_slow_consumer(self) -> None:
            self.send_timer = None
            if self.close_sent or self.transport.is_closing() or self.conn.state is not OPEN:
                return
            self.stop_keepalive()
            reason = slow_consumer_reason(send_timeout)
            self.conn.send_close(SLOW_CONSUMER_CLOSE_CODE, reason)
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.close_sent = True
            self.queue.put_nowait(
                {"type": "websocket.disconnect", "code": SLOW_CONSUMER_CLOSE_CODE, "reason": reason}
            )
            # The app's waiting sends (and any later one) raise ClientDisconnected now.
            self.disconnected = True
            self.writable.set()
            if self.read_paused:
                self.read_paused = False
                self.transport.resume_reading()
            # The client's close reply closes the transport (handle_close); without one it is
            # dropped, buffered messages and all.
            self.close_timer = self.loop.call_later(self.close_timeout, self.transport.abort)

    return SlowConsumerClosingProtocol
