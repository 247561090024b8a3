"""Pure ASGI middleware around every request: request id, API version, NUL in the URL, and the body size
limit."""

from __future__ import annotations

import os
import re
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo import API_VERSION, SUPPORTED_API_VERSIONS
from blockrepo.nul_characters import nul_in_url
from blockrepo.problem import error_response, problem_response

REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
# Imports take bodies 20 times the limit.
IMPORT_PATHS = frozenset({"/api/massdata/import", "/api/exchange/archimate"})
_API_VERSION = API_VERSION.encode()


def request_id_for(sent: str | None) -> str:
    """The id a request goes by: the caller's `X-Request-Id` when it has the allowed shape, else a new one
    (the shape of `uuid4().hex`, for less)."""
    return sent if sent is not None and REQUEST_ID_PATTERN.match(sent) else os.urandom(16).hex()


def identity_headers(request_id: str) -> list[tuple[bytes, bytes]]:
    """The headers every answer carries: its request id and the API version that answers."""
    return [(b"x-request-id", request_id.encode()), (b"api-version", _API_VERSION)]


def version_supported(asked: str | None) -> bool:
    """Whether an `API-Version` header (None: not sent, the current version) names a served version."""
    return asked is None or asked.strip() in SUPPORTED_API_VERSIONS


class BodyTooLarge(Exception):
    """Raised from `receive` when a streamed body passes the limit."""


class RequestContextMiddleware:
    """Outermost layer: assigns the request id, checks API-Version, adds the common response headers,
    refuses NUL in the URL and stops bodies over the limit (by Content-Length up front, or while they
    stream in)."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, import_max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.import_max_body_bytes = import_max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        state = scope.setdefault("state", {})
        # Given by the outermost layer (api/observed.py) where it runs.
        request_id = state.get("request_id") or request_id_for(headers.get("x-request-id"))
        state["request_id"] = request_id
        extra_headers = identity_headers(request_id)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *(
                        (k, v)
                        for k, v in message.get("headers", [])
                        if k.lower() not in (b"x-request-id", b"api-version")
                    ),
                    *extra_headers,
                ]
            await send(message)

        asked_version = headers.get("api-version")
        if not version_supported(asked_version):
            response = problem_response(
                status=400,
                title="Unsupported API Version",
                detail=f"API-Version {asked_version!r} is not supported; supported: "
                + ", ".join(SUPPORTED_API_VERSIONS),
                code="unsupported_api_version",
                request_id=request_id,
                extra={"supportedVersions": list(SUPPORTED_API_VERSIONS)},
            )
            await response(scope, receive, send_with_headers)
            return

        # Every route's path and query parameters at once, before any of them reaches a database.
        nul = nul_in_url(scope["path"], scope["query_string"])
        if nul is not None:
            await error_response(nul, request_id)(scope, receive, send_with_headers)
            return

        limit = self.import_max_body_bytes if scope["path"] in IMPORT_PATHS else self.max_body_bytes
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._too_large(scope, receive, send_with_headers, request_id, limit)
            return

        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send_with_headers(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await self._too_large(scope, receive, send_with_headers, request_id, limit)

    async def _too_large(
        self, scope: Scope, receive: Receive, send: Send, request_id: str, limit: Any
    ) -> None:
        response = problem_response(
            status=413,
            title="Payload Too Large",
            detail=f"the request body is larger than {limit} bytes",
            code="payload_too_large",
            request_id=request_id,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)
