"""Pure ASGI CSRF layer (cookie-to-header): a PATCH, POST, PUT or DELETE authenticated by the session
cookie must echo the session's token in `X-XSRF-TOKEN`, else 403.

Only a page of the service's own origin can read the `XSRF-TOKEN` cookie, so only it can echo the token;
a cross-site form or script gets the cookie sent but cannot produce the header. The token is bound to the
session server-side (a token of another session is invalid) and compared in constant time. Requests
authenticated by credentials in the same request are exempt (no ambient authority), and so is the form
login POST (it carries the password). Runs inside `AuthMiddleware`, which resolves the session.

The form login has its own guard against login CSRF (a foreign page logging the victim into the
attacker's account): `names_another_origin` refuses a login whose `Origin` or `Referer` names another
origin than the one the request was sent to. Clients that send neither (curl, scripts) pass.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from blockrepo.api.problem import problem_response
from blockrepo.auth.cookies import CSRF_HEADER
from blockrepo.auth.sessions import LiveSession

MODIFYING_METHODS = frozenset({"PATCH", "POST", "PUT", "DELETE"})
FORM_LOGIN_PATHS = frozenset({"/j_service_security_check", "/api/j_service_security_check"})


def csrf_violation(scope: Scope) -> tuple[str, str] | None:
    """(code, detail) if this request breaks the CSRF rule, else None."""
    if scope["method"] not in MODIFYING_METHODS:
        return None
    if scope["method"] == "POST" and scope["path"] in FORM_LOGIN_PATHS:
        return None
    state = scope.get("state", {})
    principal = state.get("principal")
    session: LiveSession | None = state.get("session")
    if principal is None or principal.via != "session" or session is None:
        return None
    sent = Headers(scope=scope).get(CSRF_HEADER)
    if not sent:
        return (
            "csrf_token_missing",
            "this request needs the X-XSRF-TOKEN header (the XSRF-TOKEN cookie's value)",
        )
    # Headers arrive as latin-1 text; compare bytes so that any character is allowed and timing is flat.
    if not hmac.compare_digest(sent.encode("latin-1"), session.csrf_token.encode("latin-1")):
        return "csrf_token_invalid", "the X-XSRF-TOKEN header does not match this session's token"
    return None


DEFAULT_PORTS = {"http": 80, "https": 443}


def _host_and_port(authority: str, scheme: str) -> tuple[str, int | None] | None:
    """(lower-case host, explicit port or None for the scheme's default); None if unreadable."""
    try:
        parts = urlsplit(f"//{authority}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return host, None if port == DEFAULT_PORTS.get(scheme) else port


def names_another_origin(headers: Headers, scheme: str) -> bool:
    """True if `Origin` or `Referer` names another origin than the `Host` this request was sent to.

    The scheme is not compared: behind a proxy that ends TLS the service sees http while the browser
    says https. Host and port are (a default port equals no port). `Origin: null` (sandboxed frames,
    some redirects) and unreadable values count as another origin."""
    own = _host_and_port(headers.get("host", ""), scheme)
    for name in ("origin", "referer"):
        value = headers.get(name)
        if not value:  # absent (curl, scripts) or empty: names no origin
            continue
        try:
            sent = urlsplit(value)
        except ValueError:
            return True
        if own is None or _host_and_port(sent.netloc, sent.scheme.lower()) != own:
            return True
    return False


class CsrfMiddleware:
    def __init__(self, app: ASGIApp, *, enabled: bool) -> None:
        self.app = app
        self.enabled = enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.enabled and scope["type"] == "http":
            violation = csrf_violation(scope)
            if violation is not None:
                code, detail = violation
                response = problem_response(
                    status=403,
                    title="Forbidden",
                    detail=detail,
                    code=code,
                    request_id=scope.get("state", {}).get("request_id"),
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
