"""Publishes each API version's description: `/api/{v}/openapi.json` and the interactive page `/api/{v}/`
whose Swagger UI assets are served from the installed `swagger-ui-py` package (no CDN).

Swagger UI 5 is needed to render OpenAPI 3.1 (version 4 rejects it), which is why the assets come from
`swagger-ui-py` rather than `swagger-ui-bundle` (Swagger UI 4.15).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute
from starlette.staticfiles import StaticFiles

from blockrepo.api.openapi import build_openapi
from blockrepo.api.versions import CURRENT_VERSION, ApiVersion
from blockrepo.settings import Settings

# The page loads only its own assets; the browser refuses anything else, a CDN included.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
INITIALIZER = "swagger-initializer.js"


def assets_path(version: ApiVersion) -> str:
    """Where the Swagger UI assets of `version`'s page are mounted (public, no data)."""
    return f"{version.base_path}/assets"


def swagger_ui_directory() -> Path:
    """The directory of Swagger UI's static files in the installed `swagger-ui-py` package."""
    spec = importlib.util.find_spec("swagger_ui")
    locations = list(spec.submodule_search_locations or []) if spec else []
    directory = Path(locations[0]) / "static" if locations else None
    if directory is None or not (directory / "swagger-ui-bundle.js").is_file():
        raise RuntimeError("Swagger UI assets not found: install the `swagger-ui-py` package")
    return directory


def _page(version: ApiVersion) -> str:
    title = f"{version.title} {version.number}"
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="assets/swagger-ui.css">
<link rel="icon" type="image/png" href="assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="assets/swagger-ui-bundle.js"></script>
<script src="assets/{INITIALIZER}"></script>
</body>
</html>
"""


def _initializer() -> str:
    # Relative URLs resolve against the page, so the page also works below a reverse proxy's prefix.
    config = {
        "url": "openapi.json",
        "dom_id": "#swagger-ui",
        "deepLinking": True,
        "docExpansion": "list",
        "filter": True,
        "displayRequestDuration": True,
        "showExtensions": True,
    }
    return f""""use strict";
window.addEventListener("load", function () {{
  var config = {json.dumps(config)};
  config.presets = [SwaggerUIBundle.presets.apis];
  config.layout = "BaseLayout";
  // A request authenticated by the session cookie alone must repeat the CSRF token in a header.
  config.requestInterceptor = function (request) {{
    var match = document.cookie.match(/(?:^|;\\s*)XSRF-TOKEN=([^;]*)/);
    if (match && !request.headers["X-XSRF-TOKEN"]) {{
      request.headers["X-XSRF-TOKEN"] = decodeURIComponent(match[1]);
    }}
    return request;
  }};
  window.ui = SwaggerUIBundle(config);
}});
"""


def publish_description(
    app: FastAPI, version: ApiVersion, routes: Sequence[BaseRoute], settings: Settings
) -> None:
    """Serve the description of `version` (built from `routes` on first use, with the limits of `settings`)
    and its interactive page.

    For the current version, also make `app.openapi()` return it and `/api/openapi.json` redirect to it."""

    @functools.cache
    def document() -> dict[str, Any]:
        return build_openapi(version, routes, settings)

    @functools.cache
    def document_bytes() -> bytes:
        return orjson.dumps(document())

    page = _page(version).encode()
    initializer = _initializer().encode()

    async def openapi_json() -> Response:
        return Response(document_bytes(), media_type="application/json")

    async def interactive_page() -> Response:
        return HTMLResponse(page, headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY})

    async def to_page() -> Response:
        return RedirectResponse(f"{version.base_path}/", status_code=308)

    async def initializer_js() -> Response:
        return Response(initializer, media_type="text/javascript")

    read = ["GET", "HEAD"]
    app.add_api_route(version.openapi_path, openapi_json, methods=read, include_in_schema=False)
    app.add_api_route(f"{version.base_path}/", interactive_page, methods=read, include_in_schema=False)
    app.add_api_route(version.base_path, to_page, methods=read, include_in_schema=False)
    # Registered before the mount, so it wins over the package's own (petstore) initializer.
    app.add_api_route(
        f"{assets_path(version)}/{INITIALIZER}", initializer_js, methods=read, include_in_schema=False
    )
    app.mount(
        assets_path(version),
        StaticFiles(directory=swagger_ui_directory()),
        name=f"api-assets-{version.segment}",
    )

    if version is CURRENT_VERSION:
        app.openapi = document  # type: ignore[method-assign]

        async def current_description() -> Response:
            return RedirectResponse(version.openapi_path, status_code=307)

        app.add_api_route("/api/openapi.json", current_description, methods=read, include_in_schema=False)
