"""The application factory: `create_app(settings)` wires services, middleware, errors and routes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import RedirectResponse

from blockrepo import API_VERSION, __version__
from blockrepo.api import v7_4
from blockrepo.api.context import AppServices
from blockrepo.api.errors import install_error_handlers
from blockrepo.api.middleware import RequestContextMiddleware
from blockrepo.auth.csrf import CsrfMiddleware
from blockrepo.auth.middleware import AuthMiddleware
from blockrepo.settings import Settings


def create_app(settings: Settings) -> FastAPI:
    services = AppServices(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        services.dispose()

    app = FastAPI(
        title="blockrepo",
        version=API_VERSION,
        summary=f"blockrepo {__version__}: enterprise-architecture repository, LUY/iteraplan REST API 7.4",
        openapi_url=f"/api/{v7_4.PATH_SEGMENT}/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.services = services
    app.state.settings = settings
    install_error_handlers(app)
    app.include_router(v7_4.build_router())

    @app.get("/api/openapi.json", include_in_schema=False)
    def current_openapi() -> RedirectResponse:
        return RedirectResponse(f"/api/{v7_4.PATH_SEGMENT}/openapi.json", status_code=307)

    # Added innermost first: request context, then authentication (sessions), then CSRF, then the routes.
    app.add_middleware(CsrfMiddleware, enabled=settings.csrf_enabled)
    app.add_middleware(AuthMiddleware, backends=services.auth, settings=settings)
    app.add_middleware(
        RequestContextMiddleware,
        max_body_bytes=settings.max_body_bytes,
        import_max_body_bytes=settings.max_body_bytes * 20,
    )
    return app


def app_from_environment() -> FastAPI:
    """Factory for `uvicorn --factory` worker processes: settings come from BLOCKREPO_* variables."""
    return create_app(Settings())
