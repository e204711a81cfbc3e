"""A deadline for a request's headers, per connection, at the protocol level.

uvicorn's keep-alive timeout only runs between requests: a connection that is opened and sends
nothing, or sends its headers one byte per second, is kept forever (slowloris), and the ASGI
app never hears of it because it only starts once the headers are complete. This wraps
uvicorn's HTTP/1.1 protocol (h11 or httptools, whichever it would use) so that the headers of
each request must be complete within `header_timeout` seconds of the connection opening (or,
on a kept-alive connection, of the previous response), else the server answers 408 and closes.
The body has its own deadline in the ASGI app (`BodySizeLimit`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kueue_graphql.http.middleware import error_body

_END_OF_HEADERS = b"\r\n\r\n"


def _timeout_response(seconds: float) -> bytes:
    body = error_body("BAD_REQUEST", f"the request headers did not arrive within {seconds:g} s")
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def with_header_deadline(base: type[asyncio.Protocol], seconds: float) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's `base` protocol class enforcing the header deadline."""

    class HeaderDeadlineProtocol(base):  # type: ignore[misc, valid-type]
        header_timeout = seconds

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._awaiting_headers = True
            self._header_tail = b""
            self._header_timer: asyncio.TimerHandle | None = None
            self._start_header_timer()

        def _start_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = asyncio.get_running_loop().call_later(
                    self.header_timeout, self._header_deadline_passed
                )

        def _stop_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def data_received(self, data: bytes) -> None:
            if self._awaiting_headers:
                self._start_header_timer()
                window = self._header_tail + data
                if _END_OF_HEADERS in window:
                    self._awaiting_headers = False
                    self._stop_header_timer()
                else:
                    self._header_tail = window[-(len(_END_OF_HEADERS) - 1) :]
            super().data_received(data)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # The next request on this connection: its clock starts with its first byte (the
            # keep-alive timeout covers the idle time before it).
            self._awaiting_headers = True
            self._header_tail = b""

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

        def _header_deadline_passed(self) -> None:
            self._header_timer = None
            cycle = getattr(self, "cycle", None)
            in_request = cycle is not None and not getattr(cycle, "response_complete", True)
            if not self._awaiting_headers or in_request or self.transport.is_closing():
                return
            self.transport.write(_timeout_response(self.header_timeout))
            self.transport.close()

    HeaderDeadlineProtocol.__name__ = f"HeaderDeadline{base.__name__}"
    return HeaderDeadlineProtocol
