"""Pure ASGI middleware around every request: request id, API version, NUL in the URL, and the body size
limit."""

from __future__ import annotations

import re
import uuid
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo import API_VERSION, SUPPORTED_API_VERSIONS
from blockrepo.nul_characters import nul_in_url
from blockrepo.problem import error_response, problem_response

REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
IMPORT_PATH = "/api/massdata/import"


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
        sent_id = headers.get("x-request-id")
        request_id = sent_id if sent_id and REQUEST_ID_PATTERN.match(sent_id) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        extra_headers = [
            (b"x-request-id", request_id.encode()),
            (b"api-version", API_VERSION.encode()),
        ]

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
        if asked_version is not None and asked_version.strip() not in SUPPORTED_API_VERSIONS:
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

        limit = self.import_max_body_bytes if scope["path"] == IMPORT_PATH else self.max_body_bytes
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
