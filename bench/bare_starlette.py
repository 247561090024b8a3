"""The ceiling of bench/hot_path.py: a bare Starlette app answering every GET with one constant JSON body.

Served by uvicorn as `bare_starlette:app` (with `--app-dir bench`); the body is read once at import from
the file named by `BARE_BODY_FILE` (bench/hot_path.py writes the element JSON the real server answers)."""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

BODY = Path(os.environ["BARE_BODY_FILE"]).read_bytes()


async def element(_request: Request) -> Response:
    return Response(BODY, media_type="application/json")


app = Starlette(routes=[Route("/api/element/{type}/{id}", element)])
