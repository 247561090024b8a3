"""JSON responses serialized with orjson (element bodies are plain dicts, not Pydantic models)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from pydantic import BaseModel
from starlette.responses import Response


class JsonResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def aliased_json_response(content: dict[str, Any], key: str, *aliases: str) -> Response:
    """`content` as JSON with `content[key]` written again under each alias, right after it. The value is
    encoded once and its bytes spliced in under every name: it is most of the answer (a page of elements),
    and orjson would encode it again for each key that holds it."""
    shared = orjson.dumps(content[key], option=orjson.OPT_NON_STR_KEYS)
    members: list[bytes] = []
    for name, value in content.items():
        encoded = shared if name == key else orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        members.append(orjson.dumps(name) + b":" + encoded)
        if name == key:
            members += [orjson.dumps(alias) + b":" + shared for alias in aliases]
    return Response(b"{" + b",".join(members) + b"}", media_type=JsonResponse.media_type)


def model_response(
    model: BaseModel | Sequence[BaseModel], *, status_code: int = 200, headers: dict[str, str] | None = None
) -> JsonResponse:
    """Serialise Pydantic output (camelCase aliases) once, skipping FastAPI's second validation pass;
    the route's `response_model` still documents the shape."""
    if isinstance(model, BaseModel):
        content: Any = model.model_dump(mode="json", by_alias=True)
    else:
        content = [item.model_dump(mode="json", by_alias=True) for item in model]
    return JsonResponse(content, status_code=status_code, headers=headers)
