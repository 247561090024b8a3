"""Reading JSON request bodies by hand, for endpoints whose bodies are free-form element objects."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request

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
    """The parsed body; 400 if it does not parse or if any string in it holds NUL."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON: {exc}", code="malformed_json") from exc
    refuse_nul_in_json(raw, value)
    return value


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
    otherwise report it as a validation error), one holding NUL gets 400. Dependencies run after FastAPI
    has read and parsed the body (both cached on the request) and before it is validated."""
    if not is_json_media_type(request.headers.get("content-type")):
        raise UnsupportedMediaType("the body must be application/json")
    raw = await request.body()
    if raw:
        refuse_nul_in_json(raw, await request.json())
