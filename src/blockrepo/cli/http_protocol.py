"""The HTTP protocol `blockrepo serve` runs: uvicorn's (httptools), with a deadline for every request head."""

from __future__ import annotations

import asyncio
import functools

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from blockrepo.settings import Settings


def _timeout_answer() -> bytes:
    body = orjson.dumps(
        {
            "type": "about:blank",
            "title": "Request Timeout",
            "status": 408,
            "detail": "the request line and headers did not arrive in time",
            "code": "request_timeout",
            "requestId": None,
            "errors": [],
        }
    )
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/problem+json\r\n"
        f"content-length: {len(body)}\r\nx-content-type-options: nosniff\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


_TIMEOUT_ANSWER = _timeout_answer()


@functools.cache
def head_timeout() -> int:
    """`header_read_timeout` of this process's settings: worker processes read the BLOCKREPO_* variables
    that `serve` exported, as the application they run does (uvicorn hands a protocol only its own config)."""
    return Settings().header_read_timeout


class HeadDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol with a timer armed whenever a request head is awaited (when the connection
    opens, and after a response when no other request's head has arrived) and cancelled when a head (request
    line and headers) is complete. A head that takes longer gets 408 and the connection is closed.

    uvicorn alone waits for a head for ever: its keep-alive timeout starts only after a response and any byte
    cancels it, so connections that sent half a request line stayed open for as long as their clients
    liked, each holding a socket and a slot of the process (issue 22). The body of a request is bounded by
    `body_read_timeout` in the application (`api.body_arrival`), which can answer it as problem+json; a
    body nobody reads (a request answered before it, 401 say) is covered here, since the timer is armed
    again once the answer is sent."""

    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._cancel_head_deadline()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A pipelined request whose head was read already is still waiting for its answer: no deadline.
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._arm_head_deadline()

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(head_timeout(), self._head_timed_out)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:  # never in the middle of another answer
            self.transport.write(_TIMEOUT_ANSWER)
        self.transport.close()
