"""Reading JSON request bodies by hand, for endpoints whose bodies are free-form element objects."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from blockrepo.errors import BadRequest, UnsupportedMediaType
from blockrepo.nul_characters import refuse_nul_in_json


def is_json_media_type(content_type: str | None) -> bool:
    if not content_type:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def parse_json(raw: bytes) -> Any:
    """The parsed body; 400 if it does not parse or if any string in it holds NUL. A number beyond the
    range of a double (1e400) is valid JSON that orjson refuses as a whole; it is read as infinity instead,
    so that the check of the value it is given to answers 400 naming its pointer (`/Costs/0`) rather than
    the body being called malformed."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        value = _beyond_double_range(raw, exc)
    refuse_nul_in_json(raw, value)
    return value


def _beyond_double_range(raw: bytes, error: orjson.JSONDecodeError) -> Any:
    """The body orjson refused, read by the standard library when a number beyond a double's range was
    the only reason; otherwise the 400 for malformed JSON."""
    if "infinity when parsed as double" in str(error):
        try:
            return json.loads(raw, parse_constant=_not_json)
        except (ValueError, RecursionError):
            pass
    raise BadRequest(f"malformed JSON: {error}", code="malformed_json") from error


def _not_json(literal: str) -> NoReturn:
    # The standard library reads NaN and Infinity, which are not JSON.
    raise ValueError(f"{literal} is not JSON")


async def read_json(request: Request) -> Any:
    """The parsed body; 415 if it is not declared as JSON, 400 if it does not parse."""
    if not is_json_media_type(request.headers.get("content-type")):
        raise UnsupportedMediaType("the body must be application/json")
    return parse_json(await request.body())


async def read_json_object(request: Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", code="validation_failed")
    return body


async def require_json_body(request: Request) -> None:
    """Route dependency for Pydantic-typed bodies: a body not declared as JSON gets 415 (FastAPI would
    otherwise report it as a validation error), one holding NUL gets 400, and one its model refuses gets
    FastAPI's own validation error. Dependencies run after FastAPI has read and parsed the body (both
    cached on the request) but before it validates it, and the route's other dependencies include the
    request context, which takes the write lock: the body is checked here so that no lock is taken for a
    body that will be refused (API.md section 9)."""
    if not is_json_media_type(request.headers.get("content-type")):
        raise UnsupportedMediaType("the body must be application/json")
    raw = await request.body()
    value = await request.json() if raw else None
    if raw:
        refuse_nul_in_json(raw, value)
    route = request.scope.get("route")
    if isinstance(route, APIRoute) and len(route.dependant.body_params) == 1:
        field = route.dependant.body_params[0]
        if raw or field.field_info.is_required():
            _, errors = field.validate(value, {}, loc=("body",))
            if errors:
                raise RequestValidationError(errors, body=value)
