"""Serves the web interface: the page at `/` and its assets under `/web/` (public; they hold no data)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles

STATIC_DIRECTORY = Path(__file__).parent / "static"
ASSETS_PREFIX = "/web/"
# The page is tiny and names its modules without version suffixes: browsers revalidate instead of caching
# an interface that no longer matches the server after an upgrade.
NO_STALE_CACHE = {"Cache-Control": "no-cache"}
# The interface only talks to its own origin, and loads nothing from elsewhere.
PAGE_HEADERS = {
    **NO_STALE_CACHE,
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
        "frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


class WebAssets(StaticFiles):
    """The interface's own JS, CSS and vendored files, revalidated on every load (see NO_STALE_CACHE); the
    page itself, when asked for as `/web/index.html`, with the same policy as at `/`."""

    def file_response(self, *args: object, **kwargs: object) -> Response:
        response = super().file_response(*args, **kwargs)  # type: ignore[arg-type]
        is_page = response.media_type is not None and response.media_type.startswith("text/html")
        response.headers.update(PAGE_HEADERS if is_page else NO_STALE_CACHE)
        return response


def mount_web_interface(app: FastAPI) -> None:
    async def page() -> Response:
        return FileResponse(STATIC_DIRECTORY / "index.html", headers=PAGE_HEADERS)

    app.add_api_route("/", page, methods=["GET", "HEAD"], include_in_schema=False)
    app.mount(ASSETS_PREFIX, WebAssets(directory=STATIC_DIRECTORY), name="web")
