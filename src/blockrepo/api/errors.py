"""Exception handlers: every error, from the project, FastAPI or Starlette, leaves as problem+json."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from blockrepo.databases import concurrent_write_refusal
from blockrepo.errors import BlockrepoError, ErrorItem
from blockrepo.problem import error_response, problem_response

log = logging.getLogger("blockrepo")

_STATUS_CODES = {
    400: ("Bad Request", "bad_request"),
    401: ("Unauthorized", "unauthenticated"),
    403: ("Forbidden", "forbidden"),
    404: ("Not Found", "not_found"),
    405: ("Method Not Allowed", "method_not_allowed"),
    406: ("Not Acceptable", "not_acceptable"),
    409: ("Conflict", "conflict"),
    413: ("Payload Too Large", "payload_too_large"),
    415: ("Unsupported Media Type", "unsupported_media_type"),
    422: ("Unprocessable Content", "validation_failed"),
    429: ("Too Many Requests", "too_many_requests"),
}


def request_id_of(request: Request) -> str | None:
    return request.scope.get("state", {}).get("request_id")  # type: ignore[no-any-return]


def _pointer(loc: tuple[Any, ...]) -> str:
    if not loc:
        return ""
    where, *rest = loc
    path = "/" + "/".join(str(part).replace("~", "~0").replace("/", "~1") for part in rest)
    if where == "body":
        return path if rest else ""
    return f"{where}:{'/'.join(str(p) for p in rest)}"


async def _blockrepo_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, BlockrepoError)
    return error_response(exc, request_id_of(request))


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    items = list(exc.errors())
    if any(item.get("type") == "json_invalid" for item in items):
        return problem_response(
            status=400,
            title="Bad Request",
            detail="malformed JSON",
            code="malformed_json",
            request_id=request_id_of(request),
        )
    errors = [
        ErrorItem(
            pointer=_pointer(tuple(item.get("loc", ()))), code=str(item.get("type")), message=item["msg"]
        )
        for item in items
    ]
    return problem_response(
        status=400,
        title="Validation Failed",
        detail="; ".join(f"{e.pointer or '/'}: {e.message}" for e in errors) or "invalid request",
        code="validation_failed",
        request_id=request_id_of(request),
        errors=errors,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    title, code = _STATUS_CODES.get(exc.status_code, ("Error", "error"))
    detail = exc.detail if isinstance(exc.detail, str) else title
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no resource at {request.url.path}"
    return problem_response(
        status=exc.status_code,
        title=title,
        detail=detail,
        code=code,
        request_id=request_id_of(request),
        headers=dict(exc.headers or {}),
    )


async def _database_error(request: Request, exc: Exception) -> Response:
    # A deadlock or lock timeout is the client's cue to retry, not a fault of the service; the request's
    # transaction was rolled back (its session is closed by the request context either way).
    assert isinstance(exc, DBAPIError)
    refusal = concurrent_write_refusal(exc)
    if refusal is None:
        raise exc  # a fault: on to the outermost handler, which logs it and answers 500
    log.warning("%s %s: %s", request.method, request.url.path, exc.orig)
    return error_response(refusal, request_id_of(request))


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    request_id = request_id_of(request)
    headers = {"X-Request-ID": request_id} if request_id else {}
    return problem_response(
        status=500,
        title="Internal Server Error",
        detail="the service failed; the request id identifies the log entry",
        code="internal_error",
        request_id=request_id,
        headers={**headers, "API-Version": "7.4"},
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(BlockrepoError, _blockrepo_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(DBAPIError, _database_error)
    app.add_exception_handler(Exception, _unexpected_error)
