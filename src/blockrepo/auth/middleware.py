"""Pure ASGI authentication layer: resolves the request's principal before any route runs.

It sets `scope["state"]["principal"]` (a `Principal` or None) and `scope["state"]["auth_failed"]` (credentials
were sent and were wrong). Requests to protected paths without a principal are answered 401 here.
"""

from __future__ import annotations

from anyio import to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from blockrepo.api.problem import problem_response
from blockrepo.auth.authenticator import Authenticator
from blockrepo.auth.basic import Principal, parse_basic

PUBLIC_PATHS = frozenset(
    {
        "/api/auth-scheme",
        "/j_service_security_check",
        "/api/j_service_security_check",
        "/j_service_logout",
        "/api/j_service_logout",
        "/api/openapi.json",
        "/api/7_4/openapi.json",
        "/api/7_4/",
        "/api/7_4",
    }
)
PUBLIC_PREFIXES = ("/api/7_4/assets/",)


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


class AuthMiddleware:
    def __init__(self, app: ASGIApp, *, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        headers = Headers(scope=scope)
        principal: Principal | None = None
        failed = False
        authorization = headers.get("authorization")
        if authorization:
            credentials = parse_basic(authorization)
            if credentials is None:
                failed = True
            else:
                principal = await to_thread.run_sync(self.authenticator.verify_password, *credentials)
                failed = principal is None
        state["principal"] = principal
        state["auth_failed"] = failed
        if principal is None and not is_public(scope["path"]):
            response = problem_response(
                status=401,
                title="Unauthorized",
                detail="wrong credentials" if failed else "authentication required",
                code="unauthenticated",
                request_id=state.get("request_id"),
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
