"""Pure ASGI CSRF layer (cookie-to-header): a PATCH, POST, PUT or DELETE authenticated by the session
cookie must echo the session's token in `X-XSRF-TOKEN`, else 403.

Only a page of the service's own origin can read the `XSRF-TOKEN` cookie, so only it can echo the token;
a cross-site form or script gets the cookie sent but cannot produce the header. The token is bound to the
session server-side (a token of another session is invalid) and compared in constant time. Requests
authenticated by credentials in the same request are exempt (no ambient authority), and so is the form
login POST (it carries the password), except when a browser sends them on another origin's behalf
(`Sec-Fetch-Site` cross-site or same-site, or an `Origin` of another origin): a browser replays the Basic
credentials it remembers, so then the token is needed whatever authenticated the request. Runs inside
`AuthMiddleware`, which resolves the session.

The logins have their own guard against login CSRF (a foreign page logging the victim into the
attacker's account): `AuthMiddleware` refuses a form or Basic login that `sent_for_another_origin` (with
`Referer`) finds cross-origin, and serves any other request with credentials it finds so without a session
(none started, none ended). Clients that send none of these headers (curl, scripts) pass.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from blockrepo.auth.cookies import CSRF_HEADER
from blockrepo.auth.sessions import LiveSession
from blockrepo.problem import problem_response

MODIFYING_METHODS = frozenset({"PATCH", "POST", "PUT", "DELETE"})
FORM_LOGIN_PATHS = frozenset({"/j_service_security_check", "/api/j_service_security_check"})


# `Sec-Fetch-Site` (W3C Fetch Metadata) of a request a browser sends for a page of another origin; the
# others, "same-origin" and "none" (typed in, a bookmark), are the user's own.
FOREIGN_FETCH_SITES = frozenset({b"cross-site", b"same-site"})


def csrf_violation(scope: Scope) -> tuple[str, str] | None:
    """(code, detail) if this request breaks the CSRF rule, else None."""
    if scope["method"] not in MODIFYING_METHODS:
        return None
    if scope["method"] == "POST" and scope["path"] in FORM_LOGIN_PATHS:
        return None
    state = scope.get("state", {})
    principal = state.get("principal")
    if principal is None:
        return None
    if principal.via != "session" and not sent_for_another_origin(
        scope["headers"], scope["scheme"], referer=False
    ):
        return None  # credentials in the request itself, from a script: no ambient authority
    session: LiveSession | None = state.get("session")
    sent = Headers(scope=scope).get(CSRF_HEADER)
    if not sent:
        return (
            "csrf_token_missing",
            "this request needs the X-XSRF-TOKEN header (the XSRF-TOKEN cookie's value)",
        )
    # A request by credentials without a session of its own has no token it could match: a session
    # begun by this very request carries one the sender cannot know.
    expected = b"" if session is None else session.csrf_token.encode("latin-1")
    # Headers arrive as latin-1 text; compare bytes so that any character is allowed and timing is flat.
    if not hmac.compare_digest(sent.encode("latin-1"), expected):
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


def _is_another_origin(value: str, host: str, scheme: str) -> bool:
    """True if the URL or origin `value` names another origin than `host` (the request's `Host`)."""
    own = _host_and_port(host, scheme)
    try:
        sent = urlsplit(value)
    except ValueError:
        return True
    return own is None or _host_and_port(sent.netloc, sent.scheme.lower()) != own


def sent_for_another_origin(
    raw_headers: Iterable[tuple[bytes, bytes]], scheme: str, *, referer: bool
) -> bool:
    """True if a browser sent this request for a page of another origin: `Sec-Fetch-Site` says cross-site
    or same-site, or `Origin` (or, with `referer`, `Referer`) names another origin than the `Host`. The one
    cross-origin test of the service, over the raw ASGI headers in one pass (the first of repeated headers
    counts, as `Headers.get`; any foreign `Sec-Fetch-Site` does).

    Why `referer` is a choice (API.md rule 1.3 against 1.4): a login is mostly a GET navigation or a form
    POST, which carry no `Origin` in browsers without Fetch Metadata (Firefox before 70 sent none on form
    POSTs, Safari before 16.4 has no `Sec-Fetch-Site`), so the logins, and a request whose credentials
    would start a session, also read `Referer`. The write check does not: every browser sends `Origin` on
    the modifying requests it sends for a page, so `Referer` adds nothing there, and the contract names
    only `Sec-Fetch-Site` and `Origin` for it.

    The scheme is not compared: behind a proxy that ends TLS the service sees http while the browser
    says https. Host and port are (a default port equals no port). `Origin: null` (sandboxed frames,
    some redirects) and unreadable values count as another origin; absent or empty ones (curl, scripts)
    name none."""
    host: bytes | None = None
    origin: bytes | None = None
    referer_value: bytes | None = None
    for name, value in raw_headers:
        if name == b"sec-fetch-site":
            if value.lower() in FOREIGN_FETCH_SITES:
                return True
        elif name == b"origin":
            origin = value if origin is None else origin
        elif name == b"host":
            host = value if host is None else host
        elif referer and name == b"referer":
            referer_value = value if referer_value is None else referer_value
    if not origin and not referer_value:
        return False
    own = (host or b"").decode("latin-1")
    return any(
        value and _is_another_origin(value.decode("latin-1"), own, scheme)
        for value in (origin, referer_value)
    )


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
