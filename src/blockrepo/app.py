"""The application factory: `create_app(settings)` wires services, middleware, errors and routes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any

from fastapi import Depends, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from blockrepo import API_VERSION, __version__, interpreter, metrics
from blockrepo.api import health
from blockrepo.api.body_arrival import WholeBodyFirst
from blockrepo.api.context import AppServices
from blockrepo.api.docs import assets_path, publish_description
from blockrepo.api.errors import install_error_handlers
from blockrepo.api.headers import ResponseHeadersMiddleware
from blockrepo.api.known_parameters import refuse_unknown
from blockrepo.api.lanes.read import ElementReadLane
from blockrepo.api.lanes.write import ElementWriteLane
from blockrepo.api.methods import MethodsMiddleware
from blockrepo.api.middleware import IMPORT_PATHS, RequestContextMiddleware
from blockrepo.api.observed import ObservedRequests
from blockrepo.api.versions import API_VERSIONS
from blockrepo.auth.csrf import CsrfMiddleware
from blockrepo.auth.middleware import AuthMiddleware
from blockrepo.logs import flush_logs
from blockrepo.massdata.transfer.archimate.mapping import load_mapping
from blockrepo.settings import Settings
from blockrepo.web.challenge import ScriptChallengeMiddleware
from blockrepo.web.routes import ASSETS_PREFIX, mount_web_interface


class Application(FastAPI):
    """FastAPI with the element GET lane in front of everything: a GET by id that the lane can answer never
    enters FastAPI's own entry (its telemetry check), the middleware stack or the routing, each of which
    costs about as much as the lane's whole answer; any other request passes the lane unchanged. Between
    the two, `ResponseHeadersMiddleware` gives every other answer its caching and security headers (the
    lane adds the same to its own). With `lanes` off in the settings, neither lane is installed and every
    request takes the routed path.

    In front of the lane, with `trusted_proxies` configured, uvicorn's proxy-headers middleware takes the
    client's address (and scheme) from `X-Forwarded-For` (`-Proto`) of requests from those addresses only:
    login throttling counts per address, and a header any client can send must not choose that address.
    `blockrepo serve` turns uvicorn's own copy of it off (it trusts 127.0.0.1 and `FORWARDED_ALLOW_IPS`).
    Between the two, `ObservedRequests` gives each request its id and logs and counts it once answered."""

    def __init__(self, services: AppServices, **options: Any) -> None:
        super().__init__(**options)
        public = (ASSETS_PREFIX, *(f"{assets_path(version)}/" for version in API_VERSIONS))
        headed: ASGIApp = ResponseHeadersMiddleware(partial(FastAPI.__call__, self), public_prefixes=public)
        self.lane = ElementReadLane(headed, services=services) if services.settings.lanes else None
        proxies = [address.strip() for address in services.settings.trusted_proxies.split(",")]
        trusted = [address for address in proxies if address]
        self.entry: ASGIApp = ObservedRequests(
            headed if self.lane is None else self.lane, log_access=services.settings.access_log
        )
        if trusted:
            # uvicorn types ASGI apps with its own protocols; the entry is one, typed with Starlette's.
            self.entry = ProxyHeadersMiddleware(self.entry, trusted_hosts=trusted)  # type: ignore[arg-type,assignment]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.entry(scope, receive, send)


def create_app(settings: Settings) -> FastAPI:
    interpreter.configure(enabled=settings.interpreter_tuning)
    # A mapping file that cannot be read stops the start, rather than every ArchiMate request later.
    load_mapping(settings.archimate_mapping)
    services = AppServices(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        first = services.enter()
        delivery = (
            asyncio.get_running_loop().create_task(services.webhook_worker.run())
            if first and settings.webhook_delivery
            else None
        )
        try:
            yield
        finally:
            if delivery is not None:
                delivery.cancel()
                with suppress(asyncio.CancelledError):
                    await delivery
            await services.revision_watch.stop()
            if services.leave():
                services.dispose()
                metrics.worker_stopped(os.getpid())
            flush_logs()  # a worker stopped by SIGTERM ends without logging.shutdown

    app = Application(
        services,
        title="blockrepo",
        version=API_VERSION,
        summary=f"blockrepo {__version__}: enterprise-architecture repository, LUY/iteraplan REST API 7.4",
        openapi_url=None,  # each version publishes its own description (api/docs.py)
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.services = services
    app.state.settings = settings
    install_error_handlers(app)
    for version in API_VERSIONS:
        router = version.build_router()
        # Every operation of the API refuses query parameters it does not know (api/known_parameters.py).
        app.include_router(router, dependencies=[Depends(refuse_unknown)])
        publish_description(app, version, router.routes, settings)
    app.include_router(health.router)
    mount_web_interface(app)

    # Added innermost first, so a request passes them in the reverse order: request context, the web
    # interface's challenge, authentication (sessions), CSRF, OPTIONS and methods a path does not serve,
    # the whole body read (no route takes a lock before it has arrived), the element PUT/PATCH lane (a hot
    # path, answered without FastAPI's routing; with `lanes` on), then the routes. The element GET lane is
    # in front of them all (`Application`).
    if settings.lanes:
        app.add_middleware(ElementWriteLane, services=services)
    app.add_middleware(WholeBodyFirst, timeout=settings.body_read_timeout, streamed=IMPORT_PATHS)
    app.add_middleware(MethodsMiddleware)
    app.add_middleware(CsrfMiddleware, enabled=settings.csrf_enabled)
    app.add_middleware(AuthMiddleware, backends=services.auth, settings=settings)
    app.add_middleware(ScriptChallengeMiddleware)
    app.add_middleware(
        RequestContextMiddleware,
        max_body_bytes=settings.max_body_bytes,
        import_max_body_bytes=settings.max_body_bytes * 20,
    )
    return app


def app_from_environment() -> FastAPI:
    """Factory for `uvicorn --factory` worker processes: settings come from BLOCKREPO_* variables."""
    app = create_app(Settings())
    interpreter.settle_after_startup()
    return app
