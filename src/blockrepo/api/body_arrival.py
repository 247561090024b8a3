"""Pure ASGI middleware: a body arrives whole before the routes run; a stalled body gets 408."""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo.problem import problem_response

TIMEOUT_CODE = "request_timeout"


class BodyReadTimedOut(Exception):
    """Raised from `receive` when no part of a body arrived within the read timeout."""


def has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    """True if the raw headers announce a body (a non-zero `Content-Length`, or any `Transfer-Encoding`),
    in any of their occurrences. Shared with the read lane, which leaves a GET with a body to the routes."""
    for name, value in headers:
        if (name == b"content-length" and value != b"0") or name == b"transfer-encoding":
            return True
    return False


class WholeBodyFirst:
    """Reads a request's whole body before the application behind it runs, then hands it on in one message.

    It sits behind authentication, CSRF and the method checks (which answer without reading a body) and in
    front of the element write lane and the routes, so that no route can take the write lock or begin a
    transaction while a client is still sending: a body sent a byte at a time used to hold the repository's
    write lock, and with it every other user's write, for as long as the client liked (issue 22).

    Each wait for more of the body is bounded by `timeout` seconds, as nginx's `client_body_timeout`: a
    body that stalls that long is answered 408 `request_timeout` and the connection is closed. Paths in
    `streamed` (the import, which checks the caller's permission before it reads up to 200 MiB) are not
    read here but their reads are bounded the same way. The body size limit stays with
    `RequestContextMiddleware`, outside this one, whose `receive` refuses a body past the limit."""

    def __init__(self, app: ASGIApp, *, timeout: float, streamed: frozenset[str]) -> None:
        self.app = app
        self.timeout = timeout
        self.streamed = streamed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not has_body(scope["headers"]):
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        timed = self._timed(receive)
        try:
            if scope["path"] in self.streamed:
                await self.app(scope, timed, tracking_send)
                return
            first = await timed()
            if first["type"] != "http.request":
                return  # the client went away: nobody to answer
            if first.get("more_body", False):
                first = await self._rest(first, timed)
                if first["type"] != "http.request":
                    return
            await self.app(scope, _replaying(first, receive), tracking_send)
        except BodyReadTimedOut:
            if started:
                raise
            await problem_response(
                status=408,
                title="Request Timeout",
                detail=f"no part of the request body arrived for {self.timeout} s",
                code=TIMEOUT_CODE,
                request_id=scope.get("state", {}).get("request_id"),
                headers={"Connection": "close"},  # the rest of the body may still come: not a request
            )(scope, receive, send)

    @staticmethod
    async def _rest(first: Message, timed: Receive) -> Message:
        """The whole body as one message, or the disconnect that came before its end."""
        chunks = [first.get("body", b"")]
        while True:
            message = await timed()
            if message["type"] != "http.request":
                return message
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

    def _timed(self, receive: Receive) -> Receive:
        """`receive` with each wait for a part of the body bounded; after the body's end (a streaming
        response listens for the client's disconnect) it waits as long as it takes."""
        timeout = self.timeout
        complete = False

        async def timed_receive() -> Message:
            nonlocal complete
            if complete:
                return await receive()
            try:
                async with asyncio.timeout(timeout):
                    message = await receive()
            except TimeoutError:
                raise BodyReadTimedOut from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        return timed_receive


def _replaying(message: Message, receive: Receive) -> Receive:
    """`receive` that gives the body read already, then whatever comes after it (a disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return message

    return replay
