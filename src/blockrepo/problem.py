"""Renders every error as application/problem+json (RFC 9457), for the api and auth layers alike."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from blockrepo.errors import BlockrepoError, ErrorItem

PROBLEM_MEDIA_TYPE = "application/problem+json"
WWW_AUTHENTICATE = 'Basic realm="blockrepo", charset="UTF-8"'


def problem_body(
    *,
    status: int,
    title: str,
    detail: str,
    code: str,
    request_id: str | None,
    errors: list[ErrorItem] | None = None,
    extra: dict[str, Any] | None = None,
) -> bytes:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "requestId": request_id,
        "errors": [e.as_dict() for e in errors or []],
    }
    if extra:
        body.update(extra)
    return orjson.dumps(body)


def problem_response(
    *,
    status: int,
    title: str,
    detail: str,
    code: str,
    request_id: str | None,
    errors: list[ErrorItem] | None = None,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    all_headers = dict(headers or {})
    if status == 401:
        all_headers.setdefault("WWW-Authenticate", WWW_AUTHENTICATE)
    return Response(
        problem_body(
            status=status,
            title=title,
            detail=detail,
            code=code,
            request_id=request_id,
            errors=errors,
            extra=extra,
        ),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=all_headers,
    )


def error_response(error: BlockrepoError, request_id: str | None) -> Response:
    return problem_response(
        status=error.status,
        title=error.title,
        detail=error.detail,
        code=error.instance_code,
        request_id=request_id,
        errors=error.errors,
        headers=error.headers,
        extra=error.extra,
    )
