"""JSON responses serialized with orjson (element bodies are plain dicts, not Pydantic models)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


class JsonResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)
