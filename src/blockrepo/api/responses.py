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
