"""The outermost layer: each request's id for the log, its access log line and its request metrics."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo import metrics
from blockrepo.api.middleware import request_id_for
from blockrepo.logs import REQUEST_ID

access_log = logging.getLogger("blockrepo.access")

# What a request answered before any route was chosen (401, 405, 413, 429 …) is counted under this
# template, so that no path a client invents becomes a label of its own.
UNROUTED = "(unrouted)"
# Set in `scope["state"]` by layers that answer without FastAPI's routing (the element lanes).
ROUTE_KEY = "route_template"
ELEMENT_ROUTE = "/api/element/{type}/{id}"
LOGIN_KEY = "login"


def route_template(scope: Scope) -> str:
    """The template of the route that answered (`/api/element/{type}/{id}`), not the path itself."""
    state = scope.get("state") or {}
    answered_by: str | None = state.get(ROUTE_KEY)
    if answered_by is not None:
        return answered_by
    route = scope.get("route")
    template = getattr(route, "path_format", None) if route is not None else None
    if not isinstance(template, str):
        return UNROUTED
    # A mount (static files, the Swagger UI's assets) serves every path below it.
    return template if hasattr(route, "endpoint") else f"{template}/{{path}}"


def acting_login(scope: Scope) -> str:
    state = scope.get("state") or {}
    login: str | None = state.get(LOGIN_KEY)
    if login is not None:
        return login
    principal = state.get("principal")
    return "-" if principal is None else str(principal.login)


class ObservedRequests:
    """Gives each request its id first (the caller's `X-Request-Id` when well-formed, else a new one, kept
    in `scope["state"]` for every layer after this one), then logs one access line and counts the request
    once it is answered."""

    def __init__(self, app: ASGIApp, *, log_access: bool) -> None:
        self.app = app
        self.log_access = log_access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        sent = next((value for name, value in scope["headers"] if name == b"x-request-id"), None)
        request_id = request_id_for(None if sent is None else sent.decode("latin-1"))
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500  # what the server answers when the application ends without an answer

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        token = REQUEST_ID.set(request_id)
        try:
            await self.app(scope, receive, observed_send)
        finally:
            seconds = time.perf_counter() - start
            template = route_template(scope)
            metrics.observe_request(scope["method"], template, status, seconds)
            if self.log_access and access_log.isEnabledFor(logging.INFO):
                _log_access(scope, template, status, seconds)
            REQUEST_ID.reset(token)


def _log_access(scope: Scope, template: str, status: int, seconds: float) -> None:
    method = scope["method"]
    login = acting_login(scope)
    milliseconds = round(seconds * 1000, 2)
    # Still percent-encoded: a path cannot break the line or forge another.
    path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    # Made and handled directly: `Logger.info` would also look up the caller's frame, which no line shows.
    record = access_log.makeRecord(
        access_log.name,
        logging.INFO,
        __file__,
        0,
        "%s %s %s %.2fms user=%s route=%s",
        (method, path, status, milliseconds, login, template),
        None,
        extra={
            "fields": {
                "method": method,
                "route": template,
                "path": path,
                "status": status,
                "duration_ms": milliseconds,
                "user": login,
                "client": (scope.get("client") or ("-",))[0],
            }
        },
    )
    access_log.handle(record)
